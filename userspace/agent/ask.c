// SPDX-License-Identifier: GPL-2.0
/*
 * The runtime's answers to the command rules' asks (ask.h); embedded.c
 * and the daemon (ops_ask.c) freeze the session and write the events
 * around them.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ask.h"
#include "agent.h"
#include "../lib/log.h"
#include "../lib/util.h"

static const char *const answer_names[] = {
	[ASK_DENY] = "deny",	   [ASK_APPROVE] = "approve", [ASK_ALWAYS] = "always",
	[ASK_TIMEOUT] = "timeout", [ASK_OTHER] = "deny",
};

const char *ask_answer_name(enum ask_answer a)
{
	return name_of(answer_names, ARRAY_SIZE(answer_names), a, "deny");
}

int ask_parse(const char *line, uint64_t id, enum ask_answer *out)
{
	char word[16];
	unsigned long long got;
	int n = 0;

	if (sscanf(line, " %llu %15s %n", &got, word, &n) == 2 && !line[n]) {
		if (got != id)
			return -ESTALE;
	} else if (!(sscanf(line, " %15s %n", word, &n) == 1 && !line[n])) {
		return -EINVAL;
	}
	if (streq(word, "approve") || streq(word, "yes"))
		*out = ASK_APPROVE;
	else if (streq(word, "always"))
		*out = ASK_ALWAYS;
	else if (streq(word, "deny") || streq(word, "no"))
		*out = ASK_DENY;
	else
		return -EINVAL;
	return 0;
}

/* The next whole line already buffered, taken out of a->buf; NULL: none. */
static bool take_line(struct ask *a, char *line, size_t size)
{
	char *nl = memchr(a->buf, '\n', a->len);
	size_t n;

	if (!nl) {
		/* a line longer than the buffer is dropped whole */
		if (a->len == sizeof(a->buf))
			a->len = 0;
		return false;
	}
	n = nl - a->buf;
	snprintf(line, size, "%.*s", (int)n, a->buf);
	memmove(a->buf, nl + 1, a->len - n - 1);
	a->len -= n + 1;
	return true;
}

enum ask_answer ask_wait(struct ask *a, uint64_t id, uint64_t timeout_ms)
{
	return ask_wait_or(a, id, timeout_ms, -1);
}

enum ask_answer ask_wait_or(struct ask *a, uint64_t id, uint64_t timeout_ms, int other_fd)
{
	uint64_t deadline = now_ns() / 1000000 + timeout_ms;
	char line[sizeof(a->buf) + 1];
	enum ask_answer ans;

	for (;;) {
		struct pollfd p[2] = {{.fd = a->fd, .events = POLLIN},
				      {.fd = other_fd, .events = POLLIN}};
		uint64_t now = now_ns() / 1000000;
		ssize_t n;
		int r;

		while (take_line(a, line, sizeof(line)))
			if (ask_parse(line, id, &ans) == 0)
				return ans;
		if (now >= deadline)
			return ASK_TIMEOUT;
		r = poll(p, other_fd >= 0 ? 2 : 1,
			 (int)(deadline - now > 60000 ? 60000 : deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ASK_DENY;
		if (other_fd >= 0 && p[1].revents)
			return ASK_OTHER;
		if (r == 0)
			continue;
		n = read(a->fd, a->buf + a->len, sizeof(a->buf) - a->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ASK_DENY; /* the runtime closed its end: nobody will answer */
		a->len += n;
	}
}

/* Switches the ask rule labelled label in t to allow; -ENOENT when none. */
static int always_in(struct bpfbox_cmd_table *t, struct agent *ag, uint32_t index,
		     const char *label)
{
	for (uint32_t i = 0; i < t->n && i < BPFBOX_CMD_RULES_MAX; i++) {
		struct bpfbox_cmd_rule *r = &t->r[i];

		if (strncmp(r->label, label, sizeof(r->label)) || r->action != BPFBOX_CMD_ASK)
			continue;
		r->action = BPFBOX_CMD_ALLOW;
		return agent_session_cmd_rules(ag, index, t);
	}
	return -ENOENT;
}

int ask_always(struct ask *a, struct agent *ag, const char *label)
{
	struct bpfbox_cmd_table *t;
	int r;

	if (a->table)
		return always_in(a->table, ag, a->session_index, label);
	/* Nobody keeps a copy (the daemon): the kernel's, read back. */
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = agent_session_cmd_rules_get(ag, a->session_index, t);
	if (!r)
		r = always_in(t, ag, a->session_index, label);
	free(t);
	return r;
}

bool ask_apply(struct ask *a, struct agent *ag, pid_t pid, const char *rule, enum ask_answer ans)
{
	if (ans == ASK_ALWAYS && ask_always(a, ag, rule) < 0)
		log_warn("approve always: the rule '%s' could not be switched to allow; "
			 "approved once",
			 rule);
	if (ans == ASK_APPROVE || ans == ASK_ALWAYS) {
		kill(pid, SIGCONT);
		a->approved++;
		return true;
	}
	kill(pid, SIGKILL);
	a->denied++;
	return false;
}
