// SPDX-License-Identifier: GPL-2.0
/*
 * The exposition of the daemon's metrics (docs/operating.md): the host's
 * level and probes, sessions, events by type and decision, denials by
 * layer, sinks, request latency, BPF program run counts; read from the
 * daemon's state at scrape time.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "metrics_internal.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../lib/util.h"

/* A label value: backslash, quote and newline escaped (exposition format). */
static const char *lv(const char *s, char *buf, size_t size)
{
	size_t j = 0;

	for (; s && *s && j + 3 < size; s++) {
		if (*s == '\\' || *s == '"') {
			buf[j++] = '\\';
			buf[j++] = *s;
		} else if (*s == '\n') {
			buf[j++] = '\\';
			buf[j++] = 'n';
		} else {
			buf[j++] = *s;
		}
	}
	buf[j] = 0;
	return buf;
}

static void head(struct jsonw *o, const char *name, const char *type, const char *help)
{
	jsonw_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_sessions(struct jsonw *o, struct daemon *d)
{
	static const enum dsession_state states[] = {DS_REGISTERED, DS_RUNNING, DS_ADOPTED,
						     DS_ENDING, DS_PAUSED};
	static const char *const levels[] = {"None", "Minimal", "Standard", "Full", ""};
	uint64_t n[5][5] = {{0}};

	for (struct dsession *s = d->table.head; s; s = s->next) {
		size_t l = 0;

		while (l < 4 && !streq(levels[l], s->level))
			l++;
		for (size_t i = 0; i < 5; i++)
			if (states[i] == s->state)
				n[i][l]++;
	}
	head(o, "bpfbox_sessions", "gauge",
	     "Sessions the daemon holds, by state and enabled level (\"unknown\": re-adopted).");
	for (size_t i = 0; i < 5; i++)
		for (size_t l = 0; l < 5; l++)
			jsonw_printf(o, "bpfbox_sessions{state=\"%s\",level=\"%s\"} %llu\n",
				     dsession_state_name(states[i]), l < 4 ? levels[l] : "unknown",
				     (unsigned long long)n[i][l]);
}

static void render_events(struct jsonw *o, struct metrics *m, struct daemon *d)
{
	head(o, "bpfbox_events_total", "counter",
	     "Audit events the daemon emitted, by type and decision (\"none\": no decision).");
	for (int k = 0; k < EV_KINDS; k++)
		for (int dec = 0; dec < NDEC; dec++) {
			bool rec = k == EV_EXEC || k == EV_EXIT || k == EV_FORK || k == EV_FILE ||
				   k == EV_CONNECT || k == EV_RENAME;

			if (rec == (dec == DEC_NONE))
				continue;
			jsonw_printf(o, "bpfbox_events_total{type=\"%s\",decision=\"%s\"} %llu\n",
				     ev_kind_name(k), metrics_decisions[dec],
				     (unsigned long long)m->events[k][dec]);
		}
	head(o, "bpfbox_denials_total", "counter", "Denied operations, by the layer that denied.");
	for (size_t i = 0; i < NLAYERS; i++)
		jsonw_printf(o, "bpfbox_denials_total{layer=\"%s\"} %llu\n", metrics_layers[i],
			     (unsigned long long)m->denials[i]);
	head(o, "bpfbox_ring_lost_events_total", "counter",
	     "Records the kernel could not put in the ring buffer (every session).");
	jsonw_printf(o, "bpfbox_ring_lost_events_total %llu\n",
		     (unsigned long long)agent_lost_total(d->agent));
	head(o, "bpfbox_unknown_records_total", "counter",
	     "Records of no session the daemon knows, dropped.");
	jsonw_printf(o, "bpfbox_unknown_records_total %llu\n",
		     (unsigned long long)d->unknown_records);
}

static void render_sinks(struct jsonw *o, struct daemon *d)
{
	struct sink_stats st[64];
	size_t n = sinks_stats(d->sinks, st, 64);
	char a[SINK_NAME_MAX * 2], b[32];
	static const struct {
		const char *name, *type, *help;
	} series[] = {
		{"bpfbox_sink_up", "gauge", "1 when the sink writes (a network sink: connected)."},
		{"bpfbox_sink_queue_events", "gauge", "Events held in memory by the sink."},
		{"bpfbox_sink_queue_bytes", "gauge", "Bytes held in memory by the sink."},
		{"bpfbox_sink_dropped_events_total", "counter",
		 "Events the sink lost (bounds, write failures) since the daemon started."},
		{"bpfbox_sink_retries_total", "counter",
		 "Failed writes or connections of the sink that are tried again."},
		{"bpfbox_sink_spool_bytes", "gauge", "Bytes in the sink's spool on disk."},
		{"bpfbox_sink_spool_events", "gauge", "Events in the sink's spool on disk."},
	};

	if (n > 64)
		n = 64;
	for (size_t k = 0; k < ARRAY_SIZE(series); k++) {
		head(o, series[k].name, series[k].type, series[k].help);
		for (size_t i = 0; i < n; i++) {
			uint64_t v[] = {st[i].up,	    st[i].queued,  st[i].queued_bytes,
					st[i].dropped,	    st[i].retries, st[i].spool_bytes,
					st[i].spool_records};

			jsonw_printf(o, "%s{sink=\"%s\",kind=\"%s\"} %llu\n", series[k].name,
				     lv(st[i].name, a, sizeof(a)), lv(st[i].kind, b, sizeof(b)),
				     (unsigned long long)v[k]);
		}
	}
}

static void render_requests(struct jsonw *o, struct metrics *m)
{
	head(o, "bpfbox_request_duration_seconds", "histogram",
	     "Time the daemon took to answer a request on its socket, by op (register: the "
	     "session's setup).");
	for (size_t i = 0; i < NOPS; i++) {
		for (size_t b = 0; b < NBUCKETS; b++)
			jsonw_printf(
				o, "bpfbox_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n",
				metrics_ops[i], metrics_buckets[b],
				(unsigned long long)m->req_bucket[i][b]);
		jsonw_printf(o,
			     "bpfbox_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n",
			     metrics_ops[i], (unsigned long long)m->req_count[i]);
		jsonw_printf(o, "bpfbox_request_duration_seconds_sum{op=\"%s\"} %.9f\n",
			     metrics_ops[i], m->req_sum[i]);
		jsonw_printf(o, "bpfbox_request_duration_seconds_count{op=\"%s\"} %llu\n",
			     metrics_ops[i], (unsigned long long)m->req_count[i]);
	}
}

struct prog_render {
	struct jsonw *o;
	int pass;
};

static void prog_line(void *ctx, const struct agent_prog_stat *st)
{
	struct prog_render *r = ctx;
	char a[160];

	if (r->pass == 0)
		jsonw_printf(r->o, "bpfbox_bpf_program_run_seconds_total{program=\"%s\"} %.9f\n",
			     lv(st->name, a, sizeof(a)), st->run_time_ns / 1e9);
	else if (r->pass == 1)
		jsonw_printf(r->o, "bpfbox_bpf_program_runs_total{program=\"%s\"} %llu\n",
			     lv(st->name, a, sizeof(a)), (unsigned long long)st->run_cnt);
	else
		jsonw_printf(r->o,
			     "bpfbox_bpf_program_recursion_misses_total{program=\"%s\"} %llu\n",
			     lv(st->name, a, sizeof(a)), (unsigned long long)st->recursion_misses);
}

static void render_programs(struct jsonw *o, struct metrics *m, struct daemon *d)
{
	static const char *const names[][2] = {
		{"bpfbox_bpf_program_run_seconds_total",
		 "Time the kernel spent in each attached program (bpf_stats; 0 unless "
		 "kernel.bpf_stats_enabled=1)."},
		{"bpfbox_bpf_program_runs_total",
		 "Runs of each attached program (bpf_stats; 0 unless kernel.bpf_stats_enabled=1)."},
		{"bpfbox_bpf_program_recursion_misses_total",
		 "Runs of each program the kernel skipped because it was already running."},
	};
	struct prog_render r = {.o = o};
	char buf[8] = "0";
	FILE *f;

	for (r.pass = 0; r.pass < 3; r.pass++) {
		head(o, names[r.pass][0], "counter", names[r.pass][1]);
		agent_prog_stats(d->agent, prog_line, &r);
	}
	f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '0';
		fclose(f);
	}
	head(o, "bpfbox_bpf_stats_enabled", "gauge",
	     "1 when the kernel counts program run time (--bpf-stats, or sysctl "
	     "kernel.bpf_stats_enabled).");
	jsonw_printf(o, "bpfbox_bpf_stats_enabled %d\n", buf[0] == '1' || m->stats_fd >= 0);
}

static void render_host(struct jsonw *o, struct metrics *m, struct daemon *d)
{
	const struct agent_status *st = agent_status(d->agent);
	char a[600], b[300];

	head(o, "bpfbox_build_info", "gauge", "The daemon's version.");
	jsonw_printf(o, "bpfbox_build_info{version=\"%s\"} 1\n", BPFBOX_VERSION);
	head(o, "bpfbox_host_info", "gauge",
	     "The host's capability level (bpfbox status) and kernel, as labels; value 1.");
	if (m->probed) {
		jsonw_printf(o, "bpfbox_host_info{level=\"%s\",kernel=\"%s\"} 1\n",
			     level_name(m->caps.level), lv(m->caps.kernel_release, a, sizeof(a)));
		head(o, "bpfbox_probe_info", "gauge",
		     "Each capability probe's result (bpfbox status --json), as labels; value 1.");
		for (int i = 0; i < FEAT__COUNT; i++)
			jsonw_printf(
				o,
				"bpfbox_probe_info{feature=\"%s\",state=\"%s\",detail=\"%s\"} 1\n",
				feature_key(i), feat_state_name(m->caps.feat[i].state),
				lv(m->caps.feat[i].detail, b, sizeof(b)));
	}
	head(o, "bpfbox_agent_info", "gauge",
	     "What the daemon's BPF agent holds (1 in force, 0 not), by part.");
	jsonw_printf(o, "bpfbox_agent_info{part=\"audit\"} %d\n", st->audit);
	jsonw_printf(o, "bpfbox_agent_info{part=\"network\"} %d\n", st->net);
	jsonw_printf(o, "bpfbox_agent_info{part=\"unix_connect\"} %d\n", st->unix_connect);
	jsonw_printf(o, "bpfbox_agent_info{part=\"lsm\"} %d\n", st->lsm);
	head(o, "bpfbox_connections", "gauge", "Connections to the daemon's socket.");
	jsonw_printf(o, "bpfbox_connections %zu\n", d->nconns);
	head(o, "bpfbox_config_reloads_total", "counter",
	     "Configuration reloads (SIGHUP, bpfbox daemon reload), by result.");
	jsonw_printf(o, "bpfbox_config_reloads_total{result=\"ok\"} %llu\n",
		     (unsigned long long)m->reloads_ok);
	jsonw_printf(o, "bpfbox_config_reloads_total{result=\"refused\"} %llu\n",
		     (unsigned long long)m->reloads_failed);
	head(o, "bpfbox_metrics_scrapes_total", "counter", "Scrapes of this endpoint.");
	jsonw_printf(o, "bpfbox_metrics_scrapes_total %llu\n", (unsigned long long)m->scrapes);
}

char *metrics_render(struct metrics *m, size_t *len)
{
	struct jsonw o = {0};

	m->scrapes++;
	render_host(&o, m, m->d);
	render_sessions(&o, m->d);
	render_events(&o, m, m->d);
	render_sinks(&o, m->d);
	render_requests(&o, m);
	render_programs(&o, m, m->d);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}
