/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's wire protocol (docs/daemon.md): newline-delimited JSON over
 * a unix stream socket, one request per line, one reply line per request,
 * {"ok":true,...} or {"ok":false,"error":"...","code":"EINVAL"}. Shared by
 * the server and the client.
 */
#ifndef BPFBOX_DAEMON_PROTO_H
#define BPFBOX_DAEMON_PROTO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/buf.h"

struct json_object;
struct jsonw;

#define DAEMON_SOCKET_DIR      "/run/bpfbox"
#define DAEMON_SOCKET_DEFAULT  DAEMON_SOCKET_DIR "/bpfbox.sock"
#define DAEMON_PIN_DIR_DEFAULT "/sys/fs/bpf/bpfbox"
#define DAEMON_MAX_REQUEST     65536	  /* bytes of one request line, newline included */
#define DAEMON_MAX_REPLY       (8U << 20) /* bytes of one reply line (a list of 4096 sessions) */
#define DAEMON_SESSION_ID_LEN  32	  /* lowercase hex */

/* The error peers inside a session get, word for word (tests match it). */
#define DAEMON_INSIDE_SESSION "requests from inside a session are refused"

/* Whether s is a session id: exactly 32 lowercase hex digits. */
bool proto_session_id_valid(const char *s);

/* "EINVAL" for EINVAL (sign ignored); "EIO" for what has no name. */
const char *proto_errno_name(int err);
/* The errno of a reply's "code"; EIO for an unknown name. */
int proto_errno_from_name(const char *name);

/* Appends {"ok":false,"error":MSG,"code":NAME} and a newline to w. */
void proto_error(struct jsonw *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void proto_verror(struct jsonw *w, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * Typed getters of a request's members. Each returns 0 with *out set,
 * -ENOENT when the key is absent (out untouched), -EINVAL on a wrong type.
 */
int proto_get_str(struct json_object *o, const char *key, const char **out);
int proto_get_int(struct json_object *o, const char *key, int64_t *out);
int proto_get_bool(struct json_object *o, const char *key, bool *out);
int proto_get_array(struct json_object *o, const char *key, struct json_object **out);
int proto_get_object(struct json_object *o, const char *key, struct json_object **out);

#endif
