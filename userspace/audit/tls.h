/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BPFBOX_AUDIT_TLS_H
#define BPFBOX_AUDIT_TLS_H

#include <stddef.h>
#include <gnutls/gnutls.h>

/*
 * The TLS library of the syslog sinks, opened with dlopen() when the first
 * TLS sink opens. Linked in, its constructor ran in every `bpfbox run`
 * (about 1 ms on the CI machine: docs/benchmarks.md) for the few that
 * send to a TLS collector. Calls go through the table: tlslib.handshake(s)
 * is gnutls_handshake(s), with the library's own prototypes.
 */
#define TLS_FUNCTIONS(X)                         \
	X(certificate_allocate_credentials)      \
	X(certificate_free_credentials)          \
	X(certificate_set_x509_key_file)         \
	X(certificate_set_x509_system_trust)     \
	X(certificate_set_x509_trust_file)       \
	X(certificate_type_get)                  \
	X(certificate_verification_status_print) \
	X(credentials_set)                       \
	X(deinit)                                \
	X(error_is_fatal)                        \
	X(handshake)                             \
	X(init)                                  \
	X(record_get_direction)                  \
	X(record_recv)                           \
	X(record_send)                           \
	X(server_name_set)                       \
	X(session_get_verify_cert_status)        \
	X(session_set_verify_cert)               \
	X(set_default_priority)                  \
	X(strerror)                              \
	X(transport_set_errno)                   \
	X(transport_set_ptr)                     \
	X(transport_set_pull_function)           \
	X(transport_set_push_function)

struct tls_lib {
#define TLS_MEMBER(name) __typeof__(gnutls_##name) *name;
	TLS_FUNCTIONS(TLS_MEMBER)
#undef TLS_MEMBER
	void (**free)(void *); /* gnutls_free is a variable */
};

extern struct tls_lib tlslib;

/* Opens the library once: 0, or -ENOENT with err saying what is missing. */
int tls_lib_open(char *err, size_t size);

#endif
