/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where audit events go (docs/sinks.md): several sinks at once, each given
 * by one spec string such as
 *
 *   stdout?format=ocsf
 *   file:/var/log/bpfbox/audit.jsonl?rotate=100M&keep=5&fsync=rotate
 *   syslog+tcp://127.0.0.1:5514?spool=/var/lib/bpfbox/spool/siem
 *   syslog+udp://[::1]:514?facility=authpriv
 *   syslog+tls://siem.example.com:6514?ca=/etc/bpfbox/siem-ca.pem
 *
 * The caller hands every event line to sinks_emit(); nothing in it blocks
 * on a slow consumer. A file or stdout sink queues and writes; a network
 * sink queues in memory, spills to a bounded on-disk spool while its
 * collector is slow or gone, and replays in order when it returns. What a
 * bound drops is counted and reported as a "loss" event in that sink's
 * stream; a sink that starts failing says so once with a "sink.error"
 * event to the other sinks (and to the on_event hook).
 */
#ifndef BPFBOX_SINK_H
#define BPFBOX_SINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

enum sink_kind {
	SINK_STDOUT,
	SINK_FILE,
	SINK_SYSLOG_TCP,
	SINK_SYSLOG_UDP,
	SINK_SYSLOG_TLS, /* RFC 5425: syslog over TLS (GnuTLS), octet-counted */
};

enum sink_format {
	SINK_FMT_JSON, /* the lines of docs/events.md, as they are */
	SINK_FMT_OCSF, /* one OCSF event per line (docs/ocsf.md) */
	SINK_FMT_TEXT, /* one line for a human, control bytes escaped */
};

enum sink_fsync {
	SINK_FSYNC_NEVER,
	SINK_FSYNC_ROTATE,   /* the file that is rotated away, and its directory */
	SINK_FSYNC_EVENTS,   /* after every fsync_events events written */
	SINK_FSYNC_INTERVAL, /* at most fsync_interval_ns after a write */
};

#define SINK_NAME_MAX 256
#define SINK_HOST_MAX 256

/* Defaults of the keys of docs/sinks.md. */
#define SINK_QUEUE_DEFAULT   (8ULL << 20)   /* bytes held in memory per sink */
#define SINK_SPOOL_DEFAULT   (256ULL << 20) /* bytes of spool per network sink */
#define SINK_CONFIRM_DEFAULT 1000000000ULL  /* ns before a sent event counts as delivered */
#define SINK_KEEP_DEFAULT    5
#define SINK_SPOOL_ROOT	     "/var/lib/bpfbox/spool"

struct sink_config {
	char spec[PATH_MAX + 512]; /* as given, for messages */
	char name[SINK_NAME_MAX];  /* in logs, sink.error and loss events */
	enum sink_kind kind;
	enum sink_format format;
	uint32_t types; /* bit (1 << enum ev_kind) per kind; 0: all */
	uint64_t queue_bytes;

	/* file */
	char path[PATH_MAX];
	uint64_t rotate_bytes; /* 0: never rotated */
	unsigned int keep;     /* rotated files kept: PATH.1 .. PATH.keep */
	enum sink_fsync fsync;
	uint64_t fsync_events;
	uint64_t fsync_interval_ns;

	/* syslog */
	char host[SINK_HOST_MAX];
	char port[8];
	int facility;		      /* 0..23 */
	char hostname[SINK_HOST_MAX]; /* HOSTNAME of the header; "": this host's name */
	char app[49];		      /* APP-NAME */
	char spool_dir[PATH_MAX];
	uint64_t spool_bytes;
	uint64_t confirm_ns;
	bool relp; /* relp:// (kind TCP), relp+tls:// (kind TLS): relp.c */

	/* syslog+tls: the collector's certificate is always verified */
	char tls_ca[PATH_MAX];	 /* CA certificates (PEM); "": the system's trust store */
	char tls_cert[PATH_MAX]; /* our client certificate (PEM), with tls_key */
	char tls_key[PATH_MAX];
	char tls_name[SINK_HOST_MAX]; /* the name the certificate must carry; "": host */
};

/*
 * Parses one spec into c (defaults filled in). 0, or -EINVAL with a line
 * in err that names the key at fault and what it takes.
 */
int sink_config_parse(const char *spec, struct sink_config *c, char *err, size_t err_size);

/*
 * Reads the "sinks" section of a daemon config file (docs/sinks.md): a
 * JSON object whose "sinks" member is an array of spec strings. Appends to
 * *v (realloc'ed, *n updated). 0, or -errno with a line in err naming the
 * file, the member and what is wrong.
 */
int sink_config_load(const char *file, struct sink_config **v, size_t *n, char *err,
		     size_t err_size);

struct json_object;
struct jsonw;

/* json, ocsf or text; -EINVAL for another name. */
int sink_format_parse(const char *name, enum sink_format *f);
/*
 * Appends the line of format f for ev (one parsed event of kind kind, as
 * docs/events.md has it; JSON: as it was) to w, newline included. kind < 0:
 * read from ev's "type". hostname is the OCSF device.hostname. 0, or
 * -EINVAL when ev is not an event.
 */
int sink_format_event(enum sink_format f, int kind, struct json_object *ev, const char *hostname,
		      struct jsonw *w);

struct sinks;

struct sinks_opts {
	/* Embedded mode: writes block and nothing polls sinks_fd(). */
	bool blocking;
	/* One line without newline: a sink failed, recovered, rotated badly. */
	void (*log)(void *ctx, const char *msg);
	/* An event made by the sinks (sink.error), once they had it. */
	void (*on_event)(void *ctx, const struct audit_event *ev);
	void *ctx;
};

/*
 * Opens every sink: files are created (mode 0640), spools made and locked,
 * collectors connected in the background (an unreachable one is a warning,
 * not an error). 0, or -errno with a line in err naming the sink.
 */
int sinks_open(struct sinks **out, const struct sink_config *cfg, size_t n,
	       const struct sinks_opts *o, char *err, size_t err_size);

/*
 * Hands one event (its JSON line, newline included, and its kind) to
 * every sink whose types filter takes it. Never blocks on a sink (except a
 * file's own write in blocking mode).
 */
void sinks_emit(struct sinks *s, const struct audit_event *ev);

/* Writes and sends what is queued, as far as it goes without blocking. */
void sinks_flush(struct sinks *s);

/* Readable when sinks_dispatch() has work: sockets, retries, fsync timers. */
int sinks_fd(const struct sinks *s);
void sinks_dispatch(struct sinks *s);

/* What a sink holds and has lost, for the daemon's metrics (docs/operating.md). */
struct sink_stats {
	const char *name; /* sink_config.name */
	const char *kind; /* "file", "stdout", "syslog+tcp", "syslog+udp", "syslog+tls" */
	uint64_t queued;  /* events held in memory, not yet written or confirmed */
	uint64_t queued_bytes;
	uint64_t dropped;     /* events lost by this sink since it opened */
	uint64_t retries;     /* failed writes or connections that will be tried again */
	uint64_t spool_bytes; /* on disk, waiting for the collector */
	uint64_t spool_records;
	bool up; /* writing (a network sink: connected) */
};

/* Fills up to n entries (one per sink, in order); returns the number of sinks. */
size_t sinks_stats(const struct sinks *s, struct sink_stats *v, size_t n);

const char *sink_kind_name(enum sink_kind k);

/* SIGHUP: every file sink opens its path again (after logrotate moved it). */
void sinks_reopen(struct sinks *s);

/*
 * Flushes (network sinks: up to about a second for the collector's
 * acknowledgement), keeps what was not delivered in the spools for the
 * next start, and frees everything.
 */
void sinks_close(struct sinks *s);

#endif
