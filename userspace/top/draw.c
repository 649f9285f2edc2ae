// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top's full-screen view: the header, the column titles, the rows of
 * the sessions, one session's events, the help and the status line, drawn
 * with ncurses from the model (top.h) and the ui state (ui_internal.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wctype.h>

#include "ui_internal.h"
#include "../lib/util.h"

#define CMD_MIN	 12
#define DENY_MIN 16

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

void ui_status_set(struct ui *u, bool error, const char *fmt, ...)
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
static int layout(int *cmd_w, int *deny_w, bool show[TOP_COL__COUNT])
{
	for (int maxprio = 5; maxprio >= 0; maxprio--) {
		int fixed = 0, flex_cols = 0, min = 0, space;

		for (enum top_col i = 0; i < TOP_COL__COUNT; i++) {
			const struct top_column *c = top_column(i);

			show[i] = c->prio <= maxprio;
			if (!show[i])
				continue;
			fixed += c->width + 1;
			if (!c->width) {
				flex_cols++;
				min += i == TOP_COL_COMMAND ? CMD_MIN : DENY_MIN;
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

static int col_width(enum top_col id, int cmd_w, int deny_w)
{
	int w = top_column(id)->width;

	return w ? w : id == TOP_COL_COMMAND ? cmd_w : deny_w;
}

static void draw_titles(struct ui *u, const bool *show, int cmd_w, int deny_w)
{
	int x = 0;

	attron(A_REVERSE);
	move(2, 0);
	for (int i = 0; i < COLS; i++)
		addch(' ');
	for (enum top_col i = 0; i < TOP_COL__COUNT; i++) {
		int w = col_width(i, cmd_w, deny_w);
		char title[32];

		if (!show[i])
			continue;
		if (i == u->t->sort) {
			bool desc = top_sort_descending(u->t);

			snprintf(title, sizeof(title), "%s%s", top_col_name(i),
				 u->utf8 ? (desc ? "\u25bc" : "\u25b2") : (desc ? "v" : "^"));
			attron(A_BOLD);
			put_cell(u, 2, x, w, title, top_col_numeric(i));
			attroff(A_BOLD);
		} else {
			put_cell(u, 2, x, w, top_col_name(i), top_col_numeric(i));
		}
		x += w + 1;
	}
	attroff(A_REVERSE);
}

int ui_rows_for_list(void)
{
	return LINES - HEADER_ROWS - 1;
}

/* Keeps the selected row on screen. */
static void scroll_to_selection(struct ui *u)
{
	size_t rows = ui_rows_for_list() > 0 ? (size_t)ui_rows_for_list() : 1;
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
	for (enum top_col i = 0; i < TOP_COL__COUNT; i++) {
		int w = col_width(i, cmd_w, deny_w), pair = 0;

		if (!show[i])
			continue;
		top_cell(s, i, true, text, sizeof(text));
		if ((i == TOP_COL_DENIALS && s->denials) || i == TOP_COL_LAST_DENIAL)
			pair = PAIR_DENY;
		else if (i == TOP_COL_STATE && streq(s->state, "paused"))
			pair = PAIR_PAUSED;
		else if (i == TOP_COL_STATE && streq(s->state, "killed"))
			pair = PAIR_DENY;
		else if (i == TOP_COL_STATE && (streq(s->state, "ended") || s->gone_ns))
			pair = PAIR_ENDED;
		if (pair && u->colors)
			attron(COLOR_PAIR(pair));
		else if (pair == PAIR_DENY && s->denials)
			attron(A_BOLD);
		put_cell(u, y, x, w, text, top_col_numeric(i));
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
	bool show[TOP_COL__COUNT];
	int cmd_w, deny_w, rows = ui_rows_for_list();

	if (layout(&cmd_w, &deny_w, show) < 0)
		return;
	draw_titles(u, show, cmd_w, deny_w);
	scroll_to_selection(u);
	if (!t->nview) {
		put_cell(u, HEADER_ROWS + 1, 2, COLS - 2,
			 t->n		? "no session matches the filter (Esc clears it)"
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
	snprintf(line, sizeof(line), "command: %s%s%s%s%s", s->command ? s->command : "-",
		 s->labels ? "   labels: " : "", s->labels ? s->labels : "",
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
		snprintf(line, sizeof(line),
			 "%sEsc back  Up/Down/PgUp/PgDn scroll  End newest  "
			 "p pause  r resume  k kill  ? help  q quit",
			 back);
	} else {
		snprintf(line, sizeof(line),
			 "Enter events  s/S sort  / filter  p pause  r resume  "
			 "k kill  ? help  q quit");
	}
	if (error && u->colors)
		attron(COLOR_PAIR(PAIR_ERROR) | A_BOLD);
	put_cell(u, y, 0, w, line, false);
	if (error && u->colors)
		attroff(COLOR_PAIR(PAIR_ERROR) | A_BOLD);
	attroff(A_BOLD);
}

void ui_draw(struct ui *u)
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
