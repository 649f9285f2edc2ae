// SPDX-License-Identifier: GPL-2.0
/*
 * The redactor's rules keyed by the program (redact.c says where they are
 * tried): a password given after a flag that is a password only for that
 * program (sshpass -p, zip -P, 7z -pX, docker login -p, openssl -passin
 * pass:X, smbclient -U user%X, the third argument of htpasswd -b...), and
 * the password of a netrc line.
 *
 * The program is the last word so far of the same command (not across
 * ; | & ( ) or a newline) whose base name is in the table below: argv[0],
 * the word after sudo or env, or after docker exec or ssh HOST. So `ls -p
 * x` keeps x and `sudo sshpass -p x` does not. A walk over the words,
 * forward only (the w* members of struct scan), keeps what it needs: each
 * byte is walked once, whatever the number of words tried.
 */
#include <string.h>
#include <strings.h>

#include "redact_internal.h"

enum { V_NEXT = 1, V_GLUED = 2, V_EQ = 4 };

struct flag {
	const char *name;
	unsigned char form; /* V_*: the value in the next word, glued, after = */
	char after;	    /* the secret is what follows this character (user:pw) */
	const char *pfx;    /* the value must start with this, kept (pass:) */
};

struct prog {
	const char *name;
	bool prefix;	 /* mysql: also mysqldump, mysqladmin */
	const char *sub; /* a word that must come first: docker login */
	bool positional; /* htpasswd -b: the password is an operand */
	struct flag f[5];
};

#define P_LOGIN(n)                                              \
	{                                                       \
		n, false, "login", false,                       \
		{                                               \
			{                                       \
				"-p", V_NEXT | V_GLUED, 0, NULL \
			}                                       \
		}                                               \
	}
#define P_SMB(n)                                                   \
	{                                                          \
		n, false, NULL, false,                             \
		{                                                  \
			{"-U", V_NEXT | V_GLUED, '%', NULL},       \
			{                                          \
				"--user", V_NEXT | V_EQ, '%', NULL \
			}                                          \
		}                                                  \
	}
#define P_7Z(n)                                        \
	{                                              \
		n, false, NULL, false,                 \
		{                                      \
			{                              \
				"-p", V_GLUED, 0, NULL \
			}                              \
		}                                      \
	}

static const struct prog progs[] = {
	{"mysql", true, NULL, false, {{"-p", V_NEXT | V_GLUED, 0, NULL}}},
	{"mariadb", true, NULL, false, {{"-p", V_NEXT | V_GLUED, 0, NULL}}},
	{"curl",
	 false,
	 NULL,
	 false,
	 {{"-u", V_NEXT | V_GLUED, ':', NULL}, {"--user", V_NEXT | V_EQ, ':', NULL}}},
	{"sshpass", false, NULL, false, {{"-p", V_NEXT | V_GLUED, 0, NULL}}},
	P_LOGIN("docker"),
	P_LOGIN("podman"),
	P_LOGIN("nerdctl"),
	P_LOGIN("buildah"),
	P_LOGIN("helm"),
	P_LOGIN("az"),
	{"redis-cli", false, NULL, false, {{"-a", V_NEXT | V_GLUED, 0, NULL}}},
	P_SMB("smbclient"),
	P_SMB("rpcclient"),
	P_SMB("smbcacls"),
	P_SMB("smbget"),
	{"zip", false, NULL, false, {{"-P", V_NEXT | V_GLUED, 0, NULL}}},
	{"unzip", false, NULL, false, {{"-P", V_NEXT | V_GLUED, 0, NULL}}},
	P_7Z("7z"),
	P_7Z("7za"),
	P_7Z("7zr"),
	P_7Z("7zz"),
	{"ssh-keygen",
	 false,
	 NULL,
	 false,
	 {{"-N", V_NEXT | V_GLUED, 0, NULL}, {"-P", V_NEXT | V_GLUED, 0, NULL}}},
	{"openssl",
	 false,
	 NULL,
	 false,
	 {{"-pass", V_NEXT, 0, "pass:"},
	  {"-passin", V_NEXT, 0, "pass:"},
	  {"-passout", V_NEXT, 0, "pass:"},
	  {"-password", V_NEXT, 0, "pass:"},
	  {"-k", V_NEXT, 0, NULL}}},
	{"ldap", true, NULL, false, {{"-w", V_NEXT | V_GLUED, 0, NULL}}},
	{"mosquitto_pub", false, NULL, false, {{"-P", V_NEXT, 0, NULL}}},
	{"mosquitto_sub", false, NULL, false, {{"-P", V_NEXT, 0, NULL}}},
	{"nmcli",
	 false,
	 NULL,
	 false,
	 {{"password", V_NEXT, 0, NULL}, {"wifi-sec.psk", V_NEXT, 0, NULL}}},
	{"htpasswd", false, NULL, true, {{NULL, 0, 0, NULL}}},
};

/* Index + 1 of the program the word [a, e) names (its base name), or 0. */
static unsigned int prog_of(const struct scan *s, size_t a, size_t e)
{
	const void *slash;

	while ((slash = memchr(s->in + a, '/', e - a)))
		a = (const unsigned char *)slash - s->in + 1;
	if (e - a < 2 || e - a > 16 || !(cl(s, a) & (C_LOWER | C_DIGIT)))
		return 0;
	for (size_t k = 0; k < sizeof(progs) / sizeof(progs[0]); k++) {
		size_t n;

		if (progs[k].name[0] != s->in[a])
			continue;
		n = strlen(progs[k].name);
		if ((e - a == n || (progs[k].prefix && e - a > n)) &&
		    !memcmp(s->in + a, progs[k].name, n))
			return k + 1;
	}
	return 0;
}

/*
 * The end of the word at w for the walk: a blank or NUL outside quotes;
 * *sep is past the last command separator outside quotes in it, or 0.
 */
static size_t walk_word_end(const struct scan *s, size_t w, size_t *sep)
{
	unsigned char q = 0;

	*sep = 0;
	for (; w < s->len; w++) {
		unsigned char c = s->in[w];

		if (q) {
			if (c == q)
				q = 0;
			else if (!c)
				break;
			continue;
		}
		if (cl(s, w) & C_WS)
			break;
		if (cl(s, w) & C_QUOTE)
			q = c;
		else if (c == ';' || c == '|' || c == '&' || c == '(' || c == ')')
			*sep = w + 1;
	}
	return w;
}

static void walk_reset(struct scan *s)
{
	s->wprog = 0;
}

/* One word [a, e) of the command: a program, its subcommand, an operand. */
static void walk_word(struct scan *s, size_t a, size_t e)
{
	unsigned int k = prog_of(s, a, e);
	const struct prog *p;

	if (k) {
		s->wprog = k;
		s->wsub = s->wbatch = s->wnofile = false;
		s->wskip = s->wnpos = 0;
		return;
	}
	if (!s->wprog || a >= e)
		return;
	p = &progs[s->wprog - 1];
	if (p->sub && e - a == strlen(p->sub) && !memcmp(s->in + a, p->sub, e - a))
		s->wsub = true;
	if (!p->positional)
		return;
	if (s->wskip) {
		s->wskip--;
	} else if (s->in[a] == '-' && e - a > 1) {
		/* htpasswd: -C COST and -r ROUNDS take a value; -b batch, -n no file */
		if (e - a == 2 && (s->in[a + 1] == 'C' || s->in[a + 1] == 'r'))
			s->wskip = 1;
		else if (s->in[a + 1] != '-') {
			s->wbatch |= memchr(s->in + a, 'b', e - a) != NULL;
			s->wnofile |= memchr(s->in + a, 'n', e - a) != NULL;
		}
	} else if (s->wnpos < 255) {
		s->wnpos++;
	}
}

/* Walks the words before w: true when a word starts exactly at w. */
static bool walk_to(struct scan *s, size_t w)
{
	size_t p = s->wpos;

	for (;;) {
		size_t we, sep;

		while (p < s->len && (cl(s, p) & C_WS)) {
			if (s->in[p] == '\n')
				walk_reset(s);
			p++;
		}
		if (p >= w) {
			s->wpos = p;
			return p == w;
		}
		we = walk_word_end(s, p, &sep);
		if (sep)
			walk_reset(s);
		walk_word(s, sep ? sep : p, we);
		p = we;
	}
}

/* The secret in the value at v of flag f: after its character or prefix. */
static bool value_of(const struct scan *s, const struct flag *f, size_t v, size_t *a, size_t *b)
{
	if (f->pfx) {
		size_t n = strlen(f->pfx);

		if (s->len - v < n || memcmp(s->in + v, f->pfx, n))
			return false;
		return redact_value_span(s, v + n, false, a, b);
	}
	if (f->after) {
		size_t e;
		const void *c;

		if (v < s->len && (cl(s, v) & C_QUOTE))
			v++;
		e = redact_word_end(s, v);
		c = memchr(s->in + v, f->after, e - v);
		if (!c)
			return false;
		v = (const unsigned char *)c - s->in + 1;
		if (v >= e || is_marker(s, v, e))
			return false;
		*a = v;
		*b = e;
		return true;
	}
	return redact_value_span(s, v, false, a, b);
}

/* The word at w is flag f (or starts with it): the secret it gives, if any. */
static bool try_flag(const struct scan *s, const struct flag *f, size_t w, size_t e, size_t *a,
		     size_t *b)
{
	size_t n = strlen(f->name), v;

	if (e - w < n || memcmp(s->in + w, f->name, n))
		return false;
	if (e - w == n && e < s->len && (cl(s, e) & C_QUOTE) && (f->form & V_GLUED))
		return value_of(s, f, e, a, b); /* -p'pa ss' */
	if (e - w == n && (f->form & V_NEXT)) {
		for (v = e; v < s->len && (s->in[v] == ' ' || s->in[v] == '\t' || !s->in[v]); v++)
			;
		if (v >= s->len || s->in[v] == '-')
			return false; /* no value, or the next flag */
		return value_of(s, f, v, a, b);
	}
	if (e - w > n && (f->form & V_GLUED))
		return value_of(s, f, w + n, a, b);
	if (e - w > n && (f->form & V_EQ) && s->in[w + n] == '=')
		return value_of(s, f, w + n + 1, a, b);
	return false;
}

static bool is_word(const struct scan *s, size_t w, const char *word, size_t n)
{
	return s->len - w > n && !memcmp(s->in + w, word, n) && (cl(s, w + n) & C_WS);
}

/* i is at the blank or NUL before a word: a secret for the command's program. */
bool redact_try_cmd_flag(struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t w = i + 1, e;
	const struct prog *p;

	if (w >= s->len)
		return false;
	/*
	 * Only a flag, an operand of htpasswd (whose -b was a flag, walked) or
	 * nmcli's words can be a trigger: other words are walked later, at once.
	 */
	if (s->in[w] != '-' && !(s->wprog && progs[s->wprog - 1].positional) &&
	    !is_word(s, w, "password", 8) && !is_word(s, w, "wifi-sec.psk", 12))
		return false;
	if (!walk_to(s, w) || !s->wprog)
		return false;
	p = &progs[s->wprog - 1];
	if (p->sub && !s->wsub)
		return false;
	if (p->positional)
		return s->wbatch && !s->wskip && s->in[w] != '-' &&
		       s->wnpos + 1 == (s->wnofile ? 2 : 3) && redact_value_span(s, w, false, a, b);
	e = redact_word_end(s, w);
	for (const struct flag *f = p->f; f < p->f + 5 && f->name; f++)
		if (try_flag(s, f, w, e, a, b))
			return true;
	return false;
}

/*
 * A netrc line, "machine HOST login USER password SECRET": i is at the
 * blank after "password", and "machine" is a word of the 512 bytes before
 * (the prose "the password changed" has none).
 */
bool redact_try_netrc(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t w = i - 8, from, v;

	if (i < 8 || memcmp(s->in + w, "password", 8) || (w && !(cl(s, w - 1) & (C_WS | C_QUOTE))))
		return false;
	from = w > 512 ? w - 512 : 0;
	for (size_t k = from; k + 8 <= w; k++)
		if (!memcmp(s->in + k, "machine", 7) && (cl(s, k + 7) & C_WS) &&
		    (k == 0 || (cl(s, k - 1) & (C_WS | C_QUOTE)))) {
			for (v = i; v < s->len && (cl(s, v) & C_WS); v++)
				;
			return v < s->len && redact_value_span(s, v, false, a, b);
		}
	return false;
}
