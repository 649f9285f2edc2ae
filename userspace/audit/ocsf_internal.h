/* SPDX-License-Identifier: GPL-2.0 */
/* What ocsf.c, ocsf_session.c and ocsf_common.c share. */
#ifndef BPFBOX_OCSF_INTERNAL_H
#define BPFBOX_OCSF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "ocsf.h"
#include "../lib/json.h"

struct json_object;

enum {
	SEV_INFORMATIONAL = 1,
	SEV_MEDIUM = 3,
	SEV_HIGH = 4,
};

struct ocsf_class {
	int class_uid, category_uid;
	const char *class_name, *category_name;
};

/* The event's members, read once. */
struct ev {
	struct json_object *o;
	int kind; /* enum ev_kind, < 0: unknown */
	const char *type, *time, *session, *comm, *decision, *layer, *err;
	const char *host, *host_id, *boot_id;
	int64_t seq, pid, tid, ppid, uid;
	bool has_seq, has_pid, has_tid, has_ppid, has_uid;
	bool deny;
};

extern const struct ocsf_class OCSF_PROCESS;
extern const struct ocsf_class OCSF_FILESYS;
extern const struct ocsf_class OCSF_NETWORK;
extern const struct ocsf_class OCSF_DNS;
extern const struct ocsf_class OCSF_EVENTLOG;

/* observables: the values a SIEM indexes for search, each naming its attribute. */
struct obs {
	const char *name, *type, *value;
	int type_id;
};

#define OBS_MAX 10

struct obs_list {
	struct obs o[OBS_MAX];
	char num[3][24];
	int n, nums;
};

int64_t ocsf_time_ms(const char *s);
const char *ocsf_user_name(int64_t uid);
void ocsf_put_uid(struct jsonw *w, const char *key, int64_t uid);
void ocsf_put_classification(struct jsonw *w, const struct ocsf_class *c, int activity,
			     const char *activity_name);
void ocsf_put_severity(struct jsonw *w, int sev);
void ocsf_put_metadata(struct jsonw *w, const struct ev *e, bool control);
void ocsf_put_device(struct jsonw *w, const struct ev *e, const char *hostname);
void ocsf_put_timezone(struct jsonw *w, int64_t ms);
void ocsf_put_outcome(struct jsonw *w, const struct ev *e);
void ocsf_put_process_body(struct jsonw *w, const struct ev *e, bool parent);
void ocsf_put_actor(struct jsonw *w, const struct ev *e);
const char *ocsf_base_name(const char *path);
void ocsf_put_file(struct jsonw *w, const char *path, bool regular);
void ocsf_put_unmapped(struct jsonw *w, const struct ev *e, const char *const *keys);
void ocsf_obs_add(struct obs_list *l, const char *name, int type_id, const char *type,
		  const char *value);
void ocsf_obs_add_int(struct obs_list *l, const char *name, int type_id, const char *type,
		      int64_t v);
void ocsf_put_observables(struct jsonw *w, const struct obs_list *l);
void ocsf_obs_common(struct obs_list *l, const struct ev *e, const char *hostname);
void ocsf_begin_common(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
		       int activity, const char *activity_name, int sev, const char *hostname,
		       const char *message, bool control);
void ocsf_begin_record(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
		       int activity, const char *activity_name, const char *hostname,
		       const char *message);
void ocsf_message(char *buf, size_t size, const struct ev *e, const char *what);
void ocsf_put_cmd_line(struct jsonw *w, struct json_object *argv);
void ocsf_put_unmapped_rest(struct jsonw *w, const struct ev *e);
void ocsf_put_lifecycle_actor(struct jsonw *w, const struct ev *e);

/* The ends of the lifecycle encoders (ocsf_session.c). */
void ocsf_enc_session(struct jsonw *w, const struct ev *e, const char *hostname);
void ocsf_enc_log(struct jsonw *w, const struct ev *e, const char *hostname);
void ocsf_enc_ceiling(struct jsonw *w, const struct ev *e, const char *hostname);

#endif
