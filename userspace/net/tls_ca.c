// SPDX-License-Identifier: GPL-2.0
/*
 * The session CA of the terminating proxy (docs/network.md, "Secrets" and
 * "Per-request rules"): made when the session starts, its key only in this
 * process's memory, its names constrained to the hosts it terminates (a
 * secret's, an HTTP rule's); a leaf for each; the trust store the real
 * servers are verified against. tls_term.c serves the connections.
 */
#include <time.h>
#include <sys/random.h>

#include "egress_internal.h"

#define CERT_DAYS 30

static int set_ids(gnutls_x509_crt_t crt, gnutls_x509_crt_t issuer)
{
	unsigned char id[64];
	size_t n = sizeof(id);
	int r = tlslib.x509_crt_get_key_id(crt, 0, id, &n);

	if (!r)
		r = tlslib.x509_crt_set_subject_key_id(crt, id, n);
	if (!r && issuer) {
		n = sizeof(id);
		r = tlslib.x509_crt_get_key_id(issuer, 0, id, &n);
		if (!r)
			r = tlslib.x509_crt_set_authority_key_id(crt, id, n);
	}
	return r;
}

/* A certificate: the CA (host NULL, self-signed) or a leaf for host. */
static int make_cert(struct term *t, gnutls_x509_crt_t *out, const char *host)
{
	gnutls_x509_privkey_t key = host ? t->leaf_key : t->ca_key;
	gnutls_x509_crt_t crt;
	uint8_t serial[16];
	time_t now = time(NULL);
	char dn[300];
	const char *errp;
	int r;

	if (getrandom(serial, sizeof(serial), 0) != sizeof(serial))
		return GNUTLS_E_RANDOM_FAILED;
	serial[0] &= 0x7f;
	r = tlslib.x509_crt_init(&crt);
	if (r < 0)
		return r;
	snprintf(dn, sizeof(dn), "CN=%s", host ? host : "bpfbox session CA");
	r = tlslib.x509_crt_set_version(crt, 3);
	if (!r)
		r = tlslib.x509_crt_set_serial(crt, serial, sizeof(serial));
	if (!r)
		r = tlslib.x509_crt_set_activation_time(crt, now - 3600);
	if (!r)
		r = tlslib.x509_crt_set_expiration_time(crt, now + CERT_DAYS * 86400L);
	if (!r)
		r = tlslib.x509_crt_set_dn(crt, dn, &errp);
	if (!r)
		r = tlslib.x509_crt_set_key(crt, key);
	if (!r)
		r = tlslib.x509_crt_set_basic_constraints(crt, host ? 0 : 1, host ? -1 : 0);
	if (!r)
		r = tlslib.x509_crt_set_key_usage(crt, host ? GNUTLS_KEY_DIGITAL_SIGNATURE
							    : GNUTLS_KEY_KEY_CERT_SIGN |
								       GNUTLS_KEY_CRL_SIGN);
	if (!r && host)
		r = tlslib.x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
							 strlen(host), GNUTLS_FSAN_SET);
	if (!r && host)
		r = tlslib.x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (!r)
		r = set_ids(crt, host ? t->ca : NULL);
	if (!r && !host) {
		/* The CA can sign for the secrets' hosts and nothing else. */
		gnutls_x509_name_constraints_t nc;

		r = tlslib.x509_name_constraints_init(&nc);
		for (size_t i = 0; !r && i < t->n_leaves; i++) {
			gnutls_datum_t d = {(unsigned char *)t->leaf_host[i],
					    strlen(t->leaf_host[i])};

			r = tlslib.x509_name_constraints_add_permitted(nc, GNUTLS_SAN_DNSNAME, &d);
		}
		/* A wildcard's domain: the names under it (and, by the rule, it). */
		for (size_t i = 0; !r && i < t->n_wild; i++) {
			gnutls_datum_t d = {(unsigned char *)t->wild[i] + 2,
					    strlen(t->wild[i] + 2)};

			r = tlslib.x509_name_constraints_add_permitted(nc, GNUTLS_SAN_DNSNAME, &d);
		}
		if (!r)
			r = tlslib.x509_crt_set_name_constraints(crt, nc, 1);
		if (nc)
			tlslib.x509_name_constraints_deinit(nc);
	}
	if (!r)
		r = tlslib.x509_crt_sign2(crt, host ? t->ca : crt, t->ca_key, GNUTLS_DIG_SHA256, 0);
	if (r < 0) {
		tlslib.x509_crt_deinit(crt);
		return r;
	}
	*out = crt;
	return 0;
}

static int new_key(gnutls_x509_privkey_t *k)
{
	int r = tlslib.x509_privkey_init(k);

	if (!r)
		r = tlslib.x509_privkey_generate(
			*k, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	return r;
}

/* The server's trust: the host's store, or $BPFBOX_UPSTREAM_CA (tests, ops). */
static int upstream_trust(struct term *t, char *err, size_t size)
{
	const char *ca = getenv("BPFBOX_UPSTREAM_CA");
	int r = tlslib.certificate_allocate_credentials(&t->upstream);

	if (r < 0)
		return r;
	r = ca && *ca ? tlslib.certificate_set_x509_trust_file(t->upstream, ca, GNUTLS_X509_FMT_PEM)
		      : tlslib.certificate_set_x509_system_trust(t->upstream);
	if (r <= 0) {
		snprintf(err, size, "secrets: no certificate to verify servers with in %s",
			 ca && *ca ? ca : "the system trust store");
		return -ENOENT;
	}
	return 0;
}

/* The leaf of t->leaf_host[i]: its certificate and credentials; 0 or a GnuTLS error. */
static int make_leaf(struct term *t, size_t i)
{
	int r = make_cert(t, &t->leaf_crt[i], t->leaf_host[i]);

	if (!r)
		r = tlslib.certificate_allocate_credentials(&t->leaf[i]);
	if (!r) {
		gnutls_x509_crt_t chain[2] = {t->leaf_crt[i], t->ca};

		r = tlslib.certificate_set_x509_key(t->leaf[i], chain, 2, t->leaf_key);
	}
	return r;
}

/* A host whose connections on 443 are terminated: a leaf for it; -E2BIG past MAX_LEAVES. */
static int add_leaf_host(struct term *t, const char *host, char *err, size_t size)
{
	for (size_t k = 0; k < t->n_leaves; k++)
		if (streq(t->leaf_host[k], host))
			return 0;
	if (t->n_leaves == MAX_LEAVES) {
		snprintf(err, size, "secrets and HTTP rules: at most %d hosts", MAX_LEAVES);
		return -E2BIG;
	}
	snprintf(t->leaf_host[t->n_leaves++], sizeof(t->leaf_host[0]), "%s", host);
	return 0;
}

int eg_term_start(struct egress *e, char *err, size_t size)
{
	const struct egress_secrets *ss = &e->secrets;
	struct term *t = &e->term;
	gnutls_datum_t pem = {0};
	char http[MAX_LEAVES + 1][254];
	size_t n_http = eg_http_hosts(e, http, MAX_LEAVES + 1);
	int r;

	/* The proxy's own copy: the caller's may go (a daemon's request). */
	r = eg_secrets_copy(&e->secrets, e->o.secrets);
	e->o.secrets = &e->secrets;
	if (r < 0 || (!ss->n && !n_http))
		return r;
	r = tls_lib_open(err, size);
	if (r < 0)
		return r;
	for (size_t i = 0; !r && i < ss->n; i++)
		for (size_t j = 0; !r && j < ss->v[i].n_hosts; j++)
			r = add_leaf_host(t, ss->v[i].hosts[j], err, size);
	/*
	 * An HTTP rule's host: terminated to read each request (docs/network.md);
	 * a wildcard's names get their leaves on their first connection.
	 */
	for (size_t i = 0; !r && i < n_http; i++)
		if (strncmp(http[i], "*.", 2))
			r = add_leaf_host(t, http[i], err, size);
		else if (t->n_wild < MAX_LEAVES)
			snprintf(t->wild[t->n_wild++], sizeof(t->wild[0]), "%.253s", http[i]);
		else {
			snprintf(err, size, "secrets and HTTP rules: at most %d hosts", MAX_LEAVES);
			r = -E2BIG;
		}
	if (r < 0)
		return r;
	r = new_key(&t->ca_key);
	if (!r)
		r = new_key(&t->leaf_key);
	if (!r)
		r = make_cert(t, &t->ca, NULL);
	for (size_t i = 0; !r && i < t->n_leaves; i++)
		r = make_leaf(t, i);
	if (!r)
		r = tlslib.x509_crt_export2(t->ca, GNUTLS_X509_FMT_PEM, &pem);
	if (r < 0) {
		snprintf(err, size, "secrets: cannot make the session CA: %s", tlslib.strerror(r));
		return -EIO;
	}
	t->ca_pem = strndup((char *)pem.data, pem.size);
	(*tlslib.free)(pem.data);
	if (!t->ca_pem)
		return -ENOMEM;
	return upstream_trust(t, err, size);
}

void eg_term_stop(struct egress *e)
{
	struct term *t = &e->term;

	for (size_t i = 0; i < t->n_leaves; i++) {
		if (t->leaf[i])
			tlslib.certificate_free_credentials(t->leaf[i]);
		if (t->leaf_crt[i])
			tlslib.x509_crt_deinit(t->leaf_crt[i]);
	}
	if (t->upstream)
		tlslib.certificate_free_credentials(t->upstream);
	if (t->ca)
		tlslib.x509_crt_deinit(t->ca);
	if (t->ca_key)
		tlslib.x509_privkey_deinit(t->ca_key);
	if (t->leaf_key)
		tlslib.x509_privkey_deinit(t->leaf_key);
	free(t->ca_pem);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

const char *egress_ca_pem(const struct egress *e)
{
	return e ? e->term.ca_pem : NULL;
}

/* Letters, digits and '-' in dot-separated labels: all a leaf's name may hold. */
static bool dns_name(const char *s)
{
	size_t n = strlen(s), label = 0;

	if (!n || n > 253)
		return false;
	for (; *s; s++) {
		if (*s == '.') {
			if (!label)
				return false;
			label = 0;
		} else if (isalnum((unsigned char)*s) || *s == '-') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return label > 0;
}

/*
 * A name under a wildcard HTTP rule: a leaf of its own (a wildcard
 * certificate would cover one label only), kept for the session. Called
 * with t->lock held; NULL past MAX_LEAVES or for a name that is no DNS
 * name (it goes into the certificate's subject).
 */
static gnutls_certificate_credentials_t wild_leaf(struct term *t, const char *name)
{
	size_t i = t->n_leaves;
	bool under = false;

	for (size_t k = 0; k < t->n_wild; k++)
		under |= net_name_match(t->wild[k], name);
	if (!under || i == MAX_LEAVES || !t->ca || !dns_name(name))
		return NULL;
	snprintf(t->leaf_host[i], sizeof(t->leaf_host[0]), "%s", name);
	for (char *c = t->leaf_host[i]; *c; c++)
		*c = tolower((unsigned char)*c);
	if (make_leaf(t, i) < 0) {
		if (t->leaf[i])
			tlslib.certificate_free_credentials(t->leaf[i]);
		if (t->leaf_crt[i])
			tlslib.x509_crt_deinit(t->leaf_crt[i]);
		t->leaf[i] = NULL;
		t->leaf_crt[i] = NULL;
		return NULL;
	}
	t->n_leaves++;
	return t->leaf[i];
}

gnutls_certificate_credentials_t eg_term_leaf(struct egress *e, const char *name)
{
	struct term *t = &e->term;
	gnutls_certificate_credentials_t c = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; !c && i < t->n_leaves; i++)
		if (!strcasecmp(t->leaf_host[i], name))
			c = t->leaf[i];
	if (!c && t->n_wild)
		c = wild_leaf(t, name);
	pthread_mutex_unlock(&t->lock);
	return c;
}

bool eg_term_wanted(struct egress *e, const char *name, uint16_t port)
{
	return port == 443 && eg_term_leaf(e, name);
}
