// SPDX-License-Identifier: GPL-2.0
/*
 * The sinks: spec parsing and its errors, the config file section, file
 * rotation (nothing lost or doubled), a device that is always full
 * (/dev/full: counted loss, a sink.error for the others), type filters and
 * formats, and the syslog sinks against an in-process collector on
 * loopback: the RFC 5424 header, octet counting, an outage that spills to
 * the spool and is replayed in order, and UDP datagrams.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "audit/sink.h"
#include "scratch.h"
#include "unit_main.h"

#define SID "0123456789abcdef0123456789abcdef"

static char dir[64];
static char logbuf[8192];
static int sink_errors; /* sink.error events through the hook */

static int setup(void **state)
{
	(void)state;
	logbuf[0] = '\0';
	sink_errors = 0;
	return scratch_make(dir, sizeof(dir), "sink");
}

static int teardown(void **state)
{
	(void)state;
	scratch_remove(dir);
	return 0;
}

static void on_log(void *ctx, const char *msg)
{
	(void)ctx;
	strncat(logbuf, msg, sizeof(logbuf) - strlen(logbuf) - 2);
	strcat(logbuf, "\n");
}

static void on_event(void *ctx, const struct audit_event *ev)
{
	(void)ctx;
	if (ev->kind == EV_SINK_ERROR)
		sink_errors++;
}

static struct sinks *open_sinks(const char *const *specs, size_t n)
{
	struct sinks_opts o = {.log = on_log, .on_event = on_event};
	struct sink_config *cfg = calloc(n, sizeof(*cfg));
	struct sinks *s = NULL;
	char err[1024];

	assert_non_null(cfg);
	for (size_t i = 0; i < n; i++)
		if (sink_config_parse(specs[i], &cfg[i], err, sizeof(err)) < 0)
			fail_msg("%s: %s", specs[i], err);
	if (sinks_open(&s, cfg, n, &o, err, sizeof(err)) < 0)
		fail_msg("sinks_open: %s", err);
	free(cfg);
	return s;
}

/* One event line like the daemon's (newline included), about pad bytes long. */
static size_t event_d(char *buf, size_t size, const char *type, int seq, size_t pad,
		      const char *decision)
{
	int n = snprintf(
		buf, size,
		"{\"schema_version\":4,\"type\":\"%s\",\"time\":\"2026-01-02T03:04:05.123456789Z\","
		"\"session\":\"" SID "\",\"seq\":%d,\"decision\":\"%s\",\"pad\":\"",
		type, seq, decision);

	while ((size_t)n < pad && (size_t)n < size - 4)
		buf[n++] = 'p';
	n += snprintf(buf + n, size - n, "\"}\n");
	return n;
}

static size_t event(char *buf, size_t size, const char *type, int seq, size_t pad)
{
	return event_d(buf, size, type, seq, pad, "allow");
}

/*
 * Hands a line of event_d() to the sinks as its producer would: with its
 * kind, decision and time (2026-01-02T03:04:05.123456789Z) beside it.
 */
static void emit(struct sinks *s, const char *line, size_t len)
{
	struct tm tm = {
		.tm_year = 126, .tm_mon = 0, .tm_mday = 2, .tm_hour = 3, .tm_min = 4, .tm_sec = 5};
	struct audit_event ev = {.line = line, .len = len};
	char type[32];

	assert_int_equal(sscanf(line, "{\"schema_version\":4,\"type\":\"%31[^\"]", type), 1);
	assert_true(ev_kind_parse(type) >= 0);
	ev.kind = ev_kind_parse(type);
	ev.decision = strstr(line, "\"decision\":\"deny\"") ? AUDIT_DECISION_DENY
							    : AUDIT_DECISION_NONE;
	ev.time_ns = (int64_t)timegm(&tm) * 1000000000LL + 123456789;
	sinks_emit(s, &ev);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, n + 1);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* --- specs ---------------------------------------------------------------- */

static void test_parse(void **state)
{
	struct sink_config c;
	char err[512];

	(void)state;
	assert_int_equal(sink_config_parse("file:/var/log/bpfbox/audit.jsonl?rotate=100M&keep=7&"
					   "fsync=events:50&format=ocsf&types=exec,loss",
					   &c, err, sizeof(err)),
			 0);
	assert_int_equal(c.kind, SINK_FILE);
	assert_string_equal(c.path, "/var/log/bpfbox/audit.jsonl");
	assert_string_equal(c.name, "file:/var/log/bpfbox/audit.jsonl");
	assert_int_equal(c.rotate_bytes, 100ULL << 20);
	assert_int_equal(c.keep, 7);
	assert_int_equal(c.fsync, SINK_FSYNC_EVENTS);
	assert_int_equal(c.fsync_events, 50);
	assert_int_equal(c.format, SINK_FMT_OCSF);
	assert_int_equal(c.types, (1U << EV_EXEC) | (1U << EV_LOSS));

	assert_int_equal(
		sink_config_parse("file:/a%20b?fsync=interval:250ms", &c, err, sizeof(err)), 0);
	assert_string_equal(c.path, "/a b");
	assert_int_equal(c.fsync, SINK_FSYNC_INTERVAL);
	assert_int_equal(c.fsync_interval_ns, 250000000ULL);

	assert_int_equal(sink_config_parse("syslog+tls://siem.example.com:6514?ca=/etc/ca.pem&"
					   "cert=/etc/c.pem&key=/etc/c.key&peer=collector",
					   &c, err, sizeof(err)),
			 0);
	assert_int_equal(c.kind, SINK_SYSLOG_TLS);
	assert_string_equal(c.host, "siem.example.com");
	assert_string_equal(c.tls_ca, "/etc/ca.pem");
	assert_string_equal(c.tls_cert, "/etc/c.pem");
	assert_string_equal(c.tls_key, "/etc/c.key");
	assert_string_equal(c.tls_name, "collector");
	assert_string_equal(c.spool_dir, SINK_SPOOL_ROOT "/tls-siem.example.com-6514");
	assert_int_equal(sink_config_parse("syslog+tls://h:1?cert=/c.pem", &c, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "cert and key go together"));
	assert_int_equal(sink_config_parse("syslog+tls://h:1?ca=rel.pem", &c, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(sink_config_parse("syslog+tcp://h:1?ca=/ca.pem", &c, err, sizeof(err)),
			 -EINVAL); /* a TLS key on a plain TCP sink */

	assert_int_equal(sink_config_parse("syslog+udp://[::1]:6514?facility=authpriv&queue=1M&"
					   "confirm=2s&hostname=h1&name=siem",
					   &c, err, sizeof(err)),
			 0);
	assert_int_equal(c.kind, SINK_SYSLOG_UDP);
	assert_string_equal(c.host, "::1");
	assert_string_equal(c.port, "6514");
	assert_int_equal(c.facility, 10);
	assert_int_equal(c.queue_bytes, 1U << 20);
	assert_int_equal(c.confirm_ns, 2000000000ULL);
	assert_string_equal(c.hostname, "h1");
	assert_string_equal(c.name, "siem");
	assert_string_equal(c.spool_dir, SINK_SPOOL_ROOT "/udp-__1-6514");

	assert_int_equal(sink_config_parse("syslog+tcp://logs.example.com", &c, err, sizeof(err)),
			 0);
	assert_string_equal(c.port, "514");
	assert_int_equal(c.facility, 16);
	assert_int_equal(c.confirm_ns, SINK_CONFIRM_DEFAULT);
	assert_string_equal(c.spool_dir, SINK_SPOOL_ROOT "/tcp-logs.example.com-514");

	assert_int_equal(sink_config_parse("stdout", &c, err, sizeof(err)), 0);
	assert_int_equal(c.kind, SINK_STDOUT);
	assert_int_equal(c.format, SINK_FMT_JSON);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *spec, *want;
	} rows[] = {
		{"file:/x?rotat=1M",
		 "unknown key 'rotat'; valid keys for a file sink: format, types, "
		 "name, queue, rotate, keep, fsync"},
		{"stdout?rotate=1M", "unknown key 'rotate'; valid keys for the stdout sink"},
		{"syslog+tcp://h:1?keep=2", "unknown key 'keep'; valid keys for a syslog+tcp sink"},
		{"file:x", "file: give an absolute path"},
		{"file:/x?rotate=100", "rotate: '100': give a size of at least 4K"},
		{"file:/x?rotate=1T", "rotate: '1T'"},
		{"file:/x?keep=0", "keep: '0': give a number of files from 1 to 999"},
		{"file:/x?fsync=sometimes", "fsync: 'sometimes': use never, rotate, always"},
		{"file:/x?fsync=events:0", "fsync: 'events:0'"},
		{"file:/x?keep=1&keep=2", "keep: given twice"},
		{"file:/x?keep", "'keep' is not KEY=VALUE"},
		{"file:/x?keep=", "keep: give a value"},
		{"file:/x?format=xml", "format: 'xml': use json, ocsf or text"},
		{"file:/x?types=exec,bogus", "types: unknown event type 'bogus'"},
		{"file:/x%zz", "file: give an absolute path"},
		{"syslog+tcp://h:0", "port '0': give a number from 1 to 65535"},
		{"syslog+tcp://h:99999", "port '99999'"},
		{"syslog+tcp://[::1", "needs its closing ']'"},
		{"syslog+tcp://h/x:1", "not an address or a host name"},
		{"syslog+udp://h:1?facility=nope", "facility: 'nope'"},
		{"syslog+udp://h:1?spool=rel", "spool: 'rel': give an absolute directory"},
		{"syslog+udp://h:1?spool_max=10K", "spool_max: '10K': give a size of at least 1M"},
		{"syslog+udp://h:1?confirm=2m", "confirm: '2m': give a duration up to 60s"},
		{"syslog+udp://h:1?queue=1K", "queue: '1K': give a size from 64K to 1G"},
		{"syslog+udp://h:1?hostname=a%20b", "hostname: 'a b'"},
		{"kafka://h", "unknown sink 'kafka://h'; use stdout, file:PATH"},
	};
	struct sink_config c;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		if (sink_config_parse(rows[i].spec, &c, err, sizeof(err)) != -EINVAL ||
		    !strstr(err, rows[i].want))
			fail_msg("%s: got '%s', want '%s'", rows[i].spec, err, rows[i].want);
	}
}

static void test_config_file(void **state)
{
	struct sink_config *v = NULL;
	size_t n = 0;
	char path[128], err[1024];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/daemon.json", dir);
	f = fopen(path, "w");
	fputs("{\"sinks\": [\"stdout?format=text\", \"file:/var/log/a.jsonl?rotate=1M\"]}", f);
	fclose(f);
	assert_int_equal(sink_config_load(path, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].format, SINK_FMT_TEXT);
	assert_int_equal(v[1].rotate_bytes, 1 << 20);

	f = fopen(path, "w");
	fputs("{\"sinks\": [\"stdout\", \"file:/a?keep=x\"]}", f);
	fclose(f);
	assert_int_equal(sink_config_load(path, &v, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sinks[1] 'file:/a?keep=x': keep: 'x'"));

	f = fopen(path, "w");
	fputs("{\"sinks\": [], \"socket\": \"/x\"}", f);
	fclose(f);
	assert_int_equal(sink_config_load(path, &v, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'socket'; valid keys: sinks"));

	f = fopen(path, "w");
	fputs("{\"sinks\": \"stdout\"", f);
	fclose(f);
	assert_int_equal(sink_config_load(path, &v, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a JSON object"));
	assert_int_equal(n, 3); /* the good entry before the bad one stayed */
	free(v);
}

/* --- files ---------------------------------------------------------------- */

static void test_rotation(void **state)
{
	char spec[256], path[128], name[160], line[256];
	const char *specs[1] = {spec};
	struct sinks *s;
	char *all = calloc(1, 200 * 256), *kept = calloc(1, 200 * 256);
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/a.jsonl", dir);
	snprintf(spec, sizeof(spec), "file:%s?rotate=4K&keep=2&fsync=rotate", path);
	s = open_sinks(specs, 1);
	for (int i = 0; i < 200; i++) {
		size_t n = event(line, sizeof(line), "file", i, 150);

		strncat(all, line, n);
		emit(s, line, n);
		if (i % 7 == 0)
			sinks_flush(s);
	}
	sinks_close(s);
	for (int i = 2; i >= 0; i--) {
		char *text;

		if (i)
			snprintf(name, sizeof(name), "%s.%d", path, i);
		else
			snprintf(name, sizeof(name), "%s", path);
		assert_int_equal(stat(name, &st), 0);
		assert_true(st.st_size <= 4096 && st.st_size > 0);
		text = slurp(name);
		strcat(kept, text);
		free(text);
	}
	snprintf(name, sizeof(name), "%s.3", path);
	assert_int_not_equal(stat(name, &st), 0);
	/* The kept files, oldest first, are the tail of what was emitted. */
	assert_true(strlen(kept) > 8000);
	assert_string_equal(all + strlen(all) - strlen(kept), kept);
	free(all);
	free(kept);
}

static void test_full_device(void **state)
{
	char spec[160], path[128], line[256];
	const char *specs[2] = {"file:/dev/full", spec};
	struct sinks *s;
	char *text;

	(void)state;
	snprintf(path, sizeof(path), "%s/b.jsonl", dir);
	snprintf(spec, sizeof(spec), "file:%s", path);
	s = open_sinks(specs, 2);
	for (int i = 0; i < 10; i++)
		emit(s, line, event(line, sizeof(line), "exec", i, 0));
	sinks_flush(s);
	for (int i = 10; i < 20; i++)
		emit(s, line, event(line, sizeof(line), "exec", i, 0));
	sinks_close(s);
	/* Said once in the log and once as an event to the other sink. */
	assert_non_null(
		strstr(logbuf, "sink file:/dev/full: cannot write: No space left on device"));
	assert_null(strstr(strstr(logbuf, "cannot write") + 1, "cannot write"));
	assert_non_null(strstr(logbuf, "20 events could not be written before closing"));
	assert_int_equal(sink_errors, 1);
	text = slurp(path);
	assert_non_null(strstr(text, "\"type\":\"sink.error\",\"time\":"));
	assert_non_null(strstr(text, "\"sink\":\"file:/dev/full\",\"error\":\"ENOSPC\""));
	assert_non_null(strstr(text, "\"seq\":19,"));
	free(text);
}

static void test_types_and_text(void **state)
{
	char spec[160], path[128], line[256];
	const char *specs[1] = {spec};
	struct sinks *s;
	char *text;

	(void)state;
	snprintf(path, sizeof(path), "%s/t.txt", dir);
	snprintf(spec, sizeof(spec), "file:%s?format=text&types=exec", path);
	s = open_sinks(specs, 1);
	emit(s, line, event(line, sizeof(line), "exec", 1, 0));
	emit(s, line, event(line, sizeof(line), "file", 2, 0));
	emit(s, line, event(line, sizeof(line), "exec", 3, 0));
	sinks_close(s);
	text = slurp(path);
	assert_string_equal(text, "2026-01-02T03:04:05.123Z 01234567 #1 exec allow ? argv:\n"
				  "2026-01-02T03:04:05.123Z 01234567 #3 exec allow ? argv:\n");
	free(text);
}

/* --- syslog --------------------------------------------------------------- */

struct collector {
	int lfd, cfd, port;
	char *buf;
	size_t len, cap;
	char *old; /* what an earlier connection brought */
	size_t old_len;
};

static void collector_listen(struct collector *c, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port)};
	socklen_t len = sizeof(sa);
	int one = 1;

	c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(c->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(c->lfd, 4), 0);
	getsockname(c->lfd, (struct sockaddr *)&sa, &len);
	c->port = ntohs(sa.sin_port);
	c->cfd = -1;
}

static void collector_stop(struct collector *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	close(c->lfd);
	c->cfd = c->lfd = -1;
}

static void collector_pump(struct collector *c)
{
	if (c->cfd < 0 && c->lfd >= 0)
		c->cfd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK);
	while (c->cfd >= 0) {
		ssize_t n;

		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? c->cap * 2 : 1 << 20;
			c->buf = realloc(c->buf, c->cap);
		}
		n = recv(c->cfd, c->buf + c->len, c->cap - c->len, 0);
		if (n <= 0) {
			if (n == 0) {
				close(c->cfd);
				c->cfd = -1;
			}
			break;
		}
		c->len += n;
	}
}

/* The octet-counted frames of one connection's bytes (a cut last one ignored). */
static void frames_of(const char *buf, size_t blen, void (*fn)(void *, const char *, size_t),
		      void *ctx)
{
	size_t off = 0;

	while (off < blen) {
		char *end;
		unsigned long len = strtoul(buf + off, &end, 10);

		if (end == buf + off || *end != ' ' || end + 1 + len > buf + blen)
			break;
		fn(ctx, end + 1, len);
		off = end + 1 - buf + len;
	}
}

static void frames(const struct collector *c, void (*fn)(void *, const char *, size_t), void *ctx)
{
	if (c->old)
		frames_of(c->old, c->old_len, fn, ctx);
	if (c->buf)
		frames_of(c->buf, c->len, fn, ctx);
}

struct seen {
	int first[4096];
	int nfirst;
	char have[4096];
	int dups;
	char msg0[512];
};

static void collect(void *ctx, const char *msg, size_t len)
{
	struct seen *s = ctx;
	const char *p = memmem(msg, len, "\"seq\":", 6);
	int seq;

	if (!s->msg0[0])
		snprintf(s->msg0, sizeof(s->msg0), "%.*s", (int)len, msg);
	if (!p || sscanf(p + 6, "%d", &seq) != 1 || seq < 0 || seq >= 4096)
		return;
	if (s->have[seq]) {
		s->dups++;
		return;
	}
	s->have[seq] = 1;
	s->first[s->nfirst++] = seq;
}

static struct seen *pump_until(struct sinks *s, struct collector *c, int want, int secs)
{
	struct seen *seen = calloc(1, sizeof(*seen));
	time_t until = time(NULL) + secs;

	do {
		struct pollfd p = {.fd = sinks_fd(s), .events = POLLIN};

		poll(&p, 1, 10);
		sinks_dispatch(s);
		collector_pump(c);
		memset(seen, 0, sizeof(*seen));
		frames(c, collect, seen);
	} while (seen->nfirst < want && time(NULL) < until);
	return seen;
}

static void test_syslog_tcp_outage(void **state)
{
	struct collector c = {0};
	char spec[256], line[512];
	const char *specs[1] = {spec};
	struct sinks *s;
	struct seen *seen;
	char *hdr_end;
	int n = 0;

	(void)state;
	collector_listen(&c, 0);
	snprintf(spec, sizeof(spec),
		 "syslog+tcp://127.0.0.1:%d?spool=%s/spool&queue=64K&confirm=300ms&hostname=h1",
		 c.port, dir);
	s = open_sinks(specs, 1);
	for (; n < 100; n++)
		emit(s, line, event(line, sizeof(line), "exec", n, 200));
	seen = pump_until(s, &c, 100, 5);
	assert_int_equal(seen->nfirst, 100);
	/* <local0.info>1 TIMESTAMP(µs) HOSTNAME APP PROCID MSGID - MSG */
	hdr_end = strstr(seen->msg0, " - {");
	assert_non_null(hdr_end);
	*hdr_end = '\0';
	{
		char want[128];

		snprintf(want, sizeof(want), "<134>1 2026-01-02T03:04:05.123456Z h1 bpfbox %d exec",
			 (int)getpid());
		assert_string_equal(seen->msg0, want);
	}
	free(seen);

	/* The collector goes; 2000 more events (~500 KB) outgrow the 64 KiB queue. */
	collector_pump(&c);
	collector_stop(&c);
	for (; n < 2100; n++) {
		emit(s, line, event(line, sizeof(line), "file", n, 200));
		if (n % 100 == 0)
			sinks_dispatch(s);
	}
	sinks_flush(s);
	assert_non_null(strstr(logbuf, "events are kept"));
	/* It comes back on the same port: everything arrives, in order. */
	c.old = c.buf;
	c.old_len = c.len;
	c.buf = NULL;
	c.len = c.cap = 0;
	collector_listen(&c, c.port);
	seen = pump_until(s, &c, 2100, 20);
	assert_int_equal(seen->nfirst, 2100);
	for (int i = 0; i < 2100; i++)
		assert_int_equal(seen->first[i], i);
	{
		const char *p = strstr(logbuf, "connected again; ");
		unsigned long mem = 0, spooled = 0;

		assert_non_null(p);
		assert_int_equal(
			sscanf(p, "connected again; %lu events in memory and %lu in the spool",
			       &mem, &spooled),
			2);
		assert_true(spooled > 0); /* the 64 KiB queue spilled */
	}
	free(seen);
	sinks_close(s);
	collector_stop(&c);
	free(c.buf);
	free(c.old);
}

/* Shutdown with the collector gone: the next start sends what was kept. */
static void test_syslog_spool_across_restart(void **state)
{
	struct collector c = {0};
	char spec[256], line[512];
	const char *specs[1] = {spec};
	struct sinks *s;
	struct seen *seen;
	int port;

	(void)state;
	collector_listen(&c, 0);
	port = c.port;
	collector_stop(&c);
	snprintf(spec, sizeof(spec), "syslog+tcp://127.0.0.1:%d?spool=%s/spool2", port, dir);
	s = open_sinks(specs, 1);
	for (int i = 0; i < 300; i++)
		emit(s, line, event(line, sizeof(line), "exec", i, 100));
	sinks_close(s);
	assert_non_null(strstr(logbuf, "300 events kept in the spool"));

	memset(&c, 0, sizeof(c));
	collector_listen(&c, port);
	s = open_sinks(specs, 1);
	assert_non_null(strstr(logbuf, "300 events from the spool"));
	seen = pump_until(s, &c, 300, 10);
	assert_int_equal(seen->nfirst, 300);
	for (int i = 0; i < 300; i++)
		assert_int_equal(seen->first[i], i);
	free(seen);
	sinks_close(s);
	collector_stop(&c);
	free(c.buf);
}

static void test_syslog_udp(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	char spec[256], line[512], dgram[2048];
	const char *specs[1] = {spec};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), got = 0, rcv = 1 << 20;
	struct sinks *s;
	time_t until = time(NULL) + 5;

	(void)state;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	snprintf(spec, sizeof(spec), "syslog+udp://127.0.0.1:%d?spool=%s/uspool&facility=auth",
		 ntohs(sa.sin_port), dir);
	s = open_sinks(specs, 1);
	for (int i = 0; i < 50; i++) {
		emit(s, line, event_d(line, sizeof(line), "connect", i, 100, "deny"));
	}
	sinks_flush(s);
	while (got < 50 && time(NULL) < until) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0) {
			sinks_dispatch(s);
			continue;
		}
		n = recv(fd, dgram, sizeof(dgram) - 1, 0);
		assert_true(n > 0);
		dgram[n] = '\0';
		/* No octet count over UDP; auth.notice for a denial. */
		assert_true(!strncmp(dgram, "<37>1 2026-01-02T03:04:05.123456Z ", 34));
		assert_non_null(strstr(dgram, " bpfbox "));
		assert_non_null(strstr(dgram, " connect - {\"schema_version\":4"));
		got++;
	}
	assert_int_equal(got, 50);
	sinks_close(s);
	close(fd);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN(T(test_parse), T(test_parse_errors), T(test_config_file), T(test_rotation),
	  T(test_full_device), T(test_types_and_text), T(test_syslog_tcp_outage),
	  T(test_syslog_spool_across_restart), T(test_syslog_udp))
