/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Policy ceilings (docs/operating.md): the most a client of the daemon may
 * ask for, per uid or group, set by the operator in the daemon's config
 * ("ceilings"). A request above its rule is refused with one line naming
 * the rule, or its limits are clamped where the rule says so.
 */
#ifndef BPFBOX_CEILING_H
#define BPFBOX_CEILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

enum ceiling_limit {
	CL_MEMORY_MB,
	CL_PIDS,
	CL_CPU_PERCENT,
	CL_DISK_MB,
	CL_TIMEOUT_S,
	CL_OUTPUT_BYTES,
	CL__COUNT,
};

struct ceiling_rule {
	char name[64];
	bool has_uid, has_group; /* neither: the rule matches everyone */
	uid_t uid;
	gid_t gid;
	char group[64];
	unsigned int modes; /* bit per mode allowed (policy.h enum); 0: any */
	int network;	    /* the most: 0 deny, 1 allow-list, 2 allow; -1 any */
	char **rw;	    /* writable paths must lie under one of these */
	size_t nrw;
	bool rw_set;
	uint64_t max[CL__COUNT]; /* 0: no bound */
	bool clamp;		 /* limits above max are lowered, not refused */
	bool no_daemon;		 /* clients may run --no-daemon while the daemon runs */
	bool no_namespaces;	 /* sessions may turn the namespace layer off */
};

struct ceilings {
	bool set; /* the config has a "ceilings" object */
	bool exempt_root;
	struct ceiling_rule *v;
	size_t n;
};

/* Parses the "ceilings" object. 0, or -EINVAL with one line in err. */
int ceilings_parse(struct json_object *o, struct ceilings *out, char *err, size_t size);
void ceilings_free(struct ceilings *c);

/* The first rule for this uid (and its groups); NULL when none matches. */
const struct ceiling_rule *ceilings_match(const struct ceilings *c, uid_t uid, gid_t gid);

/*
 * Holds policy (the JSON of policy_to_json) against rule r. Returns 0 when
 * within it; 1 when only limits were above it and r clamps them (policy is
 * changed, what was lowered is in what); -EPERM when refused (why names the
 * rule and the first thing above it).
 */
int ceiling_check(const struct ceiling_rule *r, struct json_object *policy, char *what,
		  size_t what_size, char *why, size_t why_size);

#endif
