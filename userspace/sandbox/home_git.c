// SPDX-License-Identifier: GPL-2.0
/*
 * The private home's git config (docs/runtime.md): written anew from an
 * allowlist of the caller's keys, never copied. A git config holds
 * secrets in too many places to strip them one by one (sendemail's
 * smtpPass, an alias holding a header, url.<user:pw@...>.insteadOf, a
 * credential helper's command line, http.extraHeader, a value continued
 * on the next line); identity is all a session needs.
 *
 * The caller's file is parsed as git does (sections, quotes, escapes,
 * comments, backslash-newline continuations), the last value of each
 * allowed key kept; includes are not followed.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "session_internal.h"

/* section.key, as git spells them; no subsection. */
static const char *const allowed[][2] = {
	{"user", "name"},
	{"user", "email"},
	{"init", "defaultBranch"},
	{"core", "autocrlf"},
};

#define GIT_VALUE_MAX 256

struct gitparse {
	const char *p, *end;
	char section[32]; /* lower case; "" inside a subsection or a bad header */
	char values[sizeof(allowed) / sizeof(allowed[0])][GIT_VALUE_MAX];
	bool have[sizeof(allowed) / sizeof(allowed[0])];
};

static void skip_line(struct gitparse *g)
{
	while (g->p < g->end && *g->p != '\n')
		g->p++;
}

/* [section], [section "sub"], [section.sub]: only the first counts. */
static void header(struct gitparse *g)
{
	size_t n = 0;
	bool ok = true;

	g->p++;
	while (g->p < g->end && (isalnum((unsigned char)*g->p) || *g->p == '-')) {
		if (n + 1 < sizeof(g->section))
			g->section[n++] = (char)tolower((unsigned char)*g->p);
		else
			ok = false;
		g->p++;
	}
	g->section[n] = '\0';
	/* A subsection (quoted, or after a dot): none of the allowed keys. */
	while (g->p < g->end && *g->p != ']' && *g->p != '\n') {
		if (*g->p == '"') {
			ok = false;
			for (g->p++; g->p < g->end && *g->p != '"' && *g->p != '\n'; g->p++)
				if (*g->p == '\\' && g->p + 1 < g->end && g->p[1] != '\n')
					g->p++;
		} else if (*g->p != ' ' && *g->p != '\t') {
			ok = false;
		}
		if (g->p < g->end && *g->p != '\n')
			g->p++;
	}
	if (g->p < g->end && *g->p == ']')
		g->p++;
	else
		ok = false;
	if (!ok || !n)
		g->section[0] = '\0';
}

/*
 * A value after '=': quotes, escapes, comments and continuations as git
 * reads them. Returns its length in out (NUL-terminated), or -1 when it is
 * not one git would take or holds a control character.
 */
static int value(struct gitparse *g, char *out, size_t size)
{
	size_t n = 0, keep = 0;
	bool quoted = false, bad = false;

	while (g->p < g->end && (*g->p == ' ' || *g->p == '\t'))
		g->p++;
	for (; g->p < g->end; g->p++) {
		char c = *g->p;

		if (c == '\n' && !quoted)
			break;
		if (c == '\r' && g->p + 1 < g->end && g->p[1] == '\n' && !quoted)
			continue;
		if (!quoted && (c == '#' || c == ';')) {
			skip_line(g);
			break;
		}
		if (c == '"') {
			quoted = !quoted;
			keep = n;
			continue;
		}
		if (c == '\\') {
			if (++g->p >= g->end)
				return -1;
			c = *g->p;
			if (c == '\n')
				continue; /* a continuation: the value goes on */
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'b' ? '\b' : c;
			if (c != '"' && c != '\\' && c != '\n' && c != '\t' && c != '\b')
				bad = true;
		} else if (c == '\n') {
			bad = true; /* a newline inside quotes: git refuses the file */
			break;
		}
		if ((unsigned char)c < 0x20 && c != '\t')
			bad = true;
		if (n + 1 >= size)
			bad = true;
		else
			out[n++] = c;
		if (quoted || (c != ' ' && c != '\t'))
			keep = n;
	}
	out[keep < n ? keep : n] = '\0';
	return bad ? -1 : (int)keep;
}

/* name = value, or name alone (true), after the blanks of a line. */
static void entry(struct gitparse *g)
{
	char key[32], val[GIT_VALUE_MAX];
	size_t n = 0;
	int len = -1;

	while (g->p < g->end && (isalnum((unsigned char)*g->p) || *g->p == '-') &&
	       n + 1 < sizeof(key))
		key[n++] = *g->p++;
	key[n] = '\0';
	while (g->p < g->end && (*g->p == ' ' || *g->p == '\t'))
		g->p++;
	if (!n || !isalpha((unsigned char)key[0])) {
		skip_line(g);
		return;
	}
	if (g->p < g->end && *g->p == '=') {
		g->p++;
		len = value(g, val, sizeof(val));
	} else {
		skip_line(g);
	}
	for (size_t i = 0; len >= 0 && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (g->section[0] && !strcmp(g->section, allowed[i][0]) &&
		    !strcasecmp(key, allowed[i][1])) {
			memcpy(g->values[i], val, (size_t)len + 1);
			g->have[i] = true;
		}
}

/* A value as git reads it back: quoted when it must be. */
static void put_value(FILE *out, const char *v)
{
	size_t n = strlen(v);
	bool quote = !n || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t' ||
		     strpbrk(v, "\"\\#;\n\t\b");

	if (!quote) {
		fputs(v, out);
		return;
	}
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', out);
		if (*v == '\n' || *v == '\t' || *v == '\b')
			fprintf(out, "\\%c", *v == '\n' ? 'n' : *v == '\t' ? 't' : 'b');
		else
			fputc(*v, out);
	}
	fputc('"', out);
}

void session_home_gitconfig(const char *text, size_t len, FILE *out)
{
	struct gitparse g = {.p = text, .end = text + len};
	const char *last = NULL;

	while (g.p < g.end) {
		char c = *g.p;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			g.p++;
		else if (c == '#' || c == ';')
			skip_line(&g);
		else if (c == '[')
			header(&g);
		else
			entry(&g);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		if (!g.have[i])
			continue;
		if (!last || strcmp(last, allowed[i][0]))
			fprintf(out, "[%s]\n", allowed[i][0]);
		last = allowed[i][0];
		fprintf(out, "\t%s = ", allowed[i][1]);
		put_value(out, g.values[i]);
		fputc('\n', out);
	}
}
