// SPDX-License-Identifier: GPL-2.0
/*
 * The network policy through cgroup BPF, attached once to the cgroup that
 * holds every session (so registering a session loads nothing). Where BPF
 * LSM cannot load, these programs enforce the connect allow-list and the
 * cloud metadata deny. Denied calls fail with EPERM and leave a record.
 */
#include "net.bpf.h"

#define AF_INET6    10
#define SOCK_RAW    3
#define SOCK_PACKET 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define LOOPBACK4   0x7f000001

/* Session id -> directories whose unix sockets it may connect to. */
BPFBOX_MAP(unix_allow, BPF_MAP_TYPE_HASH, BPFBOX_MAX_SESSIONS, 0, __u32, struct bpfbox_unix_allow);

/*
 * Egress by name (docs/network.md). The original destination of a socket
 * that connect4/6 or sendmsg4/6 sent to the session's proxy or resolver.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bpfbox_net_orig);
} net_sk SEC(".maps");

/* (tool's port, proxy port) -> original destination, read by the proxy. */
BPFBOX_MAP(net_orig, BPF_MAP_TYPE_LRU_HASH, 65536, 0, struct bpfbox_orig_key,
	   struct bpfbox_net_orig);

/* Session -> the last of its processes that sent DNS (the resolver's events). */
BPFBOX_MAP(net_dns_client, BPF_MAP_TYPE_HASH, BPFBOX_MAX_SESSIONS, 0, __u32,
	   struct bpfbox_net_orig);

/* Weak: kernels before 6.2 lack it, and the program that calls it is off there. */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

static __always_inline void report(struct bpfbox_session *s, __u16 family, const __u8 addr[16],
				   __u16 port, __u32 protocol)
{
	struct bpfbox_connect_event *e =
		net_deny_record(s, BPFBOX_LAYER_CGROUP_BPF, family, addr, port, protocol);

	if (e)
		bpf_ringbuf_submit(e, 0);
}

static __always_inline bool is_loopback4(const __u8 a[16])
{
	return a[10] == 0xff && a[11] == 0xff && a[12] == 127;
}

/* Keeps the original destination in the socket's storage and, unless it
 * is the proxy itself, points the call at 127.0.0.1:to. */
static __always_inline int redirect(struct bpf_sock_addr *ctx, struct bpfbox_session *s,
				    __u16 family, const __u8 addr[16], __u16 port, __u32 kind,
				    __u16 to)
{
	struct bpfbox_net_orig *o;
	__u64 id = bpf_get_current_pid_tgid();

	if (!ctx->sk)
		return 0;
	o = bpf_sk_storage_get(&net_sk, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return 0;
	__builtin_memcpy(o->addr, addr, 16);
	o->port = port;
	o->family = family;
	o->kind = kind;
	o->pid = id >> 32;
	o->tid = (__u32)id;
	o->uid = (__u32)bpf_get_current_uid_gid();
	o->session = s->id;
	bpf_get_current_comm(o->comm, sizeof(o->comm));
	if (kind == BPFBOX_ORIG_DNS)
		bpf_map_update_elem(&net_dns_client, &s->id, o, BPF_ANY);
	if (kind == BPFBOX_ORIG_EXPLICIT)
		return 1;
	if (family == 2) {
		ctx->user_ip4 = bpf_htonl(LOOPBACK4);
	} else {
		/* ::ffff:127.0.0.1: tcp_v6_connect hands a mapped address to IPv4. */
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0xffff);
		ctx->user_ip6[3] = bpf_htonl(LOOPBACK4);
	}
	ctx->user_port = bpf_htons(to);
	return 1;
}

/* 1 allows, 0 denies: the kernel turns 0 into EPERM for the caller. */
static __always_inline int decide(struct bpf_sock_addr *ctx, __u16 family, const __u8 addr[16],
				  __u16 port, __u32 protocol, bool datagram)
{
	struct bpfbox_session *s = current_session();
	bool allow;

	if (!s)
		return 1;
	if (net_allowed_by_rule(s->id, addr, port))
		return 1;
	/*
	 * Name rules: DNS goes to the session's resolver (IPv4: the kernel
	 * cannot send an IPv6 datagram to a mapped address), TCP to addresses
	 * that resolver answered goes to the proxy, which reads the name the
	 * tool asks for; the proxy itself is reachable for HTTP_PROXY.
	 */
	if ((s->flags & BPFBOX_SF_NET_PROXY) && s->proxy_port && s->dns_port) {
		if (protocol == IPPROTO_UDP && port == 53 && (family == 2 || !datagram))
			return redirect(ctx, s, family, addr, port, BPFBOX_ORIG_DNS, s->dns_port);
		if (protocol == IPPROTO_TCP && !datagram && is_loopback4(addr) && addr[15] == 1 &&
		    port == s->proxy_port)
			return redirect(ctx, s, family, addr, port, BPFBOX_ORIG_EXPLICIT, 0);
		if (protocol == IPPROTO_TCP && !datagram && !net_is_metadata(addr) &&
		    net_was_resolved(s->id, addr))
			return redirect(ctx, s, family, addr, port, BPFBOX_ORIG_PROXY,
					s->proxy_port);
	}
	/* The session's own loopback, in its own network namespace (ns_net.c). */
	if ((s->flags & BPFBOX_SF_NET_LOOPBACK) && net_is_local(addr) &&
	    bpf_get_netns_cookie(ctx) != bpf_get_netns_cookie(NULL))
		return 1;
	if (net_is_metadata(addr))
		allow = s->flags & BPFBOX_SF_ALLOW_META;
	else
		allow = !(s->flags & BPFBOX_SF_NET_DENY);
	if (!allow)
		report(s, family, addr, port, protocol);
	return allow;
}

static __always_inline int decide4(struct bpf_sock_addr *ctx, bool datagram)
{
	__u8 addr[16] = {[10] = 0xff, [11] = 0xff};
	__u32 ip = ctx->user_ip4;

	__builtin_memcpy(&addr[12], &ip, 4);
	return decide(ctx, 2, addr, bpf_ntohs(ctx->user_port), ctx->protocol, datagram);
}

static __always_inline int decide6(struct bpf_sock_addr *ctx, bool datagram)
{
	__u8 addr[16];
	__u32 w[4];

	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	__builtin_memcpy(addr, w, 16);
	return decide(ctx, AF_INET6, addr, bpf_ntohs(ctx->user_port), ctx->protocol, datagram);
}

/*
 * The address hooks, one line each: net_connect4/6, and net_sendmsg4/6
 * (a datagram names its destination per message). decide_: decide4 or
 * decide6, the context's IPv4 or IPv6 fields (the verifier allows each
 * only at its own hooks).
 */
#define NET_ADDR_PROG(hook, decide_, datagram)    \
	SEC("cgroup/" #hook)                      \
	int net_##hook(struct bpf_sock_addr *ctx) \
	{                                         \
		return decide_(ctx, datagram);    \
	}

NET_ADDR_PROG(connect4, decide4, false)
NET_ADDR_PROG(connect6, decide6, false)
NET_ADDR_PROG(sendmsg4, decide4, true)
NET_ADDR_PROG(sendmsg6, decide6, true)

/*
 * Replies of the resolver seem to come from the server the tool asked
 * (resolvers compare the source), and a redirected TCP peer is the
 * original destination for getpeername().
 */
static __always_inline void restore4(struct bpf_sock_addr *ctx, __u32 kind)
{
	struct bpfbox_net_orig *o;
	__u32 ip;

	if (!ctx->sk)
		return;
	o = bpf_sk_storage_get(&net_sk, ctx->sk, 0, 0);
	if (!o || o->kind != kind || ctx->user_ip4 != bpf_htonl(LOOPBACK4))
		return;
	if (o->addr[10] != 0xff || o->addr[11] != 0xff)
		return;
	__builtin_memcpy(&ip, &o->addr[12], 4);
	ctx->user_ip4 = ip;
	ctx->user_port = bpf_htons(o->port);
}

SEC("cgroup/recvmsg4")
int net_recvmsg4(struct bpf_sock_addr *ctx)
{
	restore4(ctx, BPFBOX_ORIG_DNS);
	return 1;
}

SEC("cgroup/getpeername4")
int net_getpeername4(struct bpf_sock_addr *ctx)
{
	restore4(ctx, BPFBOX_ORIG_PROXY);
	return 1;
}

SEC("cgroup/getpeername6")
int net_getpeername6(struct bpf_sock_addr *ctx)
{
	struct bpfbox_net_orig *o;
	__u32 w[4];

	if (!ctx->sk)
		return 1;
	o = bpf_sk_storage_get(&net_sk, ctx->sk, 0, 0);
	if (!o || o->kind != BPFBOX_ORIG_PROXY)
		return 1;
	__builtin_memcpy(w, o->addr, 16);
	ctx->user_ip6[0] = w[0];
	ctx->user_ip6[1] = w[1];
	ctx->user_ip6[2] = w[2];
	ctx->user_ip6[3] = w[3];
	ctx->user_port = bpf_htons(o->port);
	return 1;
}

/* Once the local port is chosen, the proxy's key for the original. */
SEC("sockops")
int net_sockops(struct bpf_sock_ops *ctx)
{
	struct bpfbox_orig_key key;
	struct bpfbox_net_orig *o;
	struct bpf_sock *sk;
	__u32 rp;

	if (ctx->op != BPF_SOCK_OPS_TCP_CONNECT_CB)
		return 1;
	sk = ctx->sk;
	if (!sk)
		return 1;
	o = bpf_sk_storage_get(&net_sk, sk, 0, 0);
	if (!o || (o->kind != BPFBOX_ORIG_PROXY && o->kind != BPFBOX_ORIG_EXPLICIT))
		return 1;
	rp = ctx->remote_port;
	key.client_port = ctx->local_port;
	key.proxy_port = rp > 0xffff ? bpf_ntohl(rp) : bpf_ntohs((__u16)rp);
	bpf_map_update_elem(&net_orig, &key, o, BPF_ANY);
	return 1;
}

/*
 * The proxy's decisions enter the session's stream here, with the
 * session's sequence numbers (run by BPF_PROG_TEST_RUN, attached nowhere).
 */
SEC("syscall")
int net_emit(struct bpfbox_net_emit *ctx)
{
	__u64 cgid = ctx->cgroup_id;
	struct bpfbox_session *s = bpf_map_lookup_elem(&sessions, &cgid);
	struct bpfbox_net_event *e;
	__u64 seq;

	if (!s)
		return -2;
	seq = __sync_fetch_and_add(&s->seq, 1);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(s);
		return -28;
	}
	__builtin_memcpy(e, &ctx->ev, sizeof(*e));
	e->hdr.type = BPFBOX_EV_NET;
	e->hdr.session = s->id;
	e->hdr.seq = seq;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Raw and packet sockets bypass addresses altogether: none in a session. */
SEC("cgroup/sock_create")
int net_sock_create(struct bpf_sock *ctx)
{
	struct bpfbox_session *s = current_session();
	__u8 none[16] = {};

	if (!s || (ctx->type != SOCK_RAW && ctx->type != SOCK_PACKET))
		return 1;
	report(s, ctx->family, none, 0, ctx->protocol);
	return 0;
}

/* Whether path (NUL-terminated, absolute) lies under one of the prefixes. */
static __always_inline bool unix_path_allowed(const struct bpfbox_unix_allow *a,
					      const char path[BPFBOX_UNIX_PATH_LEN])
{
	for (int i = 0; i < BPFBOX_UNIX_PREFIXES; i++) {
		__u32 len;
		bool match = true;
		char next;

		if ((__u32)i >= a->n)
			break;
		len = a->len[i];
		if (len == 0 || len >= BPFBOX_UNIX_PATH_LEN)
			continue;
		for (int j = 0; j < BPFBOX_UNIX_PATH_LEN; j++) {
			if ((__u32)j >= len)
				break;
			if (path[j] != a->prefix[i][j]) {
				match = false;
				break;
			}
		}
		/* A prefix matches a whole component: /ws allows /ws/x, not /wsx. */
		next = path[len];
		if (match && (next == '/' || next == '\0'))
			return true;
	}
	return false;
}

/*
 * Pathname unix sockets (kernel >= 6.7; switched off by probe elsewhere):
 * only under the session's own writable directories. Relative names are
 * refused because the working directory can be anywhere; abstract names
 * are left to Landlock's scope.
 */
SEC("cgroup/connect4") /* the agent sets the attach type: libbpf 1.1 lacks the name */
int net_connect_unix(struct bpf_sock_addr *ctx)
{
	struct bpfbox_session *s = current_session();
	struct bpf_sock_addr_kern *sa;
	struct bpfbox_unix_allow *a;
	struct bpfbox_connect_event *e;
	char path[BPFBOX_UNIX_PATH_LEN] = {};
	struct sockaddr_un *un;

	if (!s)
		return 1;
	sa = bpf_cast_to_kern_ctx(ctx);
	un = (struct sockaddr_un *)sa->uaddr;
	bpf_probe_read_kernel(path, sizeof(path) - 1, un->sun_path);
	if (path[0] == '\0')
		return 1;
	a = bpf_map_lookup_elem(&unix_allow, &s->id);
	if (path[0] == '/' && a && unix_path_allowed(a, path))
		return 1;
	e = net_deny_record(s, BPFBOX_LAYER_CGROUP_BPF, 1 /* AF_UNIX */, NULL, 0, 0);
	if (e) {
		__builtin_memcpy(e->unix_path, path, sizeof(e->unix_path));
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
