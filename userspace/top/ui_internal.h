/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the full-screen view of bpfbox top shares between its drawing
 * (draw.c), its keys and state (keys.c) and its loop (ui.c). The model it
 * shows is top.h; the command line is cli/top.c.
 */
#ifndef BPFBOX_TOP_UI_INTERNAL_H
#define BPFBOX_TOP_UI_INTERNAL_H

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdbool.h>
#include <stdint.h>
#include <wchar.h>

#include "top.h"

#define READ_BUDGET    (4U << 20) /* event bytes read between two looks at the keys */
#define TAIL_REDRAW_NS (100ULL * 1000000ULL)
#define STATUS_KEEP_NS (6ULL * 1000000000ULL)
#define HEADER_ROWS    3 /* two header lines, then the column titles */

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

/* draw.c: the screen from the model and the ui state. */
void ui_draw(struct ui *u);
/* The message of the status line (an error in red), kept STATUS_KEEP_NS. */
void ui_status_set(struct ui *u, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* How many session rows the list has room for. */
int ui_rows_for_list(void);

/* keys.c: the state that keys and replies change. */
void ui_reselect(struct ui *u);
void ui_tick(struct ui *u);
void ui_on_replies(struct ui *u);
void ui_on_key(struct ui *u, int kind, wint_t wc);

#endif
