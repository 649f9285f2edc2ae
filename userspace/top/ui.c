// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top's loops: the full-screen view (keys, ticks, the daemon's
 * events and replies, redraws) and the one snapshot of --once and --json.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ui_internal.h"
#include "../lib/util.h"

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
	struct sigaction sa = {.sa_handler = on_stop_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The full-screen view; -ENOTTY when the terminal cannot place the cursor. */
int top_run_ui(struct top *t, double interval)
{
	struct ui u = {.t = t, .interval = interval};
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
	ui_reselect(&u);
	u.dirty = true;
	while (!u.quit && !stop_signal) {
		struct pollfd pfd[3] = {{.fd = STDIN_FILENO, .events = POLLIN},
					{.fd = top_event_fd(t), .events = POLLIN},
					{.fd = top_ctl_fd(t), .events = POLLIN}};
		uint64_t now = now_ns();
		int timeout, kind;
		wint_t wc;

		if (now >= next) {
			ui_tick(&u);
			next = now + period;
		}
		if (u.view == VIEW_TAIL && u.tail && u.tail->tail_total != u.tail_seen &&
		    now - u.drawn_ns >= TAIL_REDRAW_NS)
			u.dirty = true;
		if (u.dirty)
			ui_draw(&u);
		now = now_ns();
		timeout = next > now ? (int)((next - now) / 1000000ULL) + 1 : 0;
		if (u.view == VIEW_TAIL && timeout > 100)
			timeout = 100; /* new events of the session shown */
		if (poll(pfd, ARRAY_SIZE(pfd), timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents && top_read_events(t, READ_BUDGET) < 0)
			ui_status_set(&u, true, "the daemon went away: %s", t->why);
		/* Every turn: a reply that is late for too long means the daemon is gone. */
		if (t->connected)
			ui_on_replies(&u);
		/* Also after EINTR: SIGWINCH turns into KEY_RESIZE here. */
		while ((kind = get_wch(&wc)) != ERR && !u.quit)
			ui_on_key(&u, kind, wc);
	}
	if (u.tail)
		u.tail->pinned = false;
	endwin();
	delscreen(scr);
	return 0;
}

int top_snapshot(struct top *t, double interval, bool json)
{
	uint64_t end = now_ns() + (uint64_t)(interval * 1e9);
	char msg[768];
	int r;

	for (uint64_t now = now_ns(); now < end && t->connected; now = now_ns()) {
		struct pollfd pfd = {.fd = top_event_fd(t), .events = POLLIN};

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
