// SPDX-License-Identifier: GPL-2.0
/*
 * Secrets held by the proxy (docs/network.md, "Secrets"): their values read
 * once from the caller's variables or files, a random placeholder for each
 * (what the session sees), and the search for a placeholder where it must
 * not go (a name, a request to another host).
 */
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "egress_internal.h"

#define SECRET_MAX_BYTES 65536

static int read_value(const char *path, char **out, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	buf = malloc(SECRET_MAX_BYTES + 1);
	if (!buf)
		return -ENOMEM;
	while (got < SECRET_MAX_BYTES && (n = read(fd, buf + got, SECRET_MAX_BYTES - got)) > 0)
		got += n;
	if (got == SECRET_MAX_BYTES) {
		explicit_bzero(buf, got);
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = got;
	return 0;
}

/* One secret: its value, checked, and its placeholder. */
static int load_one(struct egress_secret *s, const struct secret_spec *spec, char *err, size_t size)
{
	uint8_t rnd[16];
	const char *v;
	int r;

	snprintf(s->name, sizeof(s->name), "%s", spec->name);
	memcpy(s->hosts, spec->hosts, sizeof(s->hosts));
	s->n_hosts = spec->n_hosts;
	s->query = spec->query;
	if (spec->path[0]) {
		r = read_value(spec->path, &s->value, &s->len);
		if (r < 0) {
			snprintf(err, size, "--secret %s: cannot read %s: %s", s->name, spec->path,
				 r == -EINVAL ? "not a regular file" : strerror(-r));
			return r;
		}
	} else {
		v = getenv(spec->name);
		if (!v || !*v) {
			snprintf(err, size,
				 "--secret %s: the variable %s is not set here; export it, or use "
				 "%s=file:PATH@HOST",
				 s->name, s->name, s->name);
			return -ENOENT;
		}
		s->len = strlen(v);
		s->value = malloc(s->len + 1);
		if (!s->value)
			return -ENOMEM;
		memcpy(s->value, v, s->len);
	}
	/* A file's last line break is not part of the token. */
	while (s->len && (s->value[s->len - 1] == '\n' || s->value[s->len - 1] == '\r'))
		s->len--;
	s->value[s->len] = '\0';
	for (size_t i = 0; i < s->len; i++) {
		if (s->value[i] == '\r' || s->value[i] == '\n' || s->value[i] == '\0') {
			snprintf(err, size,
				 "--secret %s: the value holds a line break or NUL (it would end "
				 "the header it is put in)",
				 s->name);
			return -EINVAL;
		}
	}
	if (!s->len) {
		snprintf(err, size, "--secret %s: the value is empty", s->name);
		return -EINVAL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
	snprintf(s->placeholder, sizeof(s->placeholder), "bpfbox-secret-%s-%s", s->name, s->token);
	return 0;
}

int egress_secrets_load(struct egress_secrets *out, const struct strv *specs, char *err,
			size_t size)
{
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!specs || !specs->n)
		return 0;
	out->v = calloc(specs->n, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < specs->n && !r; i++) {
		struct secret_spec spec;
		const char *why;

		r = secret_spec_parse(specs->v[i], &spec, &why);
		if (r < 0)
			snprintf(err, size, "--secret: %s", why);
		else
			r = load_one(&out->v[out->n++], &spec, err, size);
	}
	if (r == -ENOMEM)
		snprintf(err, size, "--secret: out of memory");
	if (r < 0)
		egress_secrets_free(out);
	return r;
}

void egress_secrets_free(struct egress_secrets *s)
{
	for (size_t i = 0; s && i < s->n; i++) {
		if (s->v[i].value) {
			explicit_bzero(s->v[i].value, s->v[i].len);
			free(s->v[i].value);
		}
	}
	if (s) {
		free(s->v);
		memset(s, 0, sizeof(*s));
	}
}

int eg_secrets_copy(struct egress_secrets *dst, const struct egress_secrets *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src || !src->n)
		return 0;
	dst->v = calloc(src->n, sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].value = malloc(src->v[i].len + 1);
		if (!dst->v[i].value) {
			egress_secrets_free(dst);
			return -ENOMEM;
		}
		memcpy(dst->v[i].value, src->v[i].value, src->v[i].len + 1);
		dst->n++;
	}
	return 0;
}

/* Whether needle (lower-case hex) is in p[0, len), in any case. */
static bool has_token(const uint8_t *p, size_t len, const char *needle)
{
	size_t nl = strlen(needle);

	for (size_t i = 0; i + nl <= len; i++)
		if (tolower(p[i]) == needle[0] && !strncasecmp((const char *)p + i, needle, nl))
			return true;
	return false;
}

bool eg_secret_for_host(const struct egress_secret *s, const char *host)
{
	for (size_t j = 0; j < s->n_hosts; j++)
		if (!strcasecmp(s->hosts[j], host))
			return true;
	return false;
}

const struct egress_secret *eg_secret_in(const struct egress *e, const void *p, size_t len,
					 const char *host)
{
	const struct egress_secrets *ss = e->o.secrets;

	for (size_t i = 0; ss && i < ss->n; i++)
		if ((!host || !eg_secret_for_host(&ss->v[i], host)) &&
		    has_token(p, len, ss->v[i].token))
			return &ss->v[i];
	return NULL;
}

const struct egress_secret *eg_secret_in_flow(const struct egress *e, struct eg_tail *t,
					      const void *p, size_t len, const char *host)
{
	const struct egress_secret *s = eg_secret_in(e, p, len, host);
	const uint8_t *q = p;
	uint8_t joint[2 * EG_TAIL];
	size_t k = len < EG_TAIL ? len : EG_TAIL, keep;

	if (!s && t->len) {
		memcpy(joint, t->b, t->len);
		memcpy(joint + t->len, q, k);
		s = eg_secret_in(e, joint, t->len + k, host);
	}
	/* The flow's last EG_TAIL bytes. */
	keep = len >= EG_TAIL ? 0 : t->len + len > EG_TAIL ? EG_TAIL - len : t->len;
	memmove(t->b, t->b + t->len - keep, keep);
	memcpy(t->b + keep, q + len - k, k);
	t->len = keep + k;
	return s;
}

bool eg_secret_leak(const struct egress *e, const void *p, size_t len, const char *where, char *why,
		    size_t size)
{
	const struct egress_secret *s = eg_secret_in(e, p, len, NULL);

	if (s)
		snprintf(why, size, "placeholder of secret %.40s in %s", s->name, where);
	return s != NULL;
}

bool eg_secret_name_leak(const struct egress *e, const char *name, char *why, size_t size)
{
	return eg_secret_leak(e, name, strlen(name), "the name", why, size);
}
