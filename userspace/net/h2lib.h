/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BPFBOX_NET_H2LIB_H
#define BPFBOX_NET_H2LIB_H

#include <stddef.h>
#include <nghttp2/nghttp2.h>

/*
 * nghttp2, the HTTP/2 library of terminated connections (tls_h2.c),
 * opened with dlopen() at the first connection whose tool and server both
 * chose HTTP/2: a session that never speaks it loads nothing. Calls go
 * through the table: h2lib.submit_request(...) is nghttp2_submit_request.
 */
#define H2_FUNCTIONS(X)                                      \
	X(session_callbacks_new)                             \
	X(session_callbacks_del)                             \
	X(session_callbacks_set_on_begin_headers_callback)   \
	X(session_callbacks_set_on_header_callback)          \
	X(session_callbacks_set_on_frame_recv_callback)      \
	X(session_callbacks_set_on_data_chunk_recv_callback) \
	X(session_callbacks_set_on_stream_close_callback)    \
	X(option_new)                                        \
	X(option_del)                                        \
	X(option_set_no_auto_window_update)                  \
	X(session_server_new2)                               \
	X(session_client_new2)                               \
	X(session_del)                                       \
	X(session_mem_recv)                                  \
	X(session_mem_send)                                  \
	X(session_want_read)                                 \
	X(session_want_write)                                \
	X(session_set_local_window_size)                     \
	X(session_get_stream_user_data)                      \
	X(session_set_stream_user_data)                      \
	X(session_resume_data)                               \
	X(session_consume)                                   \
	X(session_terminate_session)                         \
	X(submit_settings)                                   \
	X(submit_request)                                    \
	X(submit_response)                                   \
	X(submit_headers)                                    \
	X(submit_trailer)                                    \
	X(submit_rst_stream)                                 \
	X(strerror)

struct h2_lib {
#define H2_MEMBER(name) __typeof__(nghttp2_##name) *name;
	H2_FUNCTIONS(H2_MEMBER)
#undef H2_MEMBER
};

extern struct h2_lib h2lib;

/* Opens the library once: 0, or -ENOENT with err saying what is missing. */
int h2_lib_open(char *err, size_t size);

#endif
