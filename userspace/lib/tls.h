/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BPFBOX_AUDIT_TLS_H
#define BPFBOX_AUDIT_TLS_H

#include <stddef.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/*
 * The TLS library of the syslog sinks and of the egress proxy's secrets
 * (userspace/net/tls_term.c: a per-session CA, TLS terminated for a
 * secret's hosts), opened with dlopen() when the first TLS sink opens or
 * the first session with a secret starts. Linked in, its constructor ran in every `bpfbox run`
 * (about 1 ms on the CI machine: docs/benchmarks.md) for the few that
 * send to a TLS collector. Calls go through the table: tlslib.handshake(s)
 * is gnutls_handshake(s), with the library's own prototypes.
 */
#define TLS_FUNCTIONS(X)                         \
	X(alpn_get_selected_protocol)            \
	X(alpn_set_protocols)                    \
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
	X(transport_set_ptr2)                    \
	X(transport_set_pull_function)           \
	X(transport_set_push_function)           \
	X(transport_set_int2)                    \
	X(bye)                                   \
	X(handshake_set_timeout)                 \
	X(record_check_pending)                  \
	X(record_cork)                           \
	X(record_uncork)                         \
	X(certificate_set_x509_key)              \
	X(x509_privkey_init)                     \
	X(x509_privkey_deinit)                   \
	X(x509_privkey_generate)                 \
	X(x509_crt_init)                         \
	X(x509_crt_deinit)                       \
	X(x509_crt_export2)                      \
	X(x509_crt_get_key_id)                   \
	X(x509_crt_set_activation_time)          \
	X(x509_crt_set_authority_key_id)         \
	X(x509_crt_set_basic_constraints)        \
	X(x509_crt_set_dn)                       \
	X(x509_crt_set_expiration_time)          \
	X(x509_crt_set_key)                      \
	X(x509_crt_set_key_purpose_oid)          \
	X(x509_crt_set_key_usage)                \
	X(x509_crt_set_name_constraints)         \
	X(x509_crt_set_serial)                   \
	X(x509_crt_set_subject_alt_name)         \
	X(x509_crt_set_subject_key_id)           \
	X(x509_crt_set_version)                  \
	X(x509_crt_sign2)                        \
	X(x509_name_constraints_add_permitted)   \
	X(x509_name_constraints_deinit)          \
	X(x509_name_constraints_init)

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
