/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the network policy's two enforcers share: the cgroup programs
 * (bpf/net.bpf.c) and the BPF LSM (bpf/lsm.bpf.c). The agent hands the
 * LSM the net programs' maps (bpf_map__reuse_fd, or the same pins).
 */
#ifndef BPFBOX_NET_BPF_H
#define BPFBOX_NET_BPF_H

#include "common.bpf.h"

/* Allowed destinations per session: CIDR -> port range. */
BPFBOX_MAP(net_allow, BPF_MAP_TYPE_LPM_TRIE, 16384, BPF_F_NO_PREALLOC, struct bpfbox_net_key,
	   struct bpfbox_net_rule);

/* Addresses the session's egress resolver answered for allowed names. */
BPFBOX_MAP(net_resolved, BPF_MAP_TYPE_LRU_HASH, 65536, 0, struct bpfbox_resolved_key, __u64);

/* addr (IPv6, IPv4 mapped) and port are in an allow rule of the session. */
static __always_inline bool net_allowed_by_rule(__u32 session, const __u8 *addr, __u16 port)
{
	struct bpfbox_net_key key = {.prefixlen = 32 + 128, .session = session};
	struct bpfbox_net_rule *rule;

	__builtin_memcpy(key.addr, addr, 16);
	rule = bpf_map_lookup_elem(&net_allow, &key);
	return rule && port >= rule->port_lo && port <= rule->port_hi;
}

/*
 * ::ffff:169.254.169.254 or fd00:ec2::254, the cloud metadata service.
 * Spelled out: a static const array would land in .rodata.cst16, whose
 * BTF 6.1 rejects.
 */
static __always_inline bool net_is_metadata(const __u8 *a)
{
	for (int i = 4; i < 10; i++)
		if (a[i])
			return false;
	if (!a[0] && !a[1] && !a[2] && !a[3] && a[10] == 0xff && a[11] == 0xff)
		return a[12] == 169 && a[13] == 254 && a[14] == 169 && a[15] == 254;
	return a[0] == 0xfd && a[1] == 0x00 && a[2] == 0x0e && a[3] == 0xc2 && !a[10] && !a[11] &&
	       !a[12] && !a[13] && a[14] == 0x02 && a[15] == 0x54;
}

/*
 * 127.0.0.0/8, ::1, the unspecified addresses (a connect to them is local)
 * and their IPv4-mapped forms: the session's own under
 * BPFBOX_SF_NET_LOOPBACK.
 */
static __always_inline bool net_is_local(const __u8 *a)
{
	bool mapped = a[10] == 0xff && a[11] == 0xff, v6 = !a[10] && !a[11];

	for (int i = 0; i < 10; i++)
		if (a[i])
			return false;
	if (mapped)
		return a[12] == 127 || (!a[12] && !a[13] && !a[14] && !a[15]);
	return v6 && !a[12] && !a[13] && !a[14] && (a[15] == 0 || a[15] == 1);
}

/* The initial network namespace's inode number (PROC_NET_INIT_INO). */
#define NET_INIT_INO 0xEFFFFFF9U

/* The session's own loopback, in a network namespace of its own (ns_net.c);
 * the LSM hooks' check (net.bpf.c asks bpf_get_netns_cookie). */
static __always_inline bool own_loopback(struct bpfbox_session *s, struct socket *sock,
					 const __u8 *addr)
{
	return (s->flags & BPFBOX_SF_NET_LOOPBACK) && net_is_local(addr) &&
	       BPF_CORE_READ(sock, sk, __sk_common.skc_net.net, ns.inum) != NET_INIT_INO;
}

static __always_inline bool net_was_resolved(__u32 session, const __u8 *addr)
{
	struct bpfbox_resolved_key key = {.session = session};

	__builtin_memcpy(key.addr, addr, 16);
	return bpf_map_lookup_elem(&net_resolved, &key) != NULL;
}

/*
 * A connect record of a refusal by layer, not yet submitted: addr (16
 * bytes, IPv4 mapped; NULL for unix) as the record keeps it, IPv4 in its
 * first 4 bytes (events.h); unix_path empty.
 */
static __always_inline struct bpfbox_connect_event *net_deny_record(struct bpfbox_session *s,
								    __u8 layer, __u16 family,
								    const __u8 *addr, __u16 port,
								    __u32 protocol)
{
	struct bpfbox_connect_event *e = deny_reserve(s, sizeof(*e), BPFBOX_EV_CONNECT, layer);

	if (!e)
		return NULL;
	e->family = family;
	e->port = port;
	e->protocol = protocol;
	__builtin_memset(e->addr, 0, sizeof(e->addr));
	if (family == 2 /* AF_INET */ && addr)
		__builtin_memcpy(e->addr, addr + 12, 4);
	else if (addr)
		__builtin_memcpy(e->addr, addr, 16);
	e->unix_path[0] = '\0';
	return e;
}

#endif
