// SPDX-License-Identifier: GPL-2.0
/*
 * The proxy's bytes (docs/network.md): both directions of a connection
 * through pipes with splice(2), no copy to user space, until both ends
 * closed or the connection idles; the bytes counted for the record.
 */
#include "egress_internal.h"

/* A bulk transfer gets a 1 MiB pipe: fewer wakeups per byte. Not at once:
 * most connections are small, and the pages cost setup time. */
#define GROW_AFTER (256 * 1024)

bool eg_step(struct dir *d, bool *broken)
{
	for (;;) {
		ssize_t n;

		if (!d->pending && !d->eof) {
			n = splice(d->src, NULL, d->pipe[1], NULL, 1 << 20,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				d->pending += n;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				d->eof = true;
			else if (errno == EAGAIN)
				break;
		}
		if (d->pending) {
			n = splice(d->pipe[0], NULL, d->dst, NULL, d->pending,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->pending -= n;
				*d->count += n;
				if (!d->grown && *d->count > GROW_AFTER) {
					fcntl(d->pipe[1], F_SETPIPE_SZ, 1 << 20);
					d->grown = true;
				}
			} else if (n < 0 && errno == EAGAIN) {
				break;
			} else if (n < 0 && errno != EINTR) {
				/* The reader is gone: both directions end. */
				*broken = true;
				return false;
			}
		}
		if (d->eof && !d->pending) {
			if (!d->keep_open)
				shutdown(d->dst, SHUT_WR);
			d->done = true;
			return false;
		}
	}
	return true;
}

/* Both directions through pipes until both ends closed; bytes counted. */
void eg_splice_both(struct egress *e, int a, int b, uint64_t *a2b, uint64_t *b2a)
{
	struct dir dirs[2] = {{.src = a, .dst = b, .pipe = {-1, -1}, .count = a2b},
			      {.src = b, .dst = a, .pipe = {-1, -1}, .count = b2a}};
	bool broken = false;
	int rc;

	if (pipe2(dirs[0].pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(dirs[1].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		goto out;
	fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
	while (!broken && (!dirs[0].done || !dirs[1].done)) {
		struct pollfd p[3];
		int np = 0;

		for (int i = 0; i < 2; i++) {
			struct dir *d = &dirs[i];

			if (d->done)
				continue;
			/* Read only into an empty pipe: a full one would spin. */
			if (d->pending)
				p[np++] = (struct pollfd){.fd = d->dst, .events = POLLOUT};
			else
				p[np++] = (struct pollfd){.fd = d->src, .events = POLLIN};
		}
		p[np++] = (struct pollfd){.fd = e->stop_pipe[0], .events = POLLIN};
		rc = poll(p, np, e->idle_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		/* No byte either way for the idle timeout: the connection ends. */
		if (rc <= 0 || p[np - 1].revents)
			break;
		for (int i = 0; i < 2 && !broken; i++)
			if (!dirs[i].done)
				eg_step(&dirs[i], &broken);
	}
out:
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (dirs[i].pipe[j] >= 0)
				close(dirs[i].pipe[j]);
}
