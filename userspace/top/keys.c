// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top's keys (docs/top.md) and the ui state they move: the
 * selection that follows its session, the filter, the pause/resume/kill
 * questions, the sort; the ticks and the daemon's replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "ui_internal.h"
#include "../lib/util.h"

/* After the view changed: the selection stays on the same session. */
void ui_reselect(struct ui *u)
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
	ui_reselect(u);
	u->dirty = true;
}

void ui_tick(struct ui *u)
{
	struct top *t = u->t;
	char msg[768];

	if (!t->connected) {
		if (top_connect(t, msg, sizeof(msg)) == 0)
			ui_status_set(u, false, "connected to the daemon on %s again", t->socket);
		ui_reselect(u);
	} else if (top_request_sample(t) < 0) {
		ui_status_set(u, true, "the daemon went away: %s", t->why);
	}
	u->dirty = true;
}

/* Replies of the control connection: a new sample, the end of an op. */
void ui_on_replies(struct ui *u)
{
	struct top *t = u->t;
	int r = top_read_replies(t);

	if (r < 0) {
		ui_status_set(u, true, "the daemon went away: %s", t->why);
		return;
	}
	if (r & TOP_GOT_OP) {
		if (t->op.err)
			ui_status_set(u, true, "%s %.12s: %s", t->op.op, t->op.id, t->op.msg);
		else
			ui_status_set(u, false, "%s %.12s: done", t->op.op, t->op.id);
		top_request_sample(t); /* show its new state now */
	}
	if (r & TOP_GOT_SAMPLE) {
		if (t->sample_err)
			ui_status_set(u, true, "%s", t->sample_msg);
		ui_reselect(u);
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
		ui_status_set(u, true, "no session selected");
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
		ui_status_set(u, true, "%s %.12s: %s", u->confirm_op, u->confirm_id,
			      u->t->connected ? strerror(-r) : u->t->why);
	else
		ui_status_set(u, false, "%s %.12s: asked the daemon", u->confirm_op, u->confirm_id);
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
	long page = ui_rows_for_list() > 1 ? ui_rows_for_list() - 1 : 1;

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

/*
 * The keys of the list and the events view (docs/top.md), one case each:
 * long (88 lines) but flat, and read as the table of the keys it is.
 */
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

void ui_on_key(struct ui *u, int kind, wint_t wc)
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
			ui_status_set(u, false, "%s cancelled", u->confirm_op);
		break;
	case MODE_FILTER:
		filter_key(u, kind, wc);
		break;
	default:
		normal_key(u, kind, wc);
	}
}
