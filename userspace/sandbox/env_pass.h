/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The caller's variables the environment allowlist keeps besides its own
 * (session_env.c): certificate bundles and package indexes, which tools
 * need behind a company proxy or mirror. The one list: the env builder
 * reads it, docs/runtime.md ("Certificates and package indexes") lists
 * every name in it, tests/host/test_home.sh checks that it does.
 *
 * FILE(name): a file or directory; passed with its real path and granted
 * read-only, unless it is a credential path bpfbox masks (then dropped
 * with a warning). URL(name): one or more URLs or host patterns; passed
 * unless one carries credentials (userinfo, a token parameter: dropped
 * with a warning naming the variable, never its value). A '*' in a name
 * stands for any part (fnmatch). A name the policy's env sets is the
 * policy's, not looked at here.
 */
#ifndef BPFBOX_ENV_PASS_H
#define BPFBOX_ENV_PASS_H

#define ENV_PASS_LIST(FILE, URL)                                  \
	FILE("SSL_CERT_FILE") /* OpenSSL, Python, Go, uv, Rust */ \
	FILE("SSL_CERT_DIR")                                      \
	FILE("NODE_EXTRA_CA_CERTS") /* Node.js, Bun */            \
	FILE("REQUESTS_CA_BUNDLE")  /* Python requests */         \
	FILE("CURL_CA_BUNDLE")	    /* curl, pip */               \
	FILE("GIT_SSL_CAINFO")                                    \
	FILE("GIT_SSL_CAPATH")                                    \
	FILE("PIP_CERT")                                          \
	FILE("AWS_CA_BUNDLE")                                     \
	FILE("NPM_CONFIG_CAFILE")                                 \
	FILE("npm_config_cafile")                                 \
	FILE("CARGO_HTTP_CAINFO")                                 \
	FILE("DENO_CERT")                                         \
	FILE("YARN_CA_FILE_PATH")                                 \
	URL("PIP_INDEX_URL")                                      \
	URL("PIP_EXTRA_INDEX_URL")                                \
	URL("PIP_TRUSTED_HOST")                                   \
	URL("UV_INDEX_URL")                                       \
	URL("UV_EXTRA_INDEX_URL")                                 \
	URL("UV_DEFAULT_INDEX")                                   \
	URL("UV_INDEX")                                           \
	URL("POETRY_REPOSITORIES_*_URL")                          \
	URL("NPM_CONFIG_REGISTRY")                                \
	URL("npm_config_registry")                                \
	URL("YARN_REGISTRY")                                      \
	URL("YARN_NPM_REGISTRY_SERVER")                           \
	URL("BUN_CONFIG_REGISTRY")                                \
	URL("GOPROXY")                                            \
	URL("GOPRIVATE")                                          \
	URL("GONOPROXY")                                          \
	URL("GONOSUMDB")                                          \
	URL("GOSUMDB")                                            \
	URL("CARGO_REGISTRIES_*_INDEX")                           \
	URL("RUSTUP_DIST_SERVER")                                 \
	URL("RUSTUP_UPDATE_ROOT")                                 \
	URL("HF_ENDPOINT")                                        \
	URL("PUB_HOSTED_URL")

#endif
