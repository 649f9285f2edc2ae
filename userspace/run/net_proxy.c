// SPDX-License-Identifier: GPL-2.0
/* Egress by name without BPF: the proxy of the session's namespace (net_proxy.h). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_proxy.h"
#include "bpfbox/events.h"
#include "../net/egress.h"
#include "../sandbox/session.h"
#include "../policy/policy.h"
#include "../lib/log.h"

/* The proxy's records: the summary's denials (no audit stream without BPF). */
static void on_record(void *arg, const struct bpfbox_net_event *ev)
{
	struct run_proxy *x = arg;

	denials_shared_add(&x->denials, ev, sizeof(*ev));
}

/*
 * The listener's port in the namespace: any, since nothing else is there
 * yet; below the ephemeral range, so that no client's port is it, and
 * random, so that a session's own server rarely meets it.
 */
static uint16_t pick_port(void)
{
	uint16_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint16_t)getpid();
	return 20000 + v % 10000;
}

int run_proxy_start(struct run_proxy *x, struct session *s, const struct egress_secrets *secrets,
		    int ask_fd)
{
	const struct bpfbox_policy *p = s->policy;
	struct egress_opts o = {.session = 1,
				.allow = &p->net_allow,
				.deny = &p->net_deny,
				.resolver = p->net_resolver,
				.secrets = secrets,
				.orig_fd = -1,
				.resolved_fd = -1,
				.dns_client_fd = -1,
				.emit_fd = -1,
				.explicit_only = true,
				.proxy_port = pick_port(),
				.on_record = on_record,
				.record_arg = x};
	char err[256];
	int r;

	memset(x, 0, sizeof(*x));
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, x->sock) < 0)
		return log_error_errno(errno, "cannot make the egress proxy's socket pair");
	pthread_mutex_init(&x->denials.lock, NULL);
	x->started = true;
	r = session_net_by_proxy(s, x->sock[1], o.proxy_port);
	if (r < 0) {
		run_proxy_stop(x);
		return r;
	}
	o.fds_sock = x->sock[0];
	pthread_mutex_init(&x->ask_lock, NULL);
	x->ask.fd = ask_fd > 2 ? ask_fd : -1;
	if (p->net_ask && x->ask.fd >= 0) {
		net_asker_init(&x->asker, &x->ask_lock, &x->ask, s);
		o.ask = net_asker_ask;
		o.ask_arg = &x->asker;
	}
	r = egress_start(&x->egress, &o, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		s->layers.ns.proxy_port = 0;
		run_proxy_stop(x);
		return r;
	}
	s->side_denials = &x->denials;
	return 0;
}

const char *run_proxy_ca(const struct run_proxy *x)
{
	return x->egress ? egress_ca_pem(x->egress) : NULL;
}

void run_proxy_stop(struct run_proxy *x)
{
	if (!x->started)
		return;
	egress_stop(x->egress);
	close(x->sock[0]);
	close(x->sock[1]);
	pthread_mutex_destroy(&x->denials.lock);
	memset(x, 0, sizeof(*x));
}
