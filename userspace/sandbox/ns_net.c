// SPDX-License-Identifier: GPL-2.0
/*
 * The session's network namespace (ns.h, docs/network.md): under network
 * deny the child is cloned into a namespace of its own, whose only device
 * is a loopback that starts down. Brought up here, before any restriction
 * (the child still holds CAP_NET_ADMIN over the namespace: root's, or the
 * new user namespace's), it gives the session's servers and clients
 * 127.0.0.1 and ::1 of their own; nothing outside has a route in.
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ns.h"

int ns_loopback_up(void)
{
	struct ifreq ifr;
	int fd, r = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		r = -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (!r && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		r = -errno;
	close(fd);
	return r;
}
