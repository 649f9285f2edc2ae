/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The model behind `bpfbox top` (docs/top.md): the daemon's sessions from
 * `list`, their event rates from one `subscribe` to every event, and their
 * pids, memory and cpu from their cgroups. No terminal code here: the
 * ncurses view and the --once/--json printers in cli/top.c read it.
 *
 * The control connection is asynchronous (a request is sent, its reply
 * read when poll says so), so a daemon that is slow to answer never
 * freezes the screen. Sessions are found through a hash of their id: an
 * event or a list entry costs O(1), a refresh O(n log n) with the sort.
 */
#ifndef BPFBOX_TOP_H
#define BPFBOX_TOP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../daemon/client.h"
#include "../daemon/proto.h"

#define TOP_TAIL_MAX	     128		    /* event lines kept per session */
#define TOP_HASH_SIZE	     4096		    /* buckets of the session index (power of 2) */
#define TOP_GONE_KEEP_NS     (5ULL * 1000000000ULL) /* an ended session stays shown */
#define TOP_FILTER_MAX	     128
#define TOP_REPLY_TIMEOUT_MS 10000 /* then the daemon counts as gone */
#define TOP_MAX_PENDING	     8	   /* requests on the control connection */

/*
 * The columns of `bpfbox top`, in screen order: the one list behind the
 * enum, the titles, the --sort names (cli/top.c), the cells and the sort
 * (sessions.c), the screen's layout (draw.c) and --once (print.c).
 * X(ID, title, --sort name, kind, screen width (0: shares what is left),
 *   priority (a higher one goes first when the screen is narrow; 6: never on
 *   the screen's table, the selected session's lines show it),
 *   --once width (< 0: left-aligned; 0: the last, as long as it is),
 *   text of session s (NULL: none), number of session s)
 */
#define TOP_COLUMNS(X)                                                               \
	X(SESSION, "SESSION", "session", TOP_ID, 12, 0, -32, s->id, 0)               \
	X(STATE, "STATE", "state", TOP_TEXT, 10, 1, -10, s->state, 0)                \
	X(LEVEL, "LEVEL", "level", TOP_LEVEL, 8, 5, -8, s->level, 0)                 \
	X(PIDS, "PIDS", "pids", TOP_COUNT, 5, 3, 4, NULL, s->pids)                   \
	X(MEM, "MEM", "mem", TOP_BYTES, 6, 4, 6, NULL, s->mem)                       \
	X(CPU, "CPU%", "cpu", TOP_PERCENT, 6, 2, 5, NULL, s->cpu_pct)                \
	X(OPENS, "OPEN/s", "opens", TOP_RATE, 7, 2, 6, NULL, s->opens_rate)          \
	X(EXECS, "EXEC/s", "execs", TOP_RATE, 7, 2, 6, NULL, s->execs_rate)          \
	X(CONNECTS, "CONN/s", "connects", TOP_RATE, 7, 3, 6, NULL, s->connects_rate) \
	X(DENIALS, "DENIED", "denials", TOP_COUNT, 7, 1, 6, NULL, s->denials)        \
	X(LABELS, "LABELS", "labels", TOP_TEXT, 16, 6, -24, s->labels, 0)            \
	X(COMMAND, "COMMAND", "command", TOP_TEXT, 0, 0, -40, s->command, 0)         \
	X(LAST_DENIAL, "LAST DENIAL", "last-denial", TOP_TEXT, 0, 4, 0, s->last_denial, 0)

#define TOP_COL_ENUM(id, ...) TOP_COL_##id,
enum top_col { TOP_COLUMNS(TOP_COL_ENUM) TOP_COL__COUNT };
#undef TOP_COL_ENUM

/*
 * What a column holds, how it is shown and sorted: the id (not sorted:
 * sessions are in id order whatever the direction), text (A to Z), a level
 * (best first), then numbers (largest first; "-" when < 0): a count, a size
 * in bytes, a percentage with one decimal, a rate per second.
 */
enum top_kind { TOP_ID, TOP_TEXT, TOP_LEVEL, TOP_COUNT, TOP_BYTES, TOP_PERCENT, TOP_RATE };

struct top_column {
	const char *title, *sort_name;
	enum top_kind kind;
	int width, prio, once_width;
};

struct top_line {
	char *text;
	bool deny;
};

struct top_session {
	char id[DAEMON_SESSION_ID_LEN + 1];
	char state[16];	       /* the daemon's, or "ended" */
	char pause_reason[16]; /* "manual", "oom", "disk" while paused */
	char level[16];	       /* level_enabled of session.start; "" unknown */
	char *command;	       /* argv joined by spaces, control bytes as '?' */
	char *labels;	       /* the runtime's labels, KEY=VALUE joined by ',' */
	char *cgroup;	       /* from list or session.start; NULL unknown */
	char start_time[32];
	int64_t uid; /* -1 unknown */
	int64_t client_pid, child;
	uint64_t records, lost;

	/* From the cgroup at the last sample: -1 when unknown. */
	int64_t pids, mem;
	uint64_t cpu_usec;
	bool cpu_known;
	double cpu_pct;

	/* Counted from the events seen since top started. */
	uint64_t opens, execs, connects, denials, events;
	uint64_t opens_prev, execs_prev, connects_prev;
	double opens_rate, execs_rate, connects_rate;
	char *last_denial;
	char dests[160]; /* recent allowed destinations of the egress proxy, newest first */

	/* The last TOP_TAIL_MAX event lines, a ring; allocated on first use. */
	struct top_line *tail;
	size_t tail_head, tail_len;
	uint64_t tail_total; /* lines ever added */

	bool listed;	   /* in the last `list` reply */
	bool ended;	   /* session.end seen */
	bool killed;	   /* session.killed seen */
	uint64_t gone_ns;  /* when it left the list or ended; 0 while it runs */
	uint64_t known_ns; /* when top first heard of it (now_ns) */
	bool pinned;	   /* kept while it is looked at */
	size_t slot;	   /* index in top.all */
	struct top_session *hnext;
};

/* Bytes read from a connection, not yet split into lines. */
enum top_req_kind { TOP_REQ_LIST, TOP_REQ_OP };

struct top_req {
	enum top_req_kind kind;
	char op[8];
	char id[DAEMON_SESSION_ID_LEN + 1];
	uint64_t sent_ns;
};

/* The answer to the last pause/resume/kill. */
struct top_op_result {
	char op[8];
	char id[DAEMON_SESSION_ID_LEN + 1];
	int err;       /* 0, or -errno of the reply's code */
	char msg[512]; /* the daemon's error */
};

struct top {
	char socket[PATH_MAX];
	struct daemon_client ctl;  /* list, pause, resume, kill; ping at connect */
	struct daemon_client sub;  /* every event */
	struct buf ctl_in, sub_in; /* the daemon's growable buffer (proto.h) */
	struct top_req pend[TOP_MAX_PENDING];
	unsigned int pend_head, pend_n;
	bool connected;
	char why[512]; /* why not connected */

	uint64_t samples; /* list replies applied */
	int sample_err;	  /* the last list reply: 0 or -errno */
	char sample_msg[512];
	uint64_t op_results; /* op replies received */
	struct top_op_result op;

	char host[256];
	char host_level[16]; /* probe_host(..., 0): Landlock and seccomp only */
	int landlock_abi;
	pid_t daemon_pid;
	double daemon_start; /* CLOCK_BOOTTIME seconds; < 0 unknown */
	bool bpf_audit, bpf_network, bpf_unix;
	char cgroup_parent[PATH_MAX];

	uint64_t events, events_prev;
	double events_rate;
	uint64_t view_lost;    /* events the daemon dropped for us (queue full) */
	uint64_t removed_lost; /* ring losses of sessions no longer shown */
	uint64_t bad_lines;    /* lines that did not parse */

	struct top_session **all;
	size_t n, cap;
	struct top_session *hash[TOP_HASH_SIZE];

	struct top_session **view; /* filtered and sorted */
	size_t nview;
	enum top_col sort;
	bool reverse;
	char filter[TOP_FILTER_MAX];

	uint64_t sample_ns; /* monotonic time of the last sample */
	bool sampled;
};

/* Fills the host part of the header (hostname, Landlock and seccomp level). */
void top_init(struct top *t, const char *socket);
void top_free(struct top *t);

/*
 * Connects, pings, subscribes to every event and takes the first sample,
 * waiting for each reply. 0, or -errno with msg set (no daemon, refused,
 * no reply in time).
 */
int top_connect(struct top *t, char *msg, size_t size);
void top_disconnect(struct top *t);

/* The connections' fds for poll, -1 when not connected. */
int top_event_fd(const struct top *t);
int top_ctl_fd(const struct top *t);

/*
 * Reads what the subscription has (never blocks), at most max_bytes.
 * Returns the number of event lines handled, or -errno when the stream
 * ended (then the model is disconnected, t->why says why).
 */
int top_read_events(struct top *t, size_t max_bytes);

/* Sends `list` unless one is under way. 0, or -errno (disconnected). */
int top_request_sample(struct top *t);
/* Sends `pause`, `resume` or `kill` of id; the reply lands in t->op. */
int top_request_op(struct top *t, const char *op, const char *id);

#define TOP_GOT_SAMPLE (1 << 0)
#define TOP_GOT_OP     (1 << 1)
/*
 * Reads the replies that came (never blocks) and applies them: TOP_GOT_*
 * bits, or -errno when the daemon went away or a reply is over
 * TOP_REPLY_TIMEOUT_MS late (then the model is disconnected).
 */
int top_read_replies(struct top *t);

/* A sample, waiting for it (--once, --json). 0, or -errno with msg set. */
int top_sample(struct top *t, char *msg, size_t size);

/* Filters by t->filter and sorts by t->sort into t->view (each sample does it too). */
void top_build_view(struct top *t);
struct top_session *top_find(const struct top *t, const char *id);

/* The i-th line of a session's tail, oldest first; NULL past the end. */
const struct top_line *top_tail_line(const struct top_session *s, size_t i);

/* Column c of the list (TOP_COLUMNS); NULL past the end. */
const struct top_column *top_column(enum top_col c);
const char *top_col_name(enum top_col c);
/* Whether the column holds numbers (sorted largest first unless reversed). */
bool top_col_numeric(enum top_col c);
/*
 * Column c of session s as text, "-" for what is unknown. For the screen
 * (screen set) the id is cut to its width (--once has it whole) and no
 * last denial is a blank cell.
 */
void top_cell(const struct top_session *s, enum top_col c, bool screen, char *buf, size_t size);
/* The column whose --sort name is name: 0, or -EINVAL. */
int top_col_parse(const char *name, enum top_col *c);
/* Whether the current sort shows the largest or best first. */
bool top_sort_descending(const struct top *t);

/* Human sizes: "512B", "1.5M", "12G", "-" for < 0. */
void top_fmt_bytes(int64_t v, char *buf, size_t size);
/* A rate in at most 5 columns: "0", "2.5", "340", "12k". */
void top_fmt_rate(double r, char *buf, size_t size);
/* "3d04h", "1h02m", "4m05s", "-" for < 0. */
void top_fmt_duration(double sec, char *buf, size_t size);
double top_daemon_uptime(const struct top *t);
/* Events lost: the kernel ring's (per session) and the subscriber queue's. */
uint64_t top_drops(const struct top *t);

/* One snapshot, for --once and --json. */
void top_print_text(const struct top *t, FILE *out);
void top_print_json(const struct top *t, FILE *out);

/* The full-screen view until q or a stop signal (ui.c); -ENOTTY when the
 * terminal cannot place the cursor. */
int top_run_ui(struct top *t, double interval);
/* Reads events for one interval, samples and prints one snapshot (text or
 * JSON) to stdout; 0, or 1 with the reason on stderr. */
int top_snapshot(struct top *t, double interval, bool json);

#endif
