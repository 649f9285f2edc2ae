// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF LSM layer. Everywhere: deny patterns, exec names and CIDRs into
 * map keys (table driven, errors included). Where a BPF LSM program loads
 * (the Full VM; this host refuses it with EPERM): the programs of
 * bpf/lsm.bpf.c against real opens, execs, connects, renames and links
 * of children in session cgroups, the records they leave, and the same
 * opens from outside every session.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "agent/lsm_policy.h"
#include "lib/util.h"
#include "policy/policy.h"
#include "probe/probe.h"
#include "lsm.skel.h"

#define SKIP_LINE                                                   \
	"skip - BPF LSM cannot load here (EPERM); tests/vm/matrix " \
	"runs this in the Full VM"

/* ---- pattern compilation (every host) ---- */

struct want_name {
	__u32 kind;
	const char *a; /* the name, or a pair's DIR */
	const char *b; /* a pair's NAME */
};

struct name_case {
	const char *pattern;
	int rc;
	struct want_name want[3];
};

static const struct name_case name_cases[] = {
	{"**/.env", 0, {{BPFBOX_NAME_EXACT, ".env"}, {BPFBOX_NAME_COMPONENT, ".env"}}},
	{"**/.ssh", 0, {{BPFBOX_NAME_EXACT, ".ssh"}, {BPFBOX_NAME_COMPONENT, ".ssh"}}},
	{"**/*.pem", 0, {{BPFBOX_NAME_SUFFIX, "pem"}}},
	{"**/*.tar.gz", 0, {{BPFBOX_NAME_SUFFIX, "tar.gz"}}},
	{"**/.env.*", 0, {{LSM_NAME_PREFIX, ".env."}}},
	{"**/credentials.*", 0, {{LSM_NAME_PREFIX, "credentials."}}},
	{"**/.kube/config",
	 0,
	 {{LSM_NAME_PAIR_EXACT, ".kube", "config"},
	  {LSM_NAME_PAIR_COMPONENT, ".kube", "config"},
	  {LSM_NAME_PAIR_DIR, ".kube"}}},
	{"secrets/*", -EINVAL},
	{"relative", -EINVAL},
	{"**/", -EINVAL},
	{"**/*", -EINVAL},
	{"**/a*b", -EINVAL},
	{"**/*.", -EINVAL},
	{"**/.*", -EINVAL},
	{"**/..", -EINVAL},
	{"**/a/b/c", -EINVAL},
	{"**/a//b", -EINVAL},
	{"**/*.p*m", -EINVAL},
	{"/", -EINVAL},
	{"/etc/", -EINVAL},
	{"/etc//shadow", -EINVAL},
	{"/etc/./shadow", -EINVAL},
	{"/home/*/x", -EINVAL},
	{"", -EINVAL},
};

static void check_names(const struct lsm_entries *es, const struct name_case *c)
{
	size_t n = 0;

	while (n < 3 && c->want[n].kind)
		n++;
	assert_int_equal(es->n, n);
	for (size_t i = 0; i < n; i++) {
		const struct bpfbox_name_key *k = &es->v[i].name;
		const struct want_name *w = &c->want[i];
		char want[BPFBOX_NAME_LEN] = {};

		assert_int_equal(es->v[i].map, LSM_MAP_NAMES);
		assert_int_equal(k->session, 7);
		assert_int_equal(k->kind, w->kind);
		memcpy(want, w->a, strlen(w->a));
		if (w->b)
			memcpy(want + LSM_PAIR_HALF, w->b, strlen(w->b));
		/* Whole key, zero padding included: the hash compares it. */
		assert_memory_equal(k->name, want, sizeof(want));
	}
}

static void test_compile_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(name_cases); i++) {
		const struct name_case *c = &name_cases[i];
		struct lsm_entries es = {};
		int r = lsm_compile_deny(c->pattern, 7, &es);

		if (r != c->rc)
			fail_msg("'%s': %d, want %d", c->pattern, r, c->rc);
		if (r == 0)
			check_names(&es, c);
		else
			assert_int_equal(es.n, 0);
		lsm_entries_free(&es);
	}
}

/* A pattern whose name part is n bytes of 'a' between pre and post. */
static int compile_long(const char *pre, size_t n, const char *post)
{
	struct lsm_entries es = {};
	char pat[600];
	int r;

	assert_true(strlen(pre) + n + strlen(post) < sizeof(pat));
	strcpy(pat, pre);
	memset(pat + strlen(pre), 'a', n);
	strcpy(pat + strlen(pre) + n, post);
	r = lsm_compile_deny(pat, 1, &es);
	lsm_entries_free(&es);
	return r;
}

static void test_compile_lengths(void **state)
{
	(void)state;
	/* 63 bytes and a NUL fill a name key. */
	assert_int_equal(compile_long("**/", 63, ""), 0);
	assert_int_equal(compile_long("**/", 64, ""), -ENAMETOOLONG);
	assert_int_equal(compile_long("**/*.", 63, ""), 0);
	assert_int_equal(compile_long("**/*.", 64, ""), -ENAMETOOLONG);
	/* NAME.* keeps the dot: "NAME." */
	assert_int_equal(compile_long("**/", 62, ".*"), 0);
	assert_int_equal(compile_long("**/", 63, ".*"), -ENAMETOOLONG);
	/* A pair's halves are 31 bytes each. */
	assert_int_equal(compile_long("**/", 31, "/x"), 0);
	assert_int_equal(compile_long("**/", 32, "/x"), -ENAMETOOLONG);
	assert_int_equal(compile_long("**/x/", 32, ""), -ENAMETOOLONG);
	/* Absolute: components of 63, paths of 255 bytes. */
	assert_int_equal(compile_long("/etc/", 63, ""), 0);
	assert_int_equal(compile_long("/etc/", 64, "/x"), -ENAMETOOLONG);
	/* Syntax is judged before length. */
	assert_int_equal(compile_long("**/", 70, "*"), -EINVAL);
}

static void test_compile_abs(void **state)
{
	struct lsm_entries es = {};
	char path[400];

	(void)state;
	assert_int_equal(lsm_compile_deny("/etc/sudoers.d", 3, &es), 0);
	assert_int_equal(lsm_compile_deny("/etc/shadow", 3, &es), 0);
	assert_int_equal(es.n, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(es.v[i].map, LSM_MAP_ABS);
		assert_int_equal(es.v[i].abs.session, 3);
		assert_int_not_equal(es.v[i].node.id, 0);
	}
	/* /etc: a node below the root, shared by both paths, not denied. */
	assert_string_equal(es.v[0].abs.name, "etc");
	assert_int_equal(es.v[0].abs.parent, 0);
	assert_int_equal(es.v[0].node.deny, 0);
	assert_memory_equal(&es.v[0], &es.v[2], sizeof(es.v[0]));
	/* /etc/sudoers.d and /etc/shadow: below /etc, denied. */
	assert_string_equal(es.v[1].abs.name, "sudoers.d");
	assert_int_equal(es.v[1].abs.parent, es.v[0].node.id);
	assert_int_equal(es.v[1].node.deny, LSM_DENY_OPEN);
	assert_string_equal(es.v[3].abs.name, "shadow");
	assert_int_equal(es.v[3].abs.parent, es.v[0].node.id);
	assert_int_not_equal(es.v[3].node.id, es.v[1].node.id);
	/* Zero padded keys. */
	for (size_t i = strlen("shadow"); i < BPFBOX_NAME_LEN; i++)
		assert_int_equal(es.v[3].abs.name[i], 0);

	/* Too deep or too long: nothing added. */
	path[0] = 0;
	for (int i = 0; i < LSM_MAX_DEPTH; i++)
		strcat(path, "/d");
	assert_int_equal(lsm_compile_deny(path, 3, &es), 0);
	assert_int_equal(es.n, 4 + LSM_MAX_DEPTH);
	strcat(path, "/d");
	assert_int_equal(lsm_compile_deny(path, 3, &es), -ENAMETOOLONG);
	for (int i = 0; i < 5; i++) {
		path[i * 61] = '/';
		memset(path + i * 61 + 1, 'b', 60);
	}
	path[5 * 61] = 0;
	assert_int_equal(lsm_compile_deny(path, 3, &es), -ENAMETOOLONG);
	assert_int_equal(es.n, 4 + LSM_MAX_DEPTH);
	lsm_entries_free(&es);
}

static void test_compile_exec(void **state)
{
	struct lsm_entries es = {};
	char name[80];

	(void)state;
	assert_int_equal(lsm_compile_exec("curl", 2, &es), 0);
	assert_int_equal(es.n, 1);
	assert_int_equal(es.v[0].name.kind, BPFBOX_NAME_EXEC);
	assert_int_equal(es.v[0].name.session, 2);
	assert_string_equal(es.v[0].name.name, "curl");
	assert_int_equal(lsm_compile_exec("usr/bin/curl", 2, &es), -EINVAL);
	assert_int_equal(lsm_compile_exec("/usr/bin/", 2, &es), -EINVAL);
	assert_int_equal(lsm_compile_exec("", 2, &es), -EINVAL);
	memset(name, 'c', 64);
	name[64] = 0;
	assert_int_equal(lsm_compile_exec(name, 2, &es), -ENAMETOOLONG);
	assert_int_equal(es.n, 1);
	/* A path: trie nodes, the last one denying exec only. */
	assert_int_equal(lsm_compile_exec("/usr/bin/curl", 2, &es), 0);
	assert_int_equal(es.n, 4);
	for (size_t i = 1; i < 4; i++) {
		assert_int_equal(es.v[i].map, LSM_MAP_ABS);
		assert_int_equal(es.v[i].node.deny, i == 3 ? LSM_DENY_EXEC : 0);
	}
	assert_string_equal(es.v[3].abs.name, "curl");
	lsm_entries_free(&es);
}

/*
 * Where names apply: the system trees as trie nodes marked LSM_TREE_SYSTEM
 * (no deny bit), the source extensions as LSM_NAME_SOURCE names; written
 * only for a session with name patterns.
 */
static void test_compile_scope(void **state)
{
	static const char *const abs_only[] = {"/etc/shadow"};
	static const char *const names[] = {"/etc/shadow", "**/.env"};
	struct lsm_entries es = {};
	bool usr_lib = false, py = false, sh = false, certifi = false;

	(void)state;
	assert_false(lsm_name_patterns(abs_only, 1));
	assert_true(lsm_name_patterns(names, 2));
	assert_false(lsm_name_patterns(NULL, 0));
	assert_int_equal(lsm_compile_scope(4, &es), 0);
	for (size_t i = 0; i < es.n; i++) {
		const struct lsm_entry *x = &es.v[i];

		if (x->map == LSM_MAP_ABS) {
			assert_int_equal(x->abs.session, 4);
			assert_int_equal(x->node.deny & (LSM_DENY_OPEN | LSM_DENY_EXEC), 0);
			/* /usr/lib: the node "lib" below the node "usr", marked. */
			usr_lib |= !strcmp(x->abs.name, "lib") && x->abs.parent != 0 &&
				   x->node.deny == LSM_TREE_SYSTEM;
			continue;
		}
		if (x->name.kind == LSM_NAME_PAIR_PUBLIC) {
			/* DIR in the first half, NAME in the second (as read_pair reads them). */
			certifi |= !strcmp(x->name.name, "certifi") &&
				   !strcmp(x->name.name + LSM_PAIR_HALF, "cacert.pem");
			continue;
		}
		assert_int_equal(x->name.kind, LSM_NAME_SOURCE);
		py |= !strcmp(x->name.name, "py");
		sh |= !strcmp(x->name.name, "sh");
	}
	assert_true(certifi);
	assert_true(usr_lib);
	assert_true(py);
	assert_false(sh); /* shell scripts hold keys: not a source extension */
	lsm_entries_free(&es);
}

struct cidr_case {
	const char *cidr;
	int rc;
	__u32 prefixlen;
	const char *addr; /* IPv6 text of the key's address */
};

static const struct cidr_case cidr_cases[] = {
	{"10.0.0.0/8", 0, 32 + 96 + 8, "::ffff:10.0.0.0"},
	{"10.1.2.3/8", 0, 32 + 96 + 8, "::ffff:10.0.0.0"},
	{"127.0.0.1", 0, 32 + 128, "::ffff:127.0.0.1"},
	{"0.0.0.0/0", 0, 32 + 96, "::ffff:0.0.0.0"},
	{"169.254.169.254/32", 0, 32 + 128, "::ffff:169.254.169.254"},
	{"::1/128", 0, 32 + 128, "::1"},
	{"fd00::/8", 0, 32 + 8, "fd00::"},
	{"2001:db8::1/32", 0, 32 + 32, "2001:db8::"},
	{"::/0", 0, 32, "::"},
	{"", -EINVAL},
	{"/8", -EINVAL},
	{"10.0.0.0/", -EINVAL},
	{"10.0.0.0/33", -EINVAL},
	{"10.0.0.0/-1", -EINVAL},
	{"10.0.0.0/+8", -EINVAL},
	{"10.0.0.0/8x", -EINVAL},
	{"10.0.0.0/0008", -EINVAL},
	{"10.0.0/8", -EINVAL},
	{"::/129", -EINVAL},
	{"example.com/8", -EINVAL},
};

static void test_parse_cidr(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cidr_cases); i++) {
		const struct cidr_case *c = &cidr_cases[i];
		struct bpfbox_net_key key, want = {};
		int r = lsm_parse_cidr(c->cidr, &key);

		if (r != c->rc)
			fail_msg("'%s': %d, want %d", c->cidr, r, c->rc);
		if (r)
			continue;
		assert_int_equal(inet_pton(AF_INET6, c->addr, want.addr), 1);
		want.prefixlen = c->prefixlen;
		if (memcmp(&key, &want, sizeof(key)))
			fail_msg("'%s': wrong key", c->cidr);
	}
}

/* ---- the programs (where BPF LSM loads) ---- */

static struct lsm_bpf *skel;
static char tmp[256]; /* scratch dir, symlinks resolved */
static char cg_root[256];
static char daemon_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static int listeners[4] = {-1, -1, -1, -1};
static char cgroups[3][PATH_MAX]; /* made by make_session, for teardown */
static size_t n_cgroups;
static int port_ok, port_other; /* on 127.0.0.1 and 127.0.0.2 */

enum { SESSION_POLICY = 1, SESSION_OPEN = 2, SESSION_META = 3 };

static const char *tpath(const char *rel)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", tmp, rel);
	return b;
}

static void put_file(const char *rel, const char *text, mode_t mode)
{
	int fd = open(tpath(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void copy_file(const char *from, const char *rel)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(tpath(rel), O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

static void make_tree(void)
{
	static const char *const dirs[] = {
		"ws",	      "ws/.ssh",	   "ws/.ssh/a", "ws/.ssh/a/b",	"ws/.kube",
		"ws/.config", "ws/.config/gcloud", "absdir",	"absdir/inner", "bin",
		"lnk",	      "absexec",
	};
	static const char *const files[] = {
		"ws/.env",
		"ws/.env.local",
		"ws/.envrc",
		"ws/.ssh/id_rsa",
		"ws/.ssh/config",
		"ws/.ssh/a/b/key",
		"ws/x.pem",
		"ws/x.pem.txt",
		"ws/a.tar.gz",
		"ws/ok.txt",
		"ws/config",
		"ws/.kube/config",
		"ws/.kube/cache.txt",
		"ws/.config/gcloud/creds.json",
		"ws/.config/other.txt",
		"secret.txt",
		"secret.txt.bak",
		"absdir/inner/file",
	};
	char rel[120];

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		assert_int_equal(mkdir(tpath(dirs[i]), 0755), 0);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		put_file(files[i], "secret\n", 0644);
	/* A name longer than a key: its suffix is still seen. */
	memset(rel, 'l', sizeof(rel));
	memcpy(rel, "ws/", 3);
	strcpy(rel + 103, ".pem");
	put_file(rel, "secret\n", 0644);
	assert_int_equal(symlink(tpath("ws/.env"), tpath("env-link")), 0);
	copy_file("/bin/true", "bin/denied-elf");
	copy_file("/bin/true", "absexec/tool-elf");
	put_file("bin/abs-tool", "#!/bin/sh\nexit 0\n", 0755);
	put_file("bin/denied-tool", "#!/bin/sh\nexit 0\n", 0755);
	put_file("bin/ok-tool", "#!/bin/sh\nexit 0\n", 0755);
	assert_int_equal(symlink("denied-tool", tpath("bin/alias")), 0);
	assert_int_equal(symlink("../bin/ok-tool", tpath("lnk/denied-tool")), 0);
}

static int listen_unix(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	return fd;
}

static int listen_tcp(const char *ip, int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A session cgroup registered in sessions; its directory into path. */
static void make_session(const char *name, __u32 id, __u32 flags, char *path)
{
	struct bpfbox_session s = {.id = id, .flags = flags};
	struct stat st;
	__u64 cgid;

	assert_true(n_cgroups < ARRAY_SIZE(cgroups));
	snprintf(path, PATH_MAX, "%s/%s", cg_root, name);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(cgroups[n_cgroups++], PATH_MAX, "%s", path);
	assert_int_equal(stat(path, &st), 0);
	cgid = st.st_ino; /* a cgroup's id is its directory's inode */
	assert_int_equal(
		bpf_map_update_elem(bpf_map__fd(skel->maps.sessions), &cgid, &s, BPF_NOEXIST), 0);
}

/* libbpf's warnings, shown only when the load fails for another reason. */
static char libbpf_log[65536];

static int libbpf_keep(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(libbpf_log);

	if (level == LIBBPF_WARN && n < sizeof(libbpf_log) - 1)
		vsnprintf(libbpf_log + n, sizeof(libbpf_log) - n, fmt, ap);
	return 0;
}

/* Opens, loads and attaches the programs: 0 or -errno. */
static int lsm_load(void)
{
	int r;

	skel = lsm_bpf__open();
	if (!skel)
		return -errno;
	snprintf((char *)skel->rodata->daemon_socket, sizeof(skel->rodata->daemon_socket), "%s",
		 daemon_path);
	agent_lsm_select(skel);
	r = lsm_bpf__load(skel);
	if (!r)
		r = lsm_bpf__attach(skel);
	if (r) {
		lsm_bpf__destroy(skel);
		skel = NULL;
	}
	return r;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int vm_setup(void **state)
{
	struct bpfbox_policy p;
	char abs_tool[PATH_MAX], abs_dir[PATH_MAX];
	const char *exec_deny[] = {"denied-tool", "denied-elf", abs_tool, abs_dir, NULL};
	char dir[] = "/tmp/bpfbox-lsm.XXXXXX";
	char *real;
	int r;

	(void)state;
	if (!mkdtemp(dir) || !(real = realpath(dir, NULL)))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s", real);
	free(real);
	make_tree();
	listeners[0] = listen_unix(daemon_path);
	listeners[1] = listen_unix(tpath("other.sock"));
	if (symlink(daemon_path, tpath("alias.sock")))
		return -1;
	listeners[2] = listen_tcp("127.0.0.1", &port_ok);
	listeners[3] = listen_tcp("127.0.0.2", &port_other);

	snprintf(abs_tool, sizeof(abs_tool), "%s", tpath("bin/abs-tool"));
	snprintf(abs_dir, sizeof(abs_dir), "%s", tpath("absexec"));
	policy_init(&p);
	if (strv_push(&p.deny_paths, "**/*.tar.gz") < 0 ||
	    strv_push(&p.deny_paths, tpath("secret.txt")) < 0 ||
	    strv_push(&p.deny_paths, tpath("absdir")) < 0)
		return -1;
	r = lsm_policy_add(lsm_maps_of(skel), SESSION_POLICY, &p, exec_deny);
	policy_free(&p);
	if (r < 0) {
		fprintf(stderr, "lsm_policy_add: %s\n", strerror(-r));
		return -1;
	}
	if (lsm_net_allow_add(lsm_maps_of(skel), SESSION_POLICY, "127.0.0.1/32", port_ok, port_ok) <
		    0 ||
	    lsm_net_allow_add(lsm_maps_of(skel), SESSION_POLICY, "169.254.0.0/16", 0, 65535) < 0)
		return -1;
	return 0;
}

static int vm_teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(listeners); i++)
		if (listeners[i] >= 0)
			close(listeners[i]);
	for (size_t i = 0; i < n_cgroups; i++)
		rmdir(cgroups[i]); /* the tests rmdir those they finish with */
	lsm_bpf__destroy(skel);
	skel = NULL;
	if (tmp[0])
		nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* ---- what a child in a session tries ---- */

enum op_kind {
	OP_OPEN,
	OP_EXEC,    /* execve in the child itself: must fail */
	OP_EXEC_OK, /* execve in a grandchild, which must exit 0 */
	OP_LDSO,    /* the dynamic loader runs path: EPERM if it fails */
	OP_TCP,	    /* connect */
	OP_UDP,	    /* sendto */
	OP_UNIX,    /* connect */
	OP_RENAME,
	OP_LINK,
};

#define NOT_EPERM (-1) /* any outcome but EPERM */
#define REFUSED	  (-2) /* EPERM, recorded under a grandchild's pid */
#define LDSO	  "/lib64/ld-linux-x86-64.so.2"
#define MAX_OPS	  96

struct op {
	enum op_kind kind;
	char path[PATH_MAX];  /* file, or address text */
	char path2[PATH_MAX]; /* rename/link target */
	int port;
	int want;	       /* 0, EPERM, NOT_EPERM or REFUSED */
	char record[PATH_MAX]; /* the path a deny record names */
};

static struct op ops[MAX_OPS];
static size_t n_ops;

static struct op *op_add(enum op_kind kind, const char *path, int want)
{
	struct op *o = &ops[n_ops++];

	assert_true(n_ops <= ARRAY_SIZE(ops));
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->record, sizeof(o->record), "%s", path);
	o->want = want;
	return o;
}

static void op_net(enum op_kind kind, const char *addr, int port, int want)
{
	op_add(kind, addr, want)->port = port;
}

static void op_move(enum op_kind kind, const char *from, const char *to, int want,
		    const char *record)
{
	struct op *o = op_add(kind, from, want);

	snprintf(o->path2, sizeof(o->path2), "%s", to);
	snprintf(o->record, sizeof(o->record), "%s", record);
}

static int inet_addr_of(const char *text, int port, struct sockaddr_in6 *a6, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)a6;

	memset(a6, 0, sizeof(*a6));
	if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return AF_INET;
	}
	if (inet_pton(AF_INET6, text, &a6->sin6_addr) != 1)
		return -1;
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(port);
	*len = sizeof(*a6);
	return AF_INET6;
}

/* 0 or the errno the operation failed with. */
static int op_run(const struct op *o)
{
	struct sockaddr_in6 a6;
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	char *const argv[] = {(char *)o->path, NULL};
	char *const envp[] = {NULL};
	socklen_t len;
	int fd, family, r = 0, status;
	pid_t pid;

	switch (o->kind) {
	case OP_OPEN:
		fd = open(o->path, O_RDONLY);
		if (fd < 0)
			return errno;
		close(fd);
		return 0;
	case OP_EXEC:
		execve(o->path, argv, envp);
		return errno;
	case OP_EXEC_OK:
		pid = fork();
		if (pid == 0) {
			execve(o->path, argv, envp);
			_exit(100 + errno);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return ECHILD;
		return WIFEXITED(status) && WEXITSTATUS(status) >= 100 ? WEXITSTATUS(status) - 100
								       : (status ? ECHILD : 0);
	case OP_LDSO:
		pid = fork();
		if (pid == 0) {
			char *const ld_argv[] = {LDSO, (char *)o->path, NULL};

			execve(LDSO, ld_argv, envp);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return ECHILD;
		return status ? EPERM : 0;
	case OP_TCP:
	case OP_UDP:
		family = inet_addr_of(o->path, o->port, &a6, &len);
		if (family < 0)
			return EINVAL;
		fd = socket(family, (o->kind == OP_TCP ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK,
			    0);
		if (fd < 0)
			return errno;
		if (o->kind == OP_TCP)
			r = connect(fd, (struct sockaddr *)&a6, len);
		else
			r = sendto(fd, "x", 1, 0, (struct sockaddr *)&a6, len) < 0 ? -1 : 0;
		r = r < 0 && errno != EINPROGRESS ? errno : 0;
		close(fd);
		return r;
	case OP_UNIX:
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return errno;
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", o->path);
		r = connect(fd, (struct sockaddr *)&un, sizeof(un));
		r = r < 0 ? errno : 0;
		close(fd);
		return r;
	case OP_RENAME:
		return rename(o->path, o->path2) < 0 ? errno : 0;
	case OP_LINK:
		return link(o->path, o->path2) < 0 ? errno : 0;
	}
	return EINVAL;
}

/*
 * Runs ops in a child that first moves itself into the cgroup at cg (NULL:
 * stays outside every session). results[i] = the errno of ops[i].
 */
static pid_t run_child(const char *cg, int *results)
{
	char procs[PATH_MAX + 16]; /* cg and "/cgroup.procs" */
	int pipefd[2], status;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		if (cg) {
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
			if (write_file_str(procs, "0") < 0)
				_exit(3);
		}
		for (size_t i = 0; i < n_ops; i++) {
			int r = op_run(&ops[i]);

			if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
				_exit(4);
		}
		_exit(0);
	}
	close(pipefd[1]);
	for (size_t i = 0; i < n_ops; i++)
		if (read(pipefd[0], &results[i], sizeof(int)) != sizeof(int))
			fail_msg("child stopped before op %zu (%s)", i, ops[i].path);
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	return pid;
}

static bool want_met(int want, int result)
{
	switch (want) {
	case NOT_EPERM:
		return result != EPERM;
	case REFUSED:
		return result == EPERM;
	default:
		return result == want;
	}
}

static const char *want_text(int want)
{
	switch (want) {
	case NOT_EPERM:
		return "not EPERM";
	case REFUSED:
		return strerror(EPERM);
	default:
		return want ? strerror(want) : "ok";
	}
}

static void check_results(const int *results, const char *who)
{
	int bad = 0;

	for (size_t i = 0; i < n_ops; i++) {
		const struct op *o = &ops[i];

		if (!want_met(o->want, results[i])) {
			print_error("%s: op %zu (%d %s%s%s): %s, want %s\n", who, i, o->kind,
				    o->path, o->path2[0] ? " -> " : "", o->path2,
				    results[i] ? strerror(results[i]) : "ok", want_text(o->want));
			bad++;
		}
	}
	if (bad)
		fail_msg("%d of %zu operations went wrong", bad, n_ops);
}

/* ---- the records ---- */

struct rec {
	size_t size;
	union {
		struct bpfbox_event_hdr hdr;
		struct bpfbox_file_event file;
		struct bpfbox_exec_event exec;
		struct bpfbox_connect_event conn;
	};
};

static struct rec recs[256];
static size_t n_recs;

static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (n_recs < ARRAY_SIZE(recs)) {
		recs[n_recs].size = size;
		memcpy(&recs[n_recs].hdr, data,
		       size < sizeof(recs[0].exec) ? size : sizeof(recs[0].exec));
		n_recs++;
	}
	return 0;
}

static void drain_records(void)
{
	struct ring_buffer *rb;

	n_recs = 0;
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, NULL, NULL);
	assert_non_null(rb);
	while (ring_buffer__poll(rb, 200) > 0)
		;
	ring_buffer__free(rb);
}

static bool record_matches(const struct rec *r, const struct op *o, pid_t pid, __u32 session)
{
	struct sockaddr_in6 a6;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&a6;
	socklen_t len;
	int family;

	if (r->hdr.pid != (__u32)pid || r->hdr.session != session ||
	    r->hdr.decision != BPFBOX_DENY || r->hdr.layer != BPFBOX_LAYER_BPF_LSM ||
	    r->hdr.err != -EPERM)
		return false;
	switch (o->kind) {
	case OP_OPEN:
	case OP_RENAME:
	case OP_LINK:
		return r->hdr.type == BPFBOX_EV_FILE && streq(r->file.path, o->record) &&
		       (o->kind != OP_OPEN || (r->file.flags & O_ACCMODE) == O_RDONLY);
	case OP_EXEC:
	case OP_EXEC_OK:
	case OP_LDSO:
		return r->hdr.type == BPFBOX_EV_EXEC && streq(r->exec.filename, o->record);
	case OP_UNIX:
		return r->hdr.type == BPFBOX_EV_CONNECT && r->conn.family == AF_UNIX &&
		       streq(r->conn.unix_path, o->record);
	case OP_TCP:
	case OP_UDP:
		family = inet_addr_of(o->path, o->port, &a6, &len);
		if (r->hdr.type != BPFBOX_EV_CONNECT || r->conn.family != family ||
		    r->conn.port != o->port)
			return false;
		if (family == AF_INET)
			return !memcmp(r->conn.addr, &a4->sin_addr, 4);
		return !memcmp(r->conn.addr, &a6.sin6_addr, 16);
	}
	return false;
}

static void dump_records(pid_t pid)
{
	for (size_t j = 0; j < n_recs; j++) {
		const struct rec *r = &recs[j];

		if (r->hdr.pid != (__u32)pid)
			continue;
		print_error("record: type %u session %u layer %u err %d: %s\n", r->hdr.type,
			    r->hdr.session, r->hdr.layer, r->hdr.err,
			    r->hdr.type == BPFBOX_EV_FILE   ? r->file.path
			    : r->hdr.type == BPFBOX_EV_EXEC ? r->exec.filename
							    : r->conn.unix_path);
	}
}

/*
 * Every EPERM of ops has its own record, in order, and pid left no other
 * record.
 */
static void check_records(pid_t pid, __u32 session)
{
	size_t want = 0, from_pid = 0, next = 0;

	drain_records();
	for (size_t i = 0; i < n_ops; i++) {
		bool found = false;

		if (ops[i].want != EPERM)
			continue;
		want++;
		for (; next < n_recs && !found; next++)
			found = record_matches(&recs[next], &ops[i], pid, session);
		if (!found) {
			dump_records(pid);
			fail_msg("no deny record for op %zu (%s)", i, ops[i].path);
		}
	}
	for (size_t j = 0; j < n_recs; j++)
		if (recs[j].hdr.pid == (__u32)pid)
			from_pid++;
	assert_int_equal(from_pid, want);
}

/* ---- the cases ---- */

static void add_open_ops(void)
{
	static const struct {
		const char *rel;
		int want;
	} opens[] = {
		{"ws/.env", EPERM},
		{"ws/.env.local", EPERM}, /* NAME.* */
		{"ws/.envrc", 0},
		{"ws/.ssh", EPERM}, /* the directory itself */
		{"ws/.ssh/id_rsa", EPERM},
		{"ws/.ssh/config", EPERM}, /* below .ssh */
		{"ws/.ssh/a/b/key", EPERM},
		{"ws/x.pem", EPERM},
		{"ws/x.pem.txt", 0},
		{"ws/a.tar.gz", EPERM}, /* a suffix with a dot */
		{"ws/ok.txt", 0},
		{"ws/config", 0}, /* only .kube/config is denied */
		{"ws/.kube/config", EPERM},
		{"ws/.kube/cache.txt", 0},
		{"ws/.config/gcloud/creds.json", EPERM},
		{"ws/.config/other.txt", 0},
		{"secret.txt", EPERM}, /* absolute */
		{"secret.txt.bak", 0},
		{"absdir", EPERM},
		{"absdir/inner/file", EPERM},
		{".", 0}, /* on the way to an absolute path */
	};
	char rel[120];

	for (size_t i = 0; i < ARRAY_SIZE(opens); i++)
		op_add(OP_OPEN, tpath(opens[i].rel), opens[i].want);
	memset(rel, 'l', sizeof(rel));
	memcpy(rel, "ws/", 3);
	strcpy(rel + 103, ".pem");
	op_add(OP_OPEN, tpath(rel), EPERM);
	/* A default rule, on the root file system (the overlay in the VM). */
	if (access("/etc/shadow", F_OK) == 0)
		op_add(OP_OPEN, "/etc/shadow", EPERM);
	/* The same file through a symlink: the record names the file. */
	snprintf(op_add(OP_OPEN, tpath("env-link"), EPERM)->record, PATH_MAX, "%s",
		 tpath("ws/.env"));
}

/*
 * Runs the queued ops in a child and checks each result (who names the run
 * in a failure): in a new session cgroup NAME with the session's id and
 * flags, or outside every session for name NULL (id 0). With records, every
 * EPERM must have its record and nothing else (check_records).
 */
static void run_ops(const char *name, __u32 id, __u32 flags, const char *who, bool records)
{
	char cg[PATH_MAX];
	int results[MAX_OPS];
	pid_t pid;

	if (name)
		make_session(name, id, flags, cg);
	pid = run_child(name ? cg : NULL, results);
	check_results(results, who);
	if (records)
		check_records(pid, id);
	if (name)
		assert_int_equal(rmdir(cg), 0);
}

static void test_session_policy(void **state)
{
	(void)state;
	n_ops = 0;
	add_open_ops();
	op_add(OP_EXEC, tpath("bin/denied-tool"), EPERM);
	op_add(OP_EXEC, tpath("bin/alias"), EPERM);	  /* -> denied-tool */
	op_add(OP_EXEC, tpath("lnk/denied-tool"), EPERM); /* -> ok-tool */
	op_add(OP_EXEC_OK, tpath("bin/ok-tool"), 0);
	op_add(OP_EXEC, tpath("bin/denied-elf"), EPERM);
	/* Mapped by the loader in a grandchild: no record from the child. */
	if (access(LDSO, X_OK) == 0)
		op_add(OP_LDSO, tpath("bin/denied-elf"), REFUSED);
	/* exec_deny by path: a file, and everything in a directory. */
	op_add(OP_EXEC, tpath("bin/abs-tool"), EPERM);
	op_add(OP_OPEN, tpath("bin/abs-tool"), 0); /* reading it is fine */
	op_add(OP_EXEC, tpath("absexec/tool-elf"), EPERM);
	if (access(LDSO, X_OK) == 0)
		op_add(OP_LDSO, tpath("absexec/tool-elf"), REFUSED);
	op_move(OP_RENAME, tpath("bin/abs-tool"), tpath("bin/free-tool"), EPERM,
		tpath("bin/abs-tool"));
	op_move(OP_RENAME, tpath("absexec"), tpath("free"), EPERM, tpath("absexec"));
	op_net(OP_TCP, "127.0.0.1", port_ok, 0);
	op_net(OP_TCP, "127.0.0.2", port_other, EPERM);
	op_net(OP_TCP, "127.0.0.1", port_other, EPERM); /* port not allowed */
	op_net(OP_TCP, "::1", port_ok, EPERM);
	op_net(OP_TCP, "169.254.169.254", 80, EPERM); /* despite 169.254/16 */
	op_net(OP_TCP, "169.254.1.1", 80, NOT_EPERM); /* by 169.254/16 */
	op_net(OP_TCP, "fd00:ec2::254", 80, EPERM);
	op_net(OP_UDP, "127.0.0.1", port_ok, 0);
	op_net(OP_UDP, "127.0.0.2", port_other, EPERM);
	op_add(OP_UNIX, daemon_path, EPERM);
	snprintf(op_add(OP_UNIX, tpath("alias.sock"), EPERM)->record, PATH_MAX, "%s",
		 daemon_path); /* the listener's own name */
	op_add(OP_UNIX, tpath("other.sock"), 0);
	op_move(OP_RENAME, tpath("ws/.env"), tpath("ws/env.txt"), EPERM, tpath("ws/.env"));
	op_move(OP_LINK, tpath("ws/.env"), tpath("ws/env2"), EPERM, tpath("ws/.env"));
	op_move(OP_RENAME, tpath("ws/ok.txt"), tpath("ws/.env.new"), EPERM, tpath("ws/.env.new"));
	op_move(OP_RENAME, tpath("ws/.kube"), tpath("ws/kube2"), EPERM, tpath("ws/.kube"));
	op_move(OP_RENAME, tpath("ws/ok.txt"), tpath("ws/ok2.txt"), 0, "");
	op_move(OP_RENAME, tpath("ws/ok2.txt"), tpath("ws/ok.txt"), 0, "");
	op_move(OP_RENAME, tmp, tpath("../moved"), EPERM, tmp);

	run_ops("bpfbox-lsm-policy", SESSION_POLICY, BPFBOX_SF_NET_DENY, "in the session", true);
}

/* Outside every session nothing is denied, and nothing is recorded. */
static void test_outside(void **state)
{
	(void)state;
	n_ops = 0;
	add_open_ops();
	for (size_t i = 0; i < n_ops; i++)
		ops[i].want = 0;
	op_net(OP_TCP, "127.0.0.2", port_other, 0);
	op_add(OP_UNIX, daemon_path, 0);
	op_add(OP_EXEC_OK, tpath("bin/denied-tool"), 0);
	op_add(OP_EXEC_OK, tpath("bin/abs-tool"), 0);
	op_add(OP_EXEC_OK, tpath("absexec/tool-elf"), 0);
	if (access(LDSO, X_OK) == 0)
		op_add(OP_LDSO, tpath("bin/denied-elf"), 0);
	run_ops(NULL, 0, 0, "outside", true);
}

/* Rules belong to their session; the metadata deny holds without NET_DENY. */
static void test_session_scoping(void **state)
{
	(void)state;
	n_ops = 0;
	op_add(OP_OPEN, tpath("ws/.env"), 0);
	op_net(OP_TCP, "127.0.0.2", port_other, 0);
	op_add(OP_UNIX, daemon_path, EPERM);
	op_net(OP_TCP, "169.254.169.254", 80, EPERM);
	op_net(OP_TCP, "fd00:ec2::254", 80, EPERM);
	op_net(OP_TCP, "::ffff:169.254.169.254", 80, EPERM);
	op_net(OP_UDP, "169.254.169.254", 53, EPERM);
	run_ops("bpfbox-lsm-open", SESSION_OPEN, 0, "open session", true);

	n_ops = 0;
	op_net(OP_TCP, "169.254.169.254", 80, NOT_EPERM);
	run_ops("bpfbox-lsm-meta", SESSION_META, BPFBOX_SF_ALLOW_META, "metadata allowed", false);
}

/* Counts the entries of the three policy maps that belong to session. */
static size_t session_entries(struct lsm_bpf *sk, __u32 session)
{
	struct {
		struct bpf_map *map;
		size_t off;
	} maps[] = {
		{sk->maps.names, offsetof(struct bpfbox_name_key, session)},
		{sk->maps.abs_paths, offsetof(struct lsm_abs_key, session)},
		{sk->maps.net_allow, offsetof(struct bpfbox_net_key, session)},
	};
	char cur[128], next[128];
	size_t n = 0;

	for (size_t m = 0; m < ARRAY_SIZE(maps); m++) {
		int fd = bpf_map__fd(maps[m].map);
		void *prev = NULL;
		size_t ks = bpf_map__key_size(maps[m].map);

		while (bpf_map_get_next_key(fd, prev, next) == 0) {
			__u32 s;

			memcpy(&s, next + maps[m].off, sizeof(s));
			n += s == session;
			memcpy(cur, next, ks);
			prev = cur;
		}
	}
	return n;
}

/* Errors leave the maps as they were; remove takes a session's entries. */
static void test_add_remove(void **state)
{
	struct bpfbox_policy p;
	static const char *const bad_exec[] = {"ok", "a/b", NULL};
	size_t before = session_entries(skel, SESSION_POLICY);

	(void)state;
	policy_init(&p);
	assert_true(before > 0);
	assert_int_equal(strv_push(&p.deny_paths, "**/new-name"), 0);
	assert_int_equal(strv_push(&p.deny_paths, "**/bad*"), 0);
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), SESSION_POLICY, &p, NULL), -EINVAL);
	assert_int_equal(session_entries(skel, SESSION_POLICY), before);
	strv_clear(&p.deny_paths);
	assert_int_equal(strv_push(&p.deny_paths, "**/new-name"), 0);
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), SESSION_POLICY, &p, bad_exec), -EINVAL);
	assert_int_equal(session_entries(skel, SESSION_POLICY), before);
	assert_int_equal(lsm_net_allow_add(lsm_maps_of(skel), SESSION_POLICY, "10.0.0.0/33", 1, 2),
			 -EINVAL);
	assert_int_equal(lsm_net_allow_add(lsm_maps_of(skel), SESSION_POLICY, "10.0.0.0/8", 2, 1),
			 -EINVAL);
	/* Adding the same policy again changes nothing. */
	policy_free(&p);
	policy_init(&p);
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), SESSION_POLICY, &p, NULL), 0);
	assert_int_equal(session_entries(skel, SESSION_POLICY), before);
	/* Another session's entries are its own. */
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), 9, &p, NULL), 0);
	assert_true(session_entries(skel, 9) > 0);
	assert_int_equal(lsm_policy_remove(lsm_maps_of(skel), 9), 0);
	assert_int_equal(session_entries(skel, 9), 0);
	assert_int_equal(session_entries(skel, SESSION_POLICY), before);
	assert_int_equal(lsm_policy_remove(lsm_maps_of(skel), SESSION_POLICY), 0);
	assert_int_equal(session_entries(skel, SESSION_POLICY), 0);
	policy_free(&p);
}

/* A path both denied and exec-denied: one node with both bits. */
static void test_abs_merge(void **state)
{
	const char *const exec_deny[] = {"/m/n", NULL};
	struct lsm_entries es = {};
	struct lsm_abs_node node;
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	strv_clear(&p.deny_paths);
	assert_int_equal(strv_push(&p.deny_paths, "/m/n"), 0);
	assert_int_equal(lsm_compile_deny("/m/n", 9, &es), 0);
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), 9, NULL, exec_deny), 0);
	assert_int_equal(
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.abs_paths), &es.v[1].abs, &node), 0);
	assert_int_equal(node.deny, LSM_DENY_EXEC);
	assert_int_equal(lsm_policy_add(lsm_maps_of(skel), 9, &p, NULL), 0);
	assert_int_equal(
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.abs_paths), &es.v[1].abs, &node), 0);
	assert_int_equal(node.deny, LSM_DENY_EXEC | LSM_DENY_OPEN);
	assert_int_equal(node.id, es.v[1].node.id);
	assert_int_equal(session_entries(skel, 9), 2);
	assert_int_equal(lsm_policy_remove(lsm_maps_of(skel), 9), 0);
	lsm_entries_free(&es);
	policy_free(&p);
}

/* A map that fills up half way through: what was added is taken back. */
static void test_add_rollback(void **state)
{
	struct lsm_bpf *small = lsm_bpf__open();
	struct bpf_program *prog;
	struct bpfbox_policy p;
	int r;

	(void)state;
	assert_non_null(small);
	bpf_object__for_each_program(prog, small->obj) bpf_program__set_autoload(prog, false);
	assert_int_equal(bpf_map__set_max_entries(small->maps.names, 5), 0);
	assert_int_equal(lsm_bpf__load(small), 0);
	policy_init(&p);
	r = lsm_policy_add(lsm_maps_of(small), 1, &p, NULL);
	assert_true(r == -E2BIG || r == -ENOMEM);
	assert_int_equal(session_entries(small, 1), 0);
	policy_free(&p);
	lsm_bpf__destroy(small);
}

/* What the BPF LSM fills leaves not_enforced; the rest stays, separators too. */
static void test_gaps_filled(void **state)
{
	static const struct {
		const char *in, *out;
		uint32_t flags;
	} cases[] = {
		{AGENT_GAP_SCOPE_TEXT, "", BPFBOX_SF_GAP_SCOPE},
		{"a; " AGENT_GAP_SCOPE_TEXT, "a", BPFBOX_SF_GAP_SCOPE},
		{AGENT_GAP_SCOPE_TEXT "; b", "b", BPFBOX_SF_GAP_SCOPE},
		{"a; " AGENT_GAP_SCOPE_TEXT "; b", "a; b", BPFBOX_SF_GAP_SCOPE},
		{"a; " AGENT_GAP_SCOPE_TEXT, "a; " AGENT_GAP_SCOPE_TEXT, BPFBOX_SF_GAP_META},
		{"a; b", "a; b", BPFBOX_SF_GAP_SCOPE},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[512];

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		agent_gaps_filled(buf, cases[i].flags);
		assert_string_equal(buf, cases[i].out);
	}
}

/* Entries of sessions no adopted session owns go; the kept session's stay. */
static bool keep_policy_session(void *ctx, __u32 session)
{
	(void)ctx;
	return session == SESSION_POLICY;
}

static void test_sweep(void **state)
{
	static const char *const deny[] = {"**/.env", "/etc/shadow"};
	static const char *const exec[] = {"curl"};
	static const char *const bad[] = {"**/x", "**/b*d"};
	size_t kept = session_entries(skel, SESSION_POLICY);
	const char *at;

	(void)state;
	assert_int_equal(lsm_policy_add_lists(lsm_maps_of(skel), 9, deny, 2, exec, 1, &at), 0);
	assert_true(session_entries(skel, 9) > 0);
	assert_int_equal(lsm_policy_add_lists(lsm_maps_of(skel), 11, bad, 2, NULL, 0, &at),
			 -EINVAL);
	assert_string_equal(at, "**/b*d");
	assert_int_equal(session_entries(skel, 11), 0);
	/* Removal by the same lists, key by key, leaves nothing of session 12. */
	assert_int_equal(lsm_policy_add_lists(lsm_maps_of(skel), 12, deny, 2, exec, 1, &at), 0);
	assert_true(session_entries(skel, 12) > 0);
	assert_int_equal(lsm_policy_remove_lists(lsm_maps_of(skel), 12, deny, 2, exec, 1), 0);
	assert_int_equal(session_entries(skel, 12), 0);
	assert_true(session_entries(skel, 9) > 0);
	assert_true(lsm_policy_sweep(lsm_maps_of(skel), keep_policy_session, NULL) > 0);
	assert_int_equal(session_entries(skel, 9), 0);
	assert_int_equal(session_entries(skel, SESSION_POLICY), kept);
}

/* Whether bpf is in the active LSM list (securityfs). */
static bool bpf_lsm_active(void)
{
	char list[512];

	if (read_file_str("/sys/kernel/security/lsm", list, sizeof(list)) < 0)
		return true; /* not mounted: let the load decide */
	return word_list_has(list, "bpf", ",");
}

int main(void)
{
	const struct CMUnitTest compile_tests[] = {
		cmocka_unit_test(test_compile_table), cmocka_unit_test(test_compile_lengths),
		cmocka_unit_test(test_compile_abs),   cmocka_unit_test(test_compile_exec),
		cmocka_unit_test(test_compile_scope), cmocka_unit_test(test_parse_cidr),
		cmocka_unit_test(test_gaps_filled),
	};
	const struct CMUnitTest vm_tests[] = {
		cmocka_unit_test(test_session_policy),	cmocka_unit_test(test_outside),
		cmocka_unit_test(test_session_scoping), cmocka_unit_test(test_add_remove),
		cmocka_unit_test(test_abs_merge),	cmocka_unit_test(test_add_rollback),
		cmocka_unit_test(test_sweep),
	};
	char dir[] = "/tmp/bpfbox-lsm-sock.XXXXXX";
	int failed, r;

	failed = cmocka_run_group_tests_name("lsm policy compilation", compile_tests, NULL, NULL);
	libbpf_set_print(libbpf_keep);
	if (!bpf_lsm_active()) {
		printf("skip - BPF LSM is not in the active LSM list; "
		       "tests/vm/matrix runs this in the Full VM\n");
		return failed ? 1 : 0;
	}
	/* The daemon socket's path is rodata: known before the load. */
	if (!mkdtemp(dir))
		return 1;
	snprintf(daemon_path, sizeof(daemon_path), "%s/daemon.sock", dir);
	r = lsm_load();
	if (r == -EPERM) {
		rmdir(dir);
		printf("%s\n", SKIP_LINE);
		return failed ? 1 : 0;
	}
	if (r < 0) {
		rmdir(dir);
		fputs(libbpf_log, stderr);
		printf("FAIL - lsm: the programs do not load: %s\n", strerror(-r));
		return 1;
	}
	if (cgroup2_mount_point(cg_root, sizeof(cg_root)) < 0) {
		printf("FAIL - lsm: no cgroup2 mount\n");
		failed++;
	} else {
		failed += cmocka_run_group_tests_name("lsm programs", vm_tests, vm_setup,
						      vm_teardown);
	}
	lsm_bpf__destroy(skel); /* no-op after vm_teardown */
	unlink(daemon_path);
	rmdir(dir);
	return failed ? 1 : 0;
}
