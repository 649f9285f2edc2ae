// SPDX-License-Identifier: GPL-2.0
/*
 * The network policy through cgroup BPF, attached once to the cgroup that
 * holds every session (so registering a session loads nothing). Where BPF
 * LSM cannot load, these programs enforce the connect allow-list and the
 * cloud metadata deny. Denied calls fail with EPERM and leave a record.
 */
#include "common.bpf.h"

#define AF_INET6 10
#define SOCK_RAW 3
#define SOCK_PACKET 10

/* Allowed destinations per session: CIDR -> port range. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bpfbox_net_key);
	__type(value, struct bpfbox_net_rule);
} net_allow SEC(".maps");

/* Session id -> directories whose unix sockets it may connect to. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFBOX_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct bpfbox_unix_allow);
} unix_allow SEC(".maps");

/* Weak: kernels before 6.2 lack it, and the program that calls it is off there. */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;


static __always_inline bool allowed_by_rule(__u32 session, const __u8 addr[16], __u16 port)
{
	struct bpfbox_net_key key = { .prefixlen = 32 + 128, .session = session };
	struct bpfbox_net_rule *rule;

	__builtin_memcpy(key.addr, addr, 16);
	rule = bpf_map_lookup_elem(&net_allow, &key);
	return rule && port >= rule->port_lo && port <= rule->port_hi;
}

static __always_inline bool is_metadata(const __u8 a[16])
{
	/* ::ffff:169.254.169.254 */
	if (a[10] == 0xff && a[11] == 0xff && a[12] == 169 && a[13] == 254 && a[14] == 169 &&
	    a[15] == 254)
		return true;
	/*
	 * fd00:ec2::254, spelled out: a static const array lands in
	 * .rodata.cst16, whose BTF the 6.1 kernel rejects.
	 */
	if (a[0] != 0xfd || a[1] != 0x00 || a[2] != 0x0e || a[3] != 0xc2 || a[14] != 0x02 ||
	    a[15] != 0x54)
		return false;
	for (int i = 4; i < 14; i++)
		if (a[i])
			return false;
	return true;
}

static __always_inline void report(struct bpfbox_session *s, __u16 family, const __u8 addr[16],
				   __u16 port, __u32 protocol)
{
	struct bpfbox_connect_event *e = event_reserve(s, sizeof(*e), BPFBOX_EV_CONNECT);

	if (!e)
		return;
	e->hdr.decision = BPFBOX_DENY;
	e->hdr.layer = BPFBOX_LAYER_CGROUP_BPF;
	e->hdr.err = -EPERM;
	e->family = family;
	e->port = port;
	e->protocol = protocol;
	/* The record keeps IPv4 in its first 4 bytes (events.h). */
	__builtin_memset(e->addr, 0, sizeof(e->addr));
	if (family == 2)
		__builtin_memcpy(e->addr, addr + 12, 4);
	else
		__builtin_memcpy(e->addr, addr, 16);
	e->unix_path[0] = '\0';
	bpf_ringbuf_submit(e, 0);
}

/* 1 allows, 0 denies: the kernel turns 0 into EPERM for the caller. */
static __always_inline int decide(__u16 family, const __u8 addr[16], __u16 port,
				  __u32 protocol)
{
	struct bpfbox_session *s = current_session();
	bool allow;

	if (!s)
		return 1;
	if (allowed_by_rule(s->id, addr, port))
		allow = true;
	else if (is_metadata(addr))
		allow = s->flags & BPFBOX_SF_ALLOW_META;
	else
		allow = !(s->flags & BPFBOX_SF_NET_DENY);
	if (!allow)
		report(s, family, addr, port, protocol);
	return allow;
}

static __always_inline int decide4(struct bpf_sock_addr *ctx)
{
	__u8 addr[16] = { [10] = 0xff, [11] = 0xff };
	__u32 ip = ctx->user_ip4;

	__builtin_memcpy(&addr[12], &ip, 4);
	return decide(2, addr, bpf_ntohs(ctx->user_port), ctx->protocol);
}

static __always_inline int decide6(struct bpf_sock_addr *ctx)
{
	__u8 addr[16];
	__u32 w[4];

	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	__builtin_memcpy(addr, w, 16);
	return decide(AF_INET6, addr, bpf_ntohs(ctx->user_port), ctx->protocol);
}

SEC("cgroup/connect4")
int net_connect4(struct bpf_sock_addr *ctx)
{
	return decide4(ctx);
}

SEC("cgroup/connect6")
int net_connect6(struct bpf_sock_addr *ctx)
{
	return decide6(ctx);
}

/* UDP and other datagrams name their destination per message. */
SEC("cgroup/sendmsg4")
int net_sendmsg4(struct bpf_sock_addr *ctx)
{
	return decide4(ctx);
}

SEC("cgroup/sendmsg6")
int net_sendmsg6(struct bpf_sock_addr *ctx)
{
	return decide6(ctx);
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
	e = event_reserve(s, sizeof(*e), BPFBOX_EV_CONNECT);
	if (e) {
		e->hdr.decision = BPFBOX_DENY;
		e->hdr.layer = BPFBOX_LAYER_CGROUP_BPF;
		e->hdr.err = -EPERM;
		e->family = 1;
		e->port = 0;
		e->protocol = 0;
		__builtin_memset(e->addr, 0, sizeof(e->addr));
		__builtin_memcpy(e->unix_path, path, sizeof(e->unix_path));
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
