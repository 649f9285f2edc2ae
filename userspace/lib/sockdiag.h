/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which cgroup a UDP socket belongs to, asked of the kernel's socket
 * diagnostics (sock_diag, the udp_diag module): the egress resolver's
 * check of each query's sender (net/dns.c) and bpfbox status's probe of
 * whether that check can run (probe/probe.c).
 */
#ifndef BPFBOX_SOCKDIAG_H
#define BPFBOX_SOCKDIAG_H

#include <stdint.h>

/* A NETLINK_SOCK_DIAG socket whose answers wait at most 1 s; -errno. */
int sockdiag_open(void);

/*
 * The cgroup of the UDP socket a datagram from SRC:SPORT to DST:DPORT
 * (IPv4, network order) would be delivered to: 0 and *cg, or -errno
 * (-ENOENT: no such socket, or no udp_diag in the kernel; -EOPNOTSUPP: a
 * kernel whose answers have no cgroup). seq numbers the question; an
 * answer to an earlier one (its wait ended) is skipped. One question at a
 * time on a socket.
 */
int sockdiag_udp4_cgroup(int fd, uint32_t seq, uint32_t src, uint16_t sport, uint32_t dst,
			 uint16_t dport, uint64_t *cg);

#endif
