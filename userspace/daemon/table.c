// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "table.h"
#include "../net/egress.h"
#include "../lib/util.h"

struct dsession *table_find(const struct table *t, const char *id)
{
	for (struct dsession *s = t->head; s; s = s->next)
		if (streq(s->id, id))
			return s;
	return NULL;
}

struct dsession *table_by_index(const struct table *t, uint32_t index)
{
	return index >= 1 && index <= BPFBOX_MAX_SESSIONS ? t->by_index[index] : NULL;
}

uint32_t table_free_index(struct table *t)
{
	for (uint32_t i = 0; i < BPFBOX_MAX_SESSIONS; i++) {
		uint32_t idx = (t->hint + i) % BPFBOX_MAX_SESSIONS + 1;

		if (!t->by_index[idx]) {
			t->hint = idx % BPFBOX_MAX_SESSIONS;
			return idx;
		}
	}
	return 0;
}

int table_add(struct table *t, struct dsession *s)
{
	if (s->index < 1 || s->index > BPFBOX_MAX_SESSIONS)
		return -EINVAL;
	if (t->by_index[s->index] || table_find(t, s->id))
		return -EEXIST;
	t->by_index[s->index] = s;
	s->next = t->head;
	t->head = s;
	t->count++;
	return 0;
}

void table_remove(struct table *t, struct dsession *s)
{
	for (struct dsession **p = &t->head; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	if (table_by_index(t, s->index) == s)
		t->by_index[s->index] = NULL;
	t->count--;
	egress_stop(s->egress);
	free(s->start_line);
	free(s->command);
	free(s->labels);
	json_object_put(s->lsm_lists);
	free(s->wkeys);
	free(s);
}

const char *dsession_state_name(enum dsession_state st)
{
	static const char *const names[] = {
		[DS_REGISTERED] = "registered", [DS_RUNNING] = "running", [DS_ADOPTED] = "adopted",
		[DS_ENDING] = "ending",		[DS_PAUSED] = "paused",
	};

	return st < ARRAY_SIZE(names) ? names[st] : "?";
}
