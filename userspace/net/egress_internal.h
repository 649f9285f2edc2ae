/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of egress by name share (docs/network.md): egress.c (rules,
 * the verdict, the name cache, records, the threads, start and stop),
 * dns.c (the resolver: DNS on the wire, upstream, one thread a query) and
 * proxy.c (the TCP proxy: SNI, Host, CONNECT, splice).
 */
#ifndef BPFBOX_NET_EGRESS_INTERNAL_H
#define BPFBOX_NET_EGRESS_INTERNAL_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "egress.h"
#include "bpfbox/events.h"
#include "../lib/fdpass.h"
#include "../lib/log.h"
#include "../lib/tls.h"
#include "../lib/util.h"
#include "../policy/policy.h"

#define MAX_RULES     256
#define CACHE_SIZE    1024
#define MAX_OWN	      64
#define PEEK_MAX      16384
#define FIRST_DATA_MS 1000 /* a silent tool is judged by its address alone */
#define UPSTREAM_MS   5000
/* A session's open proxied connections and queries being forwarded: each
 * is a thread of bpfbox run or the daemon, outside the session's limits.
 * $BPFBOX_NET_MAX_CONNS and $BPFBOX_NET_IDLE_S change the first and the
 * idle timeout (docs/network.md). */
#define HTTP_RULES_UNREAD                                                                  \
	"an HTTP rule's host reached without TLS naming it (SNI): its requests cannot be " \
	"read"
/* A name under a wildcard HTTP rule the session CA signs no leaf for (tls_ca.c). */
#define HTTP_RULES_NO_LEAF \
	"an HTTP rule's host without a session certificate (past 32 hosts, or no DNS name)"
#define MAX_CONNS   64
#define MAX_QUERIES 32
#define IDLE_S	    600

enum { HOW_ADDR, HOW_SNI, HOW_HOST, HOW_CONNECT, HOW_QUERY, HOW_REQUEST };

struct http_head;

struct rule {
	bool name;	   /* else CIDR */
	char host[256];	   /* lower case, "*.x" for a wildcard */
	uint8_t addr[16];  /* mapped IPv4 */
	unsigned int plen; /* of the 128 bits */
	uint16_t lo, hi;
	char text[BPFBOX_NET_RULE_LEN];
	bool http; /* an HTTP rule: the requests it allows (methods, path) */
	char methods[NET_HTTP_METHODS_LEN];
	char path[NET_HTTP_PATH_LEN];
};

/*
 * tls_ca.c: the session CA and a leaf for each host of a secret or an HTTP
 * rule; a name under a wildcard HTTP rule (wild) gets its own on its first
 * connection, under lock, within the same MAX_LEAVES.
 */
#define MAX_LEAVES 32
struct term {
	gnutls_x509_privkey_t ca_key, leaf_key;
	gnutls_x509_crt_t ca;
	char *ca_pem;
	gnutls_certificate_credentials_t leaf[MAX_LEAVES], upstream;
	gnutls_x509_crt_t leaf_crt[MAX_LEAVES];
	char leaf_host[MAX_LEAVES][254];
	size_t n_leaves;
	char wild[MAX_LEAVES][254]; /* "*.example.com" */
	size_t n_wild;
	pthread_mutex_t lock; /* leaves made while the proxy runs */
};

struct cached {
	char name[BPFBOX_NET_NAME_LEN];
	uint8_t addr[16];
};

struct egress {
	struct egress_opts o;
	int tcp_fd, udp_fd, diag_fd, stop_pipe[2];
	int hold_fd; /* in_netns: the proxy's port held on our 127.0.0.1 */
	uint16_t tcp_port, udp_port;
	uint32_t diag_seq; /* of the main thread's sock_diag questions */
	uint64_t foreign;  /* datagrams from outside the session, dropped */
	struct sockaddr_storage upstream;
	socklen_t upstream_len;
	pthread_t main;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned int active;	     /* worker threads alive */
	unsigned int conns, queries; /* of them: connections, queries */
	unsigned int max_conns;
	int idle_ms;		   /* a connection with no byte either way for so long ends */
	uint64_t refused, dropped; /* connections over the cap, queries over theirs */
	struct rule allow[MAX_RULES], deny[MAX_RULES];
	size_t n_allow, n_deny;
	struct cached cache[CACHE_SIZE];
	size_t cache_next;
	uint8_t own[MAX_OWN][16];
	size_t n_own;
	struct term term; /* with secrets */
	/* --net-ask: one question at a time; the names the runtime refused, not asked again. */
	pthread_mutex_t ask_lock;
	char asked_no[32][BPFBOX_NET_RULE_LEN];
	unsigned int n_asked_no;
	struct egress_secrets secrets; /* o.secrets points here: the proxy's own copy */
};

struct query {
	struct egress *e;
	struct sockaddr_storage from;
	socklen_t fromlen;
	size_t len;
	uint8_t buf[1500];
};

struct conn {
	struct egress *e;
	int fd, up;
	struct bpfbox_net_orig o;
	bool have_orig;
};

/* egress.c: addresses, the verdict, the name cache, records, threads. */
void eg_map4(uint8_t out[16], const void *v4);
bool eg_is_mapped(const uint8_t a[16]);
void eg_addr_str(const uint8_t a[16], char *buf, size_t size);
/* An address no name may reach: the host's own, loopback, metadata. */
bool eg_forbidden(const struct egress *e, const uint8_t a[16]);
/* The verdict for a name (or an address) and port; rule: the rule that decided. */
bool eg_judge(struct egress *e, const char *name, const uint8_t *addr, uint16_t port, bool any_port,
	      char rule[BPFBOX_NET_RULE_LEN]);
/*
 * eg_judge for a name, and with --net-ask for one no rule decided, the
 * runtime's answer: approved, the name is added (all ports for a query,
 * any_port) and rule names it.
 */
bool eg_judge_ask(struct egress *e, const char *name, uint16_t port, bool any_port,
		  char rule[BPFBOX_NET_RULE_LEN]);
/* rules.c: the session's allow and deny rules in e; -errno and err naming the first bad one. */
int eg_rules_add(struct egress *e, const struct egress_opts *o, char *err, size_t size);
/*
 * Whether a request (method, path) to host:port is allowed: by a rule
 * without a request part for host:port, or by an HTTP rule that matches
 * it. rule gets the deciding rule; false: why says why not.
 */
bool eg_request_ok(struct egress *e, const char *host, uint16_t port, const struct http_head *h,
		   char rule[BPFBOX_NET_RULE_LEN], char *why, size_t size);
/*
 * Whether host:port is allowed by HTTP rules alone: its connections must be
 * terminated, each request read; one the proxy cannot read is refused.
 */
bool eg_http_judged(struct egress *e, const char *host, uint16_t port);
/* The hosts of the HTTP rules (each once) into hosts: how many (at most max). */
size_t eg_http_hosts(const struct egress *e, char hosts[][254], size_t max);
/* A literal address as a proxy request names it (10.1.2.3, [2001:db8::1]), mapped. */
bool eg_literal_addr(const char *name, uint8_t out[16]);
void eg_cache_put(struct egress *e, const char *name, const uint8_t addr[16]);
/* The allowed names of a hosts file (/etc/hosts), cached with their addresses. */
void eg_hosts_load(struct egress *e, const char *path);
bool eg_cache_has(struct egress *e, const char *name, const uint8_t addr[16], char *out,
		  size_t size);
/* One net.allow / net.deny record. */
void eg_emit(struct egress *e, const struct bpfbox_net_orig *o, bool allow, int kind, int how,
	     const char *name, const uint8_t addr[16], uint16_t port, const char *rule,
	     const char *reason, uint64_t out_bytes, uint64_t in_bytes);
/* One request of a terminated connection (net.request). */
struct eg_request {
	char method[16];
	char path[BPFBOX_NET_PATH_LEN];
	uint16_t status;	      /* 0: none seen */
	uint64_t bytes_out, bytes_in; /* the request's and its answer's */
	char rule[BPFBOX_NET_RULE_LEN];
	char reason[BPFBOX_NET_RULE_LEN];
};
void eg_emit_request(struct egress *e, const struct bpfbox_net_orig *o, bool allow,
		     const char *name, const uint8_t addr[16], uint16_t port,
		     const struct eg_request *q);
/* A worker thread ends: a connection's (conn) or a query's. */
void eg_worker_done(struct egress *e, bool conn);

/* dns.c */
int eg_resolve(struct egress *e, const char *name, uint8_t out[][16], size_t max, size_t *n);
void *eg_query_thread(void *arg); /* a struct query, freed */
/* The upstream resolver: ADDR[:PORT], or the first nameserver of resolv.conf. */
int eg_upstream_parse(struct egress *e, const char *spec, char *err, size_t size);
/* Whether a datagram from there was sent by a socket of the session. */
bool eg_query_from_session(struct egress *e, const struct sockaddr_storage *from);
/* At the start: whether sock_diag finds the resolver's socket and its cgroup; -errno and err. */
int eg_diag_check(struct egress *e, char *err, size_t size);

/*
 * One direction of a connection through a pipe: socket -> pipe when the
 * pipe is empty, pipe -> socket while it holds bytes (proxy.c).
 */
struct dir {
	int src, dst, pipe[2];
	size_t pending;
	bool eof, done, grown;
	bool keep_open; /* no shutdown of dst at the end: a 403 follows */
	uint64_t *count;
};

/* http.c: plain HTTP, each request of a connection framed and judged. */
struct http_head {
	char host[BPFBOX_NET_NAME_LEN];	  /* the Host header's name, "" without */
	char target[BPFBOX_NET_NAME_LEN]; /* an absolute-form target's host, or "" */
	uint16_t target_port;
	char method[16];
	char path[NET_HTTP_PATH_LEN]; /* the target's path, without query or fragment */
	bool path_bad; /* too long, or dot segments or encoded separators: no HTTP rule matches */
	bool connect, chunked, has_length;
	uint64_t length;
};

/*
 * The last bytes of a flow (a connection's, a stream's): a placeholder cut
 * between two reads is found across the cut (eg_secret_in_flow). A
 * placeholder's token is 32 bytes: 31 are kept.
 */
#define EG_TAIL 31
struct eg_tail {
	uint8_t b[EG_TAIL];
	size_t len;
};

/* The client's bytes of a relay: buf[0, ok) may go upstream as they are. */
struct http_frame {
	int st;
	uint64_t left;
	size_t len, ok;
	struct eg_tail tail; /* of the bytes read so far */
	uint8_t buf[PEEK_MAX];
};

enum { HTTP_MORE, HTTP_HEAD, HTTP_BAD };

/* A request's verdict; false: why says why not (and the record is made). */
typedef bool (*http_judge_fn)(struct conn *c, const struct http_head *h, void *arg, char *why,
			      size_t size);

bool eg_http_method(const uint8_t *p, size_t len);
/* The Host header's name (no port) of a request head; 1, 0 none, -1 incomplete. */
int eg_http_host(const uint8_t *p, size_t len, char *out, size_t size);
/* The tool's answer to a refused request: 403 naming the rule to add, or
 * 400 (name NULL) for one that cannot be framed. */
void eg_send_403(int fd, const char *name, uint16_t port, const char *why);
int eg_http_head(const uint8_t *p, size_t len, struct http_head *h, const char **why);
int eg_http_advance(struct http_frame *f, struct http_head *h, size_t *head_len, const char **why);
void eg_http_body(struct http_frame *f, const struct http_head *h);
/*
 * c->fd's requests to c->up through f, each judged, c->up's bytes spliced
 * back, until the server ends or the connection idles: 0, or -EACCES (a
 * request refused) or -EPROTO (not framable), why filled.
 */
/* Reads one request head (consumed, NUL-ended) into buf; its length or -1. */
ssize_t eg_http_read_head(struct egress *e, int fd, char *buf, size_t size);
int eg_relay_http(struct conn *c, struct http_frame *f, http_judge_fn judge, void *arg,
		  uint64_t *out, uint64_t *in, char *why, size_t size);

/* The 403 (or 400, name NULL) of eg_send_403 into buf: its length. */
size_t eg_format_403(char *buf, size_t size, const char *name, uint16_t port, const char *why);
size_t eg_format_502(char *buf, size_t size, const char *name, const char *why);

/* secret.c */
/* A deep copy (values included) for the proxy to hold; -ENOMEM. */
int eg_secrets_copy(struct egress_secrets *dst, const struct egress_secrets *src);
bool eg_secret_for_host(const struct egress_secret *s, const char *host);
/* The first secret whose placeholder is in p[0, len) and that is not for
 * host (NULL: any secret), or NULL. */
const struct egress_secret *eg_secret_in(const struct egress *e, const void *p, size_t len,
					 const char *host);
/* eg_secret_in for a flow's next len bytes, across the cut with those before (t updated). */
const struct egress_secret *eg_secret_in_flow(const struct egress *e, struct eg_tail *t,
					      const void *p, size_t len, const char *host);
/* A placeholder in p[0, len): why is "placeholder of secret NAME in where". */
bool eg_secret_leak(const struct egress *e, const void *p, size_t len, const char *where, char *why,
		    size_t size);
/* A placeholder in a name (SNI, Host, CONNECT, a query): why names the secret. */
bool eg_secret_name_leak(const struct egress *e, const char *name, char *why, size_t size);

/* tls_term.c */
/* The secrets copied from o.secrets; with any, the CA, the leaves, the server trust. */
int eg_term_start(struct egress *e, char *err, size_t size);
void eg_term_stop(struct egress *e);
/* The leaf's credentials for name, or NULL when it is not terminated (tls_ca.c). */
gnutls_certificate_credentials_t eg_term_leaf(struct egress *e, const char *name);
/* Whether a connection to name:port is terminated (a secret's host, 443). */
bool eg_term_wanted(struct egress *e, const char *name, uint16_t port);
/*
 * A terminated connection (c->up connected): TLS with the tool (a leaf
 * for name), TLS with the server (verified), each request framed, judged
 * and its headers' placeholders replaced; the record made (kind, how).
 */
void eg_term_serve(struct conn *c, const char *name, const uint8_t addr[16], uint16_t port,
		   int kind, int how, const char *rule);

/* splice.c */
/* One direction's step; false when it has ended (*broken: both have). */
bool eg_step(struct dir *d, bool *broken);
/* Both directions until both ends closed or the idle timeout; bytes counted. */
void eg_splice_both(struct egress *e, int a, int b, uint64_t *a2b, uint64_t *b2a);

/* proxy.c */
void *eg_conn_thread(void *arg); /* a struct conn, freed */
/*
 * sniff.c: the name c's first bytes give (buf: PEEK_MAX): HOW_SNI, HOW_HOST
 * (*http: a request), or HOW_ADDR (none, or a silent tool); *seen the
 * bytes peeked, -1 for a ClientHello never read whole.
 */
int eg_sniff_name(struct conn *c, uint8_t *buf, char *name, size_t size, bool *http, ssize_t *seen);
/* Whether a TLS ClientHello in p offers HTTP/2 (ALPN "h2"). */
bool eg_tls_offers_h2(const uint8_t *p, size_t len);
/* Waits until the client sent something (or the wait ends); bytes peeked. */
ssize_t eg_peek(struct egress *e, int fd, uint8_t *buf, size_t size, int ms);
void eg_reset(int fd); /* closes fd with a TCP RST */

#endif
