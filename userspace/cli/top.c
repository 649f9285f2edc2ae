// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top: the daemon's sessions live, in a full-screen ncurses view
 * (docs/top.md), or one snapshot as text or JSON. The model (sessions,
 * rates, cgroup samples) is userspace/top/; this file draws and reads keys.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

#include "cli.h"
#include "../top/top.h"
#include "../lib/util.h"

#define READ_BUDGET	  (4U << 20) /* event bytes read between two looks at the keys */
#define TAIL_REDRAW_NS	  (100ULL * 1000000ULL)
#define STATUS_KEEP_NS	  (6ULL * 1000000000ULL)
#define HEADER_ROWS	  3 /* two header lines, then the column titles */

enum { PAIR_DENY = 1, PAIR_PAUSED, PAIR_TITLE, PAIR_ERROR, PAIR_ENDED };

enum ui_view { VIEW_LIST, VIEW_TAIL };
enum ui_mode { MODE_NORMAL, MODE_FILTER, MODE_CONFIRM, MODE_HELP };

struct ui {
	struct top *t;
	double interval;
	enum ui_view view;
	enum ui_mode mode;
	char sel[DAEMON_SESSION_ID_LEN + 1]; /* the selected session */
	size_t sel_idx, first;		     /* its row in the view, the first row shown */
	struct top_session *tail;	     /* the session whose events are shown */
	size_t tail_back;		     /* lines scrolled back from the newest */
	uint64_t tail_seen;		     /* its tail_total when drawn */
	char confirm_op[8];
	char confirm_id[DAEMON_SESSION_ID_LEN + 1];
	char filter_before[TOP_FILTER_MAX];
	char status[512];
	bool status_error;
	uint64_t status_ns;
	bool colors, utf8;
	bool dirty, quit;
	uint64_t drawn_ns;
};

struct col {
	enum top_col id;
	int width; /* 0: shares what is left */
	bool right;
	int prio;  /* columns of a higher priority number go first when narrow */
};

static const struct col cols[] = {
	/* Wide enough for the title and the sort mark. */
	{ TOP_COL_SESSION, 12, false, 0 },  { TOP_COL_STATE, 10, false, 1 },
	{ TOP_COL_LEVEL, 8, false, 5 },	    { TOP_COL_PIDS, 5, true, 3 },
	{ TOP_COL_MEM, 6, true, 4 },	    { TOP_COL_CPU, 6, true, 2 },
	{ TOP_COL_OPENS, 7, true, 2 },	    { TOP_COL_EXECS, 7, true, 2 },
	{ TOP_COL_CONNECTS, 7, true, 3 },   { TOP_COL_DENIALS, 7, true, 1 },
	{ TOP_COL_COMMAND, 0, false, 0 },   { TOP_COL_LAST_DENIAL, 0, false, 4 },
};

#define CMD_MIN	 12
#define DENY_MIN 16

static const struct {
	const char *name;
	enum top_col col;
} sort_names[] = {
	{ "session", TOP_COL_SESSION },	 { "state", TOP_COL_STATE },
	{ "level", TOP_COL_LEVEL },	 { "pids", TOP_COL_PIDS },
	{ "mem", TOP_COL_MEM },		 { "memory", TOP_COL_MEM },
	{ "cpu", TOP_COL_CPU },		 { "opens", TOP_COL_OPENS },
	{ "execs", TOP_COL_EXECS },	 { "connects", TOP_COL_CONNECTS },
	{ "denials", TOP_COL_DENIALS },	 { "command", TOP_COL_COMMAND },
	{ "last-denial", TOP_COL_LAST_DENIAL },
};

static const char *const help_lines[] = {
	"bpfbox top: the daemon's sessions, refreshed every interval",
	"",
	"  Up/Down PgUp/PgDn Home/End   move (list) or scroll (events)",
	"  Enter, Right                 the selected session's events",
	"  Esc, Left, Backspace         back to the list (list: clear the filter)",
	"  s / S                        next sort column / reverse the order",
	"  < >                          previous / next sort column",
	"  /                            filter: id, command, state, level, denial",
	"  p  r  k                      pause, resume, kill (asks y/n)",
	"  ?                            this help",
	"  q                            quit",
	"",
	"Rates are per second over the last interval; DENIED and LAST DENIAL",
	"count what was seen since top started. Denials are shown in red.",
	"",
	"Any key closes this help.",
};

static void top_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox top [--socket PATH] [--once | --json] [-d SECONDS]\n"
		"                  [--sort COLUMN] [--reverse] [--filter TEXT]\n"
		"  --socket PATH   the daemon's socket (default $BPFBOX_SOCKET or\n"
		"                  " DAEMON_SOCKET_DEFAULT ")\n"
		"  --once          print one snapshot as text (rates over one interval)\n"
		"  --json          print one snapshot as a JSON object\n"
		"  -d, --delay S   refresh interval in seconds (default 1, 0.2 to 60)\n"
		"  --sort COLUMN   session, state, level, pids, mem, cpu (default),\n"
		"                  opens, execs, connects, denials, command, last-denial\n"
		"  --reverse       reverse the sort order\n"
		"  --filter TEXT   only sessions whose id, command, state, level or last\n"
		"                  denial contains TEXT (case-insensitive)\n"
		"Without a terminal on stdin and stdout, --once is implied.\n"
		"exit: 0 done; 1 no daemon answers or it refused; 2 bad usage\n");
}

enum { OPT_SOCKET = 256, OPT_ONCE, OPT_JSON, OPT_SORT, OPT_REVERSE, OPT_FILTER };

static const struct option top_opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "delay", required_argument, NULL, 'd' },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "reverse", no_argument, NULL, OPT_REVERSE },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* ---- drawing ---- */

/*
 * Writes s (UTF-8) at y,x in exactly w columns: cut to its display width
 * with a mark when it does not fit, padded with spaces. Bytes that do not
 * decode and characters that cannot print show as '?'.
 */
static void put_cell(const struct ui *u, int y, int x, int w, const char *s, bool right)
{
	wchar_t buf[1024];
	mbstate_t st;
	size_t n = 0, left;
	int used = 0;

	if (w <= 0 || y < 0 || y >= LINES || x >= COLS)
		return;
	if (x + w > COLS)
		w = COLS - x;
	memset(&st, 0, sizeof(st));
	left = s ? strlen(s) : 0;
	while (left && n < ARRAY_SIZE(buf) - 1) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, s, left, &st);
		int cw;

		if (k == (size_t)-1 || k == (size_t)-2) {
			memset(&st, 0, sizeof(st));
			wc = L'?';
			k = 1;
		} else if (k == 0) {
			break;
		}
		cw = iswprint(wc) ? wcwidth(wc) : -1;
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (used + cw > w)
			break;
		buf[n++] = wc;
		used += cw;
		s += k;
		left -= k;
	}
	if (left) {
		/* Cut: room for one mark at the end. */
		while (n > 0 && used + 1 > w) {
			int cw = wcwidth(buf[--n]);

			used -= cw > 0 ? cw : 0;
		}
		if (used + 1 <= w) {
			buf[n++] = u->utf8 ? L'\u2026' : L'~';
			used++;
		}
	}
	buf[n] = L'\0';
	move(y, x);
	for (int i = 0; right && i < w - used; i++)
		addch(' ');
	addnwstr(buf, (int)n);
	for (int i = 0; !right && i < w - used; i++)
		addch(' ');
}

static void status_set(struct ui *u, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void status_set(struct ui *u, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->status, sizeof(u->status), fmt, ap);
	va_end(ap);
	u->status_error = error;
	u->status_ns = now_ns();
	u->dirty = true;
}

static void draw_header(struct ui *u)
{
	const struct top *t = u->t;
	char line[PATH_MAX + 1024], up[32], drops[32], clock[16], filter[TOP_FILTER_MAX + 16];
	char ev[16];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	top_fmt_duration(top_daemon_uptime(t), up, sizeof(up));
	snprintf(line, sizeof(line),
		 "bpfbox top  host %s  level %s (Landlock ABI %d, seccomp)  BPF%s%s%s%s  "
		 "daemon pid %d up %s",
		 t->host, t->host_level, t->landlock_abi, t->bpf_audit ? " audit" : "",
		 t->bpf_network ? " network" : "", t->bpf_unix ? " unix-connect" : "",
		 !t->bpf_audit && !t->bpf_network && !t->bpf_unix ? " none" : "",
		 (int)t->daemon_pid, up);
	attron(A_BOLD);
	put_cell(u, 0, 0, COLS - 9, line, false);
	put_cell(u, 0, COLS - 9, 9, clock, true);
	attroff(A_BOLD);

	if (!t->connected) {
		snprintf(line, sizeof(line),
			 "daemon on %s not connected: %s; retrying every %.1f s", t->socket, t->why,
			 u->interval);
		if (u->colors)
			attron(COLOR_PAIR(PAIR_ERROR));
		attron(A_BOLD);
		put_cell(u, 1, 0, COLS, line, false);
		attroff(A_BOLD);
		if (u->colors)
			attroff(COLOR_PAIR(PAIR_ERROR));
		return;
	}
	snprintf(drops, sizeof(drops), "%llu", (unsigned long long)top_drops(t));
	top_fmt_rate(t->events_rate, ev, sizeof(ev));
	if (t->filter[0])
		snprintf(filter, sizeof(filter), "  filter \"%s\"", t->filter);
	else
		filter[0] = '\0';
	snprintf(line, sizeof(line), "sessions %zu/%zu  events/s %s  drops %s  sort %s %s%s",
		 t->nview, t->n, ev, drops, top_col_name(t->sort),
		 top_sort_descending(t) ? "desc" : "asc", filter);
	put_cell(u, 1, 0, COLS, line, false);
}

/* Which columns fit in COLS, and the widths of the two flexible ones. */
static int layout(int *cmd_w, int *deny_w, bool show[ARRAY_SIZE(cols)])
{
	for (int maxprio = 5; maxprio >= 0; maxprio--) {
		int fixed = 0, flex_cols = 0, min = 0, space;

		for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
			show[i] = cols[i].prio <= maxprio;
			if (!show[i])
				continue;
			fixed += cols[i].width + 1;
			if (!cols[i].width) {
				flex_cols++;
				min += cols[i].id == TOP_COL_COMMAND ? CMD_MIN : DENY_MIN;
			}
		}
		space = COLS - fixed;
		if (space < min && maxprio > 0)
			continue;
		if (space < 1)
			space = 1;
		if (flex_cols == 2) {
			*cmd_w = space * 9 / 20;
			if (*cmd_w < CMD_MIN)
				*cmd_w = CMD_MIN;
			*deny_w = space - *cmd_w;
		} else {
			*cmd_w = space;
			*deny_w = 0;
		}
		return 0;
	}
	return -1;
}

static int col_width(const struct col *c, int cmd_w, int deny_w)
{
	return c->width ? c->width : c->id == TOP_COL_COMMAND ? cmd_w : deny_w;
}

static void draw_titles(struct ui *u, const bool *show, int cmd_w, int deny_w)
{
	int x = 0;

	attron(A_REVERSE);
	move(2, 0);
	for (int i = 0; i < COLS; i++)
		addch(' ');
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
		const struct col *c = &cols[i];
		int w = col_width(c, cmd_w, deny_w);
		char title[32];

		if (!show[i])
			continue;
		if (c->id == u->t->sort) {
			bool desc = top_sort_descending(u->t);

			snprintf(title, sizeof(title), "%s%s", top_col_name(c->id),
				 u->utf8 ? (desc ? "\u25bc" : "\u25b2") : (desc ? "v" : "^"));
			attron(A_BOLD);
			put_cell(u, 2, x, w, title, c->right);
			attroff(A_BOLD);
		} else {
			put_cell(u, 2, x, w, top_col_name(c->id), c->right);
		}
		x += w + 1;
	}
	attroff(A_REVERSE);
}

static void cell_text(const struct top_session *s, enum top_col id, char *buf, size_t size)
{
	switch (id) {
	case TOP_COL_SESSION:
		snprintf(buf, size, "%.12s", s->id); /* unique enough, and --once has it whole */
		break;
	case TOP_COL_STATE:
		snprintf(buf, size, "%s", s->state[0] ? s->state : "-");
		break;
	case TOP_COL_LEVEL:
		snprintf(buf, size, "%s", s->level[0] ? s->level : "-");
		break;
	case TOP_COL_PIDS:
		if (s->pids >= 0)
			snprintf(buf, size, "%lld", (long long)s->pids);
		else
			snprintf(buf, size, "-");
		break;
	case TOP_COL_MEM:
		top_fmt_bytes(s->mem, buf, size);
		break;
	case TOP_COL_CPU:
		if (s->cpu_pct >= 0)
			snprintf(buf, size, "%.1f", s->cpu_pct);
		else
			snprintf(buf, size, "-");
		break;
	case TOP_COL_OPENS:
		top_fmt_rate(s->opens_rate, buf, size);
		break;
	case TOP_COL_EXECS:
		top_fmt_rate(s->execs_rate, buf, size);
		break;
	case TOP_COL_CONNECTS:
		top_fmt_rate(s->connects_rate, buf, size);
		break;
	case TOP_COL_DENIALS:
		snprintf(buf, size, "%llu", (unsigned long long)s->denials);
		break;
	case TOP_COL_COMMAND:
		snprintf(buf, size, "%s", s->command ? s->command : "-");
		break;
	case TOP_COL_LAST_DENIAL:
		snprintf(buf, size, "%s", s->last_denial ? s->last_denial : "");
		break;
	default:
		buf[0] = '\0';
	}
}

static int rows_for_list(void)
{
	return LINES - HEADER_ROWS - 1;
}

/* Keeps the selected row on screen. */
static void scroll_to_selection(struct ui *u)
{
	size_t rows = rows_for_list() > 0 ? (size_t)rows_for_list() : 1;
	size_t n = u->t->nview;

	if (u->sel_idx < u->first)
		u->first = u->sel_idx;
	if (u->sel_idx >= u->first + rows)
		u->first = u->sel_idx - rows + 1;
	if (n <= rows)
		u->first = 0;
	else if (u->first > n - rows)
		u->first = n - rows;
}

static void draw_row(struct ui *u, int y, const struct top_session *s, bool selected,
		     const bool *show, int cmd_w, int deny_w)
{
	char text[1024];
	int x = 0;

	if (selected)
		attron(A_REVERSE);
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
		const struct col *c = &cols[i];
		int w = col_width(c, cmd_w, deny_w), pair = 0;

		if (!show[i])
			continue;
		cell_text(s, c->id, text, sizeof(text));
		if ((c->id == TOP_COL_DENIALS && s->denials) || c->id == TOP_COL_LAST_DENIAL)
			pair = PAIR_DENY;
		else if (c->id == TOP_COL_STATE && streq(s->state, "paused"))
			pair = PAIR_PAUSED;
		else if (c->id == TOP_COL_STATE && streq(s->state, "killed"))
			pair = PAIR_DENY;
		else if (c->id == TOP_COL_STATE && (streq(s->state, "ended") || s->gone_ns))
			pair = PAIR_ENDED;
		if (pair && u->colors)
			attron(COLOR_PAIR(pair));
		else if (pair == PAIR_DENY && s->denials)
			attron(A_BOLD);
		put_cell(u, y, x, w, text, c->right);
		if (pair && u->colors)
			attroff(COLOR_PAIR(pair));
		else if (pair == PAIR_DENY)
			attroff(A_BOLD);
		if (x + w < COLS)
			addch(' ');
		x += w + 1;
	}
	/* The selection bar spans the whole line. */
	for (; selected && x < COLS; x++)
		mvaddch(y, x, ' ');
	if (selected)
		attroff(A_REVERSE);
}

static void draw_list(struct ui *u)
{
	const struct top *t = u->t;
	bool show[ARRAY_SIZE(cols)];
	int cmd_w, deny_w, rows = rows_for_list();

	if (layout(&cmd_w, &deny_w, show) < 0)
		return;
	draw_titles(u, show, cmd_w, deny_w);
	scroll_to_selection(u);
	if (!t->nview) {
		put_cell(u, HEADER_ROWS + 1, 2, COLS - 2,
			 t->n ? "no session matches the filter (Esc clears it)"
			      : t->connected ? "no sessions: the daemon runs none right now"
					     : "no sessions known",
			 false);
		return;
	}
	for (int r = 0; r < rows && u->first + r < t->nview; r++) {
		size_t i = u->first + r;

		draw_row(u, HEADER_ROWS + r, t->view[i], i == u->sel_idx, show, cmd_w, deny_w);
	}
}

static void draw_tail(struct ui *u)
{
	struct top_session *s = u->tail;
	char line[2048], mem[16], cpu[16];
	int y0 = HEADER_ROWS + 2, rows = LINES - y0 - 1;
	size_t len, start;

	top_fmt_bytes(s->mem, mem, sizeof(mem));
	if (s->cpu_pct >= 0)
		snprintf(cpu, sizeof(cpu), "%.1f%%", s->cpu_pct);
	else
		snprintf(cpu, sizeof(cpu), "-");
	snprintf(line, sizeof(line),
		 "SESSION %s  %s%s%s%s  level %s  pids %lld  mem %s  cpu %s  denials %llu", s->id,
		 s->state[0] ? s->state : "-", s->pause_reason[0] ? " (" : "", s->pause_reason,
		 s->pause_reason[0] ? ")" : "", s->level[0] ? s->level : "-",
		 (long long)(s->pids > 0 ? s->pids : 0), mem, cpu, (unsigned long long)s->denials);
	attron(A_REVERSE | A_BOLD);
	move(2, 0);
	for (int i = 0; i < COLS; i++)
		addch(' ');
	put_cell(u, 2, 0, COLS, line, false);
	attroff(A_REVERSE | A_BOLD);
	snprintf(line, sizeof(line), "command: %s%s%s", s->command ? s->command : "-",
		 s->dests[0] ? "   net: " : "", s->dests);
	put_cell(u, 3, 0, COLS, line, false);
	snprintf(line, sizeof(line), "last denial: %s",
		 s->last_denial ? s->last_denial : "none seen");
	if (s->last_denial && u->colors)
		attron(COLOR_PAIR(PAIR_DENY));
	put_cell(u, 4, 0, COLS, line, false);
	if (s->last_denial && u->colors)
		attroff(COLOR_PAIR(PAIR_DENY));
	if (rows <= 0)
		return;
	len = s->tail_len;
	if (!len) {
		put_cell(u, y0, 2, COLS - 2, "no events seen for this session since top started",
			 false);
		return;
	}
	/* Scrolled back, the lines shown stay put while new ones come. */
	if (u->tail_back && s->tail_total > u->tail_seen)
		u->tail_back += s->tail_total - u->tail_seen;
	if (u->tail_back > (len > (size_t)rows ? len - rows : 0))
		u->tail_back = len > (size_t)rows ? len - rows : 0;
	start = len > (size_t)rows + u->tail_back ? len - rows - u->tail_back : 0;
	for (int r = 0; r < rows && start + r < len; r++) {
		const struct top_line *l = top_tail_line(s, start + r);

		if (!l)
			break;
		if (l->deny)
			attron(A_BOLD | (u->colors ? COLOR_PAIR(PAIR_DENY) : A_STANDOUT));
		put_cell(u, y0 + r, 0, COLS, l->text, false);
		if (l->deny)
			attroff(A_BOLD | (u->colors ? COLOR_PAIR(PAIR_DENY) : A_STANDOUT));
	}
	u->tail_seen = s->tail_total;
}

static void draw_help(struct ui *u)
{
	int h = ARRAY_SIZE(help_lines) + 2, w = 0, y0, x0;

	for (size_t i = 0; i < ARRAY_SIZE(help_lines); i++)
		if ((int)strlen(help_lines[i]) > w)
			w = strlen(help_lines[i]);
	w += 4;
	if (w > COLS)
		w = COLS;
	if (h > LINES)
		h = LINES;
	y0 = (LINES - h) / 2;
	x0 = (COLS - w) / 2;
	attron(A_REVERSE);
	for (int r = 0; r < h; r++)
		put_cell(u, y0 + r, x0, w, "", false);
	for (int r = 0; r < h - 2 && r < (int)ARRAY_SIZE(help_lines); r++)
		put_cell(u, y0 + 1 + r, x0 + 2, w - 4, help_lines[r], false);
	attroff(A_REVERSE);
}

static void draw_status(struct ui *u)
{
	char line[768];
	int y = LINES - 1, w = COLS - 1; /* the last cell would scroll some terminals */
	bool error = false;

	if (u->mode == MODE_FILTER) {
		snprintf(line, sizeof(line), "filter: %s_   (Enter keeps it, Esc cancels)",
			 u->t->filter);
	} else if (u->mode == MODE_CONFIRM) {
		struct top_session *s = top_find(u->t, u->confirm_id);

		snprintf(line, sizeof(line), "%s session %.12s? [y/N]  %s",
			 streq(u->confirm_op, "pause")	  ? "Pause"
			 : streq(u->confirm_op, "resume") ? "Resume"
							  : "Kill",
			 u->confirm_id, s && s->command ? s->command : "-");
		attron(A_BOLD);
	} else if (u->status[0] && now_ns() - u->status_ns < STATUS_KEEP_NS) {
		snprintf(line, sizeof(line), "%s", u->status);
		error = u->status_error;
	} else if (u->view == VIEW_TAIL) {
		char back[48] = "";

		if (u->tail_back)
			snprintf(back, sizeof(back), "%zu lines back  ", u->tail_back);
		snprintf(line, sizeof(line), "%sEsc back  Up/Down/PgUp/PgDn scroll  End newest  "
					     "p pause  r resume  k kill  ? help  q quit", back);
	} else {
		snprintf(line, sizeof(line), "Enter events  s/S sort  / filter  p pause  r resume  "
					     "k kill  ? help  q quit");
	}
	if (error && u->colors)
		attron(COLOR_PAIR(PAIR_ERROR) | A_BOLD);
	put_cell(u, y, 0, w, line, false);
	if (error && u->colors)
		attroff(COLOR_PAIR(PAIR_ERROR) | A_BOLD);
	attroff(A_BOLD);
}

static void draw(struct ui *u)
{
	erase();
	if (LINES < HEADER_ROWS + 3 || COLS < 40) {
		put_cell(u, 0, 0, COLS, "bpfbox top: the terminal is too small", false);
	} else {
		draw_header(u);
		if (u->view == VIEW_TAIL && u->tail)
			draw_tail(u);
		else
			draw_list(u);
		draw_status(u);
		if (u->mode == MODE_HELP)
			draw_help(u);
	}
	refresh();
	u->dirty = false;
	u->drawn_ns = now_ns();
}

/* ---- state ---- */

/* After the view changed: the selection stays on the same session. */
static void reselect(struct ui *u)
{
	const struct top *t = u->t;

	if (u->sel[0])
		for (size_t i = 0; i < t->nview; i++)
			if (streq(t->view[i]->id, u->sel)) {
				u->sel_idx = i;
				return;
			}
	if (u->sel_idx >= t->nview)
		u->sel_idx = t->nview ? t->nview - 1 : 0;
	if (t->nview)
		snprintf(u->sel, sizeof(u->sel), "%s", t->view[u->sel_idx]->id);
	else
		u->sel[0] = '\0';
}

static void select_idx(struct ui *u, long idx)
{
	const struct top *t = u->t;

	if (!t->nview)
		return;
	if (idx < 0)
		idx = 0;
	if ((size_t)idx >= t->nview)
		idx = t->nview - 1;
	u->sel_idx = idx;
	snprintf(u->sel, sizeof(u->sel), "%s", t->view[idx]->id);
}

static void rebuild(struct ui *u)
{
	top_build_view(u->t);
	reselect(u);
	u->dirty = true;
}

static void tick(struct ui *u)
{
	struct top *t = u->t;
	char msg[768];

	if (!t->connected) {
		if (top_connect(t, msg, sizeof(msg)) == 0)
			status_set(u, false, "connected to the daemon on %s again", t->socket);
		reselect(u);
	} else if (top_request_sample(t) < 0) {
		status_set(u, true, "the daemon went away: %s", t->why);
	}
	u->dirty = true;
}

/* Replies of the control connection: a new sample, the end of an op. */
static void on_replies(struct ui *u)
{
	struct top *t = u->t;
	int r = top_read_replies(t);

	if (r < 0) {
		status_set(u, true, "the daemon went away: %s", t->why);
		return;
	}
	if (r & TOP_GOT_OP) {
		if (t->op.err)
			status_set(u, true, "%s %.12s: %s", t->op.op, t->op.id, t->op.msg);
		else
			status_set(u, false, "%s %.12s: done", t->op.op, t->op.id);
		top_request_sample(t); /* show its new state now */
	}
	if (r & TOP_GOT_SAMPLE) {
		if (t->sample_err)
			status_set(u, true, "%s", t->sample_msg);
		reselect(u);
		u->dirty = true;
	}
}

static void leave_tail(struct ui *u)
{
	if (u->tail)
		u->tail->pinned = false;
	u->tail = NULL;
	u->view = VIEW_LIST;
	u->dirty = true;
}

static struct top_session *current(struct ui *u)
{
	if (u->view == VIEW_TAIL)
		return u->tail;
	return u->t->nview ? u->t->view[u->sel_idx] : NULL;
}

static void ask(struct ui *u, const char *op)
{
	struct top_session *s = current(u);

	if (!s) {
		status_set(u, true, "no session selected");
		return;
	}
	snprintf(u->confirm_op, sizeof(u->confirm_op), "%s", op);
	snprintf(u->confirm_id, sizeof(u->confirm_id), "%s", s->id);
	u->mode = MODE_CONFIRM;
	u->dirty = true;
}

static void confirmed(struct ui *u)
{
	int r = top_request_op(u->t, u->confirm_op, u->confirm_id);

	if (r < 0)
		status_set(u, true, "%s %.12s: %s", u->confirm_op, u->confirm_id,
			   u->t->connected ? strerror(-r) : u->t->why);
	else
		status_set(u, false, "%s %.12s: asked the daemon", u->confirm_op, u->confirm_id);
}

static void filter_key(struct ui *u, int kind, wint_t wc)
{
	struct top *t = u->t;
	size_t len = strlen(t->filter);

	if (kind == OK && (wc == L'\n' || wc == L'\r')) {
		u->mode = MODE_NORMAL;
	} else if (kind == OK && wc == 27) {
		snprintf(t->filter, sizeof(t->filter), "%s", u->filter_before);
		u->mode = MODE_NORMAL;
	} else if ((kind == KEY_CODE_YES && wc == KEY_BACKSPACE) ||
		   (kind == OK && (wc == 127 || wc == 8))) {
		/* One UTF-8 character back. */
		while (len > 0 && ((unsigned char)t->filter[len - 1] & 0xc0) == 0x80)
			len--;
		if (len > 0)
			len--;
		t->filter[len] = '\0';
	} else if (kind == KEY_CODE_YES && wc == KEY_ENTER) {
		u->mode = MODE_NORMAL;
	} else if (kind == OK && iswprint(wc)) {
		char mb[MB_LEN_MAX];
		mbstate_t st;
		size_t k;

		memset(&st, 0, sizeof(st));
		k = wcrtomb(mb, wc, &st);
		if (k != (size_t)-1 && len + k < sizeof(t->filter)) {
			memcpy(t->filter + len, mb, k);
			t->filter[len + k] = '\0';
		}
	}
	u->first = 0;
	rebuild(u);
}

static void move_key(struct ui *u, int key)
{
	long page = rows_for_list() > 1 ? rows_for_list() - 1 : 1;

	if (u->view == VIEW_TAIL) {
		size_t len = u->tail ? u->tail->tail_len : 0;
		size_t back = u->tail_back;

		page = LINES - HEADER_ROWS - 4 > 1 ? LINES - HEADER_ROWS - 4 : 1;
		if (key == KEY_UP)
			back++;
		else if (key == KEY_DOWN && back)
			back--;
		else if (key == KEY_PPAGE)
			back += page;
		else if (key == KEY_NPAGE)
			back = back > (size_t)page ? back - page : 0;
		else if (key == KEY_HOME)
			back = len;
		else if (key == KEY_END)
			back = 0;
		u->tail_back = back > len ? len : back; /* draw_tail clamps to the screen */
		u->dirty = true;
		return;
	}
	if (key == KEY_UP)
		select_idx(u, (long)u->sel_idx - 1);
	else if (key == KEY_DOWN)
		select_idx(u, (long)u->sel_idx + 1);
	else if (key == KEY_PPAGE)
		select_idx(u, (long)u->sel_idx - page);
	else if (key == KEY_NPAGE)
		select_idx(u, (long)u->sel_idx + page);
	else if (key == KEY_HOME)
		select_idx(u, 0);
	else if (key == KEY_END)
		select_idx(u, (long)u->t->nview - 1);
	u->dirty = true;
}

static void sort_by(struct ui *u, int delta)
{
	u->t->sort = (enum top_col)(((int)u->t->sort + delta + TOP_COL__COUNT) % TOP_COL__COUNT);
	rebuild(u);
}

static void normal_key(struct ui *u, int kind, wint_t wc)
{
	if (kind == KEY_CODE_YES) {
		switch (wc) {
		case KEY_UP:
		case KEY_DOWN:
		case KEY_PPAGE:
		case KEY_NPAGE:
		case KEY_HOME:
		case KEY_END:
			move_key(u, wc);
			return;
		case KEY_ENTER:
		case KEY_RIGHT:
			wc = L'\n';
			break;
		case KEY_LEFT:
		case KEY_BACKSPACE:
			wc = 27;
			break;
		case KEY_F(1):
			wc = L'?';
			break;
		case KEY_F(10):
			wc = L'q';
			break;
		default:
			return;
		}
	}
	switch (wc) {
	case L'q':
	case L'Q':
		u->quit = true;
		break;
	case L'?':
	case L'h':
		u->mode = MODE_HELP;
		break;
	case L'\n':
	case L'\r':
		if (u->view == VIEW_LIST && u->t->nview) {
			u->tail = u->t->view[u->sel_idx];
			u->tail->pinned = true;
			u->tail_back = 0;
			u->tail_seen = u->tail->tail_total;
			u->view = VIEW_TAIL;
		}
		break;
	case 27:
	case 127:
	case 8:
		if (u->view == VIEW_TAIL) {
			leave_tail(u);
		} else if (u->t->filter[0]) {
			u->t->filter[0] = '\0';
			rebuild(u);
		}
		break;
	case L's':
	case L'>':
		sort_by(u, 1);
		break;
	case L'<':
		sort_by(u, -1);
		break;
	case L'S':
		u->t->reverse = !u->t->reverse;
		rebuild(u);
		break;
	case L'/':
		if (u->view == VIEW_TAIL)
			leave_tail(u);
		snprintf(u->filter_before, sizeof(u->filter_before), "%s", u->t->filter);
		u->mode = MODE_FILTER;
		break;
	case L'p':
		ask(u, "pause");
		break;
	case L'r':
		ask(u, "resume");
		break;
	case L'k':
		ask(u, "kill");
		break;
	default:
		return;
	}
	u->dirty = true;
}

static void on_key(struct ui *u, int kind, wint_t wc)
{
	if (kind == KEY_CODE_YES && wc == KEY_RESIZE) {
		clear(); /* repaint everything at the new size */
		u->dirty = true;
		return;
	}
	switch (u->mode) {
	case MODE_HELP:
		u->mode = MODE_NORMAL;
		u->dirty = true;
		break;
	case MODE_CONFIRM:
		u->mode = MODE_NORMAL;
		u->dirty = true;
		if (kind == OK && (wc == L'y' || wc == L'Y'))
			confirmed(u);
		else
			status_set(u, false, "%s cancelled", u->confirm_op);
		break;
	case MODE_FILTER:
		filter_key(u, kind, wc);
		break;
	default:
		normal_key(u, kind, wc);
	}
}

static void colors_init(struct ui *u)
{
	if (!has_colors() || start_color() == ERR)
		return;
	use_default_colors();
	init_pair(PAIR_DENY, COLOR_RED, -1);
	init_pair(PAIR_PAUSED, COLOR_YELLOW, -1);
	init_pair(PAIR_TITLE, COLOR_CYAN, -1);
	init_pair(PAIR_ERROR, COLOR_RED, -1);
	init_pair(PAIR_ENDED, COLOR_BLUE, -1);
	u->colors = true;
}

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* SIGINT, SIGTERM, SIGHUP end the loop, so the terminal is always restored. */
static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The full-screen view; -ENOTTY when the terminal cannot place the cursor. */
static int run_ui(struct top *t, double interval)
{
	struct ui u = { .t = t, .interval = interval };
	uint64_t period = (uint64_t)(interval * 1e9), next = now_ns() + period;
	const char *cup;
	SCREEN *scr;

	u.utf8 = MB_CUR_MAX > 1;
	catch_stop_signals();
	scr = newterm(NULL, stdout, stdin);
	if (!scr)
		return -ENOTTY;
	set_term(scr);
	cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		endwin();
		delscreen(scr);
		return -ENOTTY;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	colors_init(&u);
	reselect(&u);
	u.dirty = true;
	while (!u.quit && !stop_signal) {
		struct pollfd pfd[3] = { { .fd = STDIN_FILENO, .events = POLLIN },
					 { .fd = top_event_fd(t), .events = POLLIN },
					 { .fd = top_ctl_fd(t), .events = POLLIN } };
		uint64_t now = now_ns();
		int timeout, kind;
		wint_t wc;

		if (now >= next) {
			tick(&u);
			next = now + period;
		}
		if (u.view == VIEW_TAIL && u.tail && u.tail->tail_total != u.tail_seen &&
		    now - u.drawn_ns >= TAIL_REDRAW_NS)
			u.dirty = true;
		if (u.dirty)
			draw(&u);
		now = now_ns();
		timeout = next > now ? (int)((next - now) / 1000000ULL) + 1 : 0;
		if (u.view == VIEW_TAIL && timeout > 100)
			timeout = 100; /* new events of the session shown */
		if (poll(pfd, ARRAY_SIZE(pfd), timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents && top_read_events(t, READ_BUDGET) < 0)
			status_set(&u, true, "the daemon went away: %s", t->why);
		/* Every turn: a reply that is late for too long means the daemon is gone. */
		if (t->connected)
			on_replies(&u);
		/* Also after EINTR: SIGWINCH turns into KEY_RESIZE here. */
		while ((kind = get_wch(&wc)) != ERR && !u.quit)
			on_key(&u, kind, wc);
	}
	if (u.tail)
		u.tail->pinned = false;
	endwin();
	delscreen(scr);
	return 0;
}

/* ---- snapshots ---- */

static int snapshot(struct top *t, double interval, bool json)
{
	uint64_t end = now_ns() + (uint64_t)(interval * 1e9);
	char msg[768];
	int r;

	for (uint64_t now = now_ns(); now < end && t->connected; now = now_ns()) {
		struct pollfd pfd = { .fd = top_event_fd(t), .events = POLLIN };

		if (poll(&pfd, 1, (int)((end - now) / 1000000ULL) + 1) > 0)
			top_read_events(t, SIZE_MAX);
	}
	r = top_sample(t, msg, sizeof(msg));
	if (r < 0) {
		fprintf(stderr, "bpfbox top: %s\n", msg);
		return 1;
	}
	if (json)
		top_print_json(t, stdout);
	else
		top_print_text(t, stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int parse_sort(const char *name, enum top_col *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(sort_names); i++)
		if (streq(sort_names[i].name, name)) {
			*out = sort_names[i].col;
			return 0;
		}
	return -EINVAL;
}

int cmd_top(int argc, char **argv)
{
	const char *socket = NULL, *filter = NULL;
	bool once = false, json = false, reverse = false;
	enum top_col sort = TOP_COL_CPU;
	double interval = 1.0;
	struct top *t;
	char msg[768], *end;
	int opt, r;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "hd:", top_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			socket = optarg;
			break;
		case OPT_ONCE:
			once = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'd':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.2 && interval <= 60)) {
				fprintf(stderr, "bpfbox top: --delay wants seconds from 0.2 to 60, "
						"not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SORT:
			if (parse_sort(optarg, &sort) < 0) {
				fprintf(stderr, "bpfbox top: unknown sort column '%s'; see 'bpfbox "
						"top --help'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_REVERSE:
			reverse = true;
			break;
		case OPT_FILTER:
			filter = optarg;
			break;
		case 'h':
			top_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "bpfbox top: unknown or incomplete option '%s'; see "
					"'bpfbox top --help'\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bpfbox top: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (filter && strlen(filter) >= TOP_FILTER_MAX) {
		fprintf(stderr, "bpfbox top: --filter is limited to %d bytes\n",
			TOP_FILTER_MAX - 1);
		return EXIT_USAGE;
	}
	setlocale(LC_ALL, "");
	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "bpfbox top: out of memory\n");
		return 1;
	}
	top_init(t, socket);
	t->sort = sort;
	t->reverse = reverse;
	if (filter)
		snprintf(t->filter, sizeof(t->filter), "%s", filter);
	r = top_connect(t, msg, sizeof(msg));
	if (r < 0) {
		fprintf(stderr, "bpfbox top: %s%s\n", msg,
			startswith(msg, "no daemon")
				? "; start one with 'bpfbox daemon' or pass --socket"
				: "");
		top_free(t);
		free(t);
		return 1;
	}
	if (!once && !json && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		once = true;
	if (!once && !json) {
		r = run_ui(t, interval);
		if (r == -ENOTTY) {
			fprintf(stderr, "bpfbox top: the terminal (TERM=%s) cannot be drawn on; "
					"one snapshot instead\n",
				getenv("TERM") ? getenv("TERM") : "");
			once = true;
		}
	}
	if (once || json)
		r = snapshot(t, interval, json);
	top_free(t);
	free(t);
	return r;
}
