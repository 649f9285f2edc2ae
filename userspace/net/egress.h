/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Egress by domain name (docs/network.md): one session's proxy and
 * resolver. bpf/net.bpf.c sends the session's TCP connects to addresses
 * the resolver answered, and its DNS, to the two sockets made here on
 * 127.0.0.1; the proxy reads the name the tool asks for (TLS SNI, HTTP
 * Host, HTTP CONNECT), checks it against the rules, connects to the
 * original destination and splices. Every decision becomes a net.allow or
 * net.deny record in the session's stream through the net_emit program.
 *
 * Threads: one that accepts and receives queries, one per connection and
 * per query being forwarded. egress_stop() ends them all.
 */
#ifndef BPFBOX_EGRESS_H
#define BPFBOX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../policy/policy.h"

struct egress;
struct strv;
struct bpfbox_net_event;

/*
 * A secret the proxy holds (docs/network.md, "Secrets"): the session sees
 * only the placeholder; the proxy puts the value in place of it in the
 * headers of requests to the secret's hosts, in TLS it terminates.
 */
struct egress_secret {
	char name[65];
	char placeholder[128]; /* "bpfbox-secret-NAME-<32 hex>" */
	char token[33];	       /* its random part: found in any case, anywhere */
	char hosts[SECRET_MAX_HOSTS][254];
	size_t n_hosts;
	bool query;  /* also replaced in the request's query, URL-encoded */
	char *value; /* never logged, never in a record */
	size_t len;
};

struct egress_secrets {
	struct egress_secret *v;
	size_t n;
};

/*
 * The values of the policy's secrets (each "NAME@HOSTS" from this
 * process's variable NAME, "NAME=file:PATH@HOSTS" from the file, a final
 * line break dropped) and a random placeholder for each. -errno with err
 * naming the secret (never its value); nothing is kept on error.
 */
int egress_secrets_load(struct egress_secrets *out, const struct strv *specs, char *err,
			size_t size);
/* Wipes the values. */
void egress_secrets_free(struct egress_secrets *s);

struct egress_opts {
	uint64_t cgroup_id;	  /* the session's cgroup: keys its events */
	uint32_t session;	  /* the session's index in the BPF maps */
	const struct strv *allow; /* HOST[:PORT[-PORT]] rules (names and CIDRs) */
	const struct strv *deny;  /* exceptions, same form */
	/* "ADDR[:PORT]" of the upstream resolver; NULL: the first nameserver
	 * of /etc/resolv.conf. */
	const char *resolver;
	/* bpf/net.bpf.c: net_orig, net_resolved, net_dns_client, net_emit */
	int orig_fd, resolved_fd, dns_client_fd, emit_fd;
	/* Secrets: TLS to their hosts on 443 terminated with a per-session
	 * CA, made at start; NULL or none: no termination. */
	const struct egress_secrets *secrets;
	/*
	 * Without BPF (an unprivileged session without a daemon): the session's
	 * network namespace has no way out but this proxy, which its tools
	 * reach through HTTP(S)_PROXY (CONNECT, absolute URIs) and its resolver
	 * (127.0.0.1:53 in the namespace). Both sockets are made in the
	 * session's namespace and arrive on fds_sock (SCM_RIGHTS, the TCP
	 * listener first); every record goes to on_record (from the proxy's
	 * threads). The BPF fds above are unused.
	 */
	bool explicit_only;
	int fds_sock;
	uint16_t proxy_port; /* the listener's port in the namespace */
	void (*on_record)(void *arg, const struct bpfbox_net_event *ev);
	void *record_arg;
	/*
	 * --net-ask: a name no rule lists (and no net_deny rule covers) waits
	 * for ask(ask_arg, name, port, stop_fd), called on the proxy's threads
	 * (port 0: a query, any port; stop_fd readable: the proxy stops, deny
	 * at once); true adds the name for the rest of the session. NULL: such
	 * a name is refused.
	 */
	bool (*ask)(void *arg, const char *name, uint16_t port, int stop_fd);
	void *ask_arg;
	/*
	 * An adopted container's session (in_netns): the BPF redirect lands on
	 * 127.0.0.1 of the container's network namespace, netns_fd, so the
	 * proxy's listener, the resolver's socket and the sender check's
	 * sock_diag socket are made there; the proxy's own connections leave
	 * from ours. The listener's port is held on our 127.0.0.1 too, so
	 * that no two proxies share a port (net_orig keys by it).
	 */
	bool in_netns;
	int netns_fd;
};

/* Whether any rule of the list is a name (so the session needs a proxy). */
bool egress_has_names(const struct strv *rules);

/* Binds the two sockets and starts the threads. -errno, err filled. */
int egress_start(struct egress **out, const struct egress_opts *o, char *err, size_t size);
uint16_t egress_proxy_port(const struct egress *e);
uint16_t egress_dns_port(const struct egress *e);
/* The session CA's certificate (PEM) with secrets, else NULL. */
const char *egress_ca_pem(const struct egress *e);

/* A rule added to (or removed from) a running session; -EINVAL, -ENOENT. */
int egress_rule_add(struct egress *e, const char *rule, bool deny);
int egress_rule_remove(struct egress *e, const char *rule, bool deny);

/* Stops accepting, ends every connection and waits for the threads. */
void egress_stop(struct egress *e);

#endif
