// SPDX-License-Identifier: GPL-2.0
/*
 * The private home of a session (docs/runtime.md): a fresh directory next
 * to the private tmp, with copies of the configuration tools need and that
 * holds no secret, and the PATH entries that resolve under the caller's
 * home made readable, unless a credential rule covers them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_internal.h"
#include "changes.h"
#include "landlock.h"
#include "cred_scan.h"
#include "cred_match.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* Copied when present: small, commonly needed, no credentials by design. */
static const char *const config_files[] = {
	".gitconfig",	    ".config/git/config", ".config/git/ignore", ".config/git/attributes",
	".vimrc",	    ".inputrc",		  ".editorconfig",	".nanorc",
	".selected_editor",
};

#define CONFIG_MAX_BYTES (64 * 1024)

const char *session_caller_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

static int mkdirs(char *path, mode_t mode)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}

/*
 * Copies one config file, read-only; git's config is written anew from
 * the keys it allows (home_git.c), never copied.
 */
static void copy_config(const char *from_home, const char *to_home, const char *name, uid_t uid,
			gid_t gid)
{
	char src[PATH_MAX], dst[PATH_MAX], buf[CONFIG_MAX_BYTES];
	bool git = streq(name, ".gitconfig") || streq(name, ".config/git/config");
	struct stat st;
	size_t len;
	FILE *in, *out;
	int fd;

	if (snprintf(src, sizeof(src), "%s/%s", from_home, name) >= (int)sizeof(src) ||
	    snprintf(dst, sizeof(dst), "%s/%s", to_home, name) >= (int)sizeof(dst))
		return;
	if (stat(src, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_BYTES)
		return;
	if (mkdirs(dst, 0700) < 0)
		return;
	in = fopen(src, "re");
	if (!in)
		return;
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		if (fd >= 0)
			close(fd);
		fclose(in);
		return;
	}
	len = fread(buf, 1, sizeof(buf), in);
	if (git)
		session_home_gitconfig(buf, len, out);
	else
		fwrite(buf, 1, len, out);
	if (fchown(fd, uid, gid) < 0) {
		/* Only root changes owners; the copy is then the caller's already. */
	}
	fclose(out);
	fclose(in);
}

static uid_t home_uid;
static gid_t home_gid;

static int chown_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (lchown(path, home_uid, home_gid) < 0) {
		/* Not root: ours already. */
	}
	return 0;
}

int session_home_make(struct session *s, uid_t uid, gid_t gid)
{
	const char *from = session_caller_home();

	snprintf(s->home, sizeof(s->home), "%s/" HOME_PREFIX "%s" HOME_SUFFIX, session_tmp_base(),
		 s->id);
	if (mkdir(s->home, 0700) < 0) {
		int r = log_error_errno(errno, "cannot create the session's private home %s",
					s->home);

		s->home[0] = '\0';
		return r;
	}
	/*
	 * Locked while the session lives (the child's copy too): a run killed
	 * before its end leaves it unlocked, and a later session's end
	 * removes it (session_home_sweep_dir).
	 */
	s->home_lock = open(s->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->home_lock < 0 || flock(s->home_lock, LOCK_EX | LOCK_NB) < 0) {
		/* Unlocked, another session's end could remove it under this one: not run. */
		int r = log_error_errno(errno,
					"cannot lock the session's private home %s; "
					"nothing ran",
					s->home);

		session_home_remove(s);
		s->home[0] = '\0';
		return r;
	}
	for (size_t i = 0; from && i < ARRAY_SIZE(config_files); i++)
		copy_config(from, s->home, config_files[i], uid, gid);
	home_uid = uid;
	home_gid = gid;
	if (uid != getuid() || gid != getgid())
		nftw(s->home, chown_entry, 8, FTW_PHYS);
	/* --secret: the bundle with the session CA lives here (session_env.c). */
	return session_write_ca_bundle(s, uid, gid);
}

void session_home_remove(struct session *s)
{
	/* Any depth, as the private tmp (rm_tree). */
	if (s->home[0] && rm_tree(s->home) < 0)
		log_warn("cannot remove all of the session's private home %s", s->home);
	fd_close(&s->home_lock);
}

int session_home_sweep_dir(void)
{
	return open(session_tmp_base(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Toolchain managers whose shims run code from their whole tree (pyenv's
 * libexec, rustup's toolchains): a PATH entry inside one grants the tree.
 */
static const char *const toolchain_roots[] = {
	".pyenv", ".cargo",	".rustup",    ".nvm",
	".rbenv", ".goenv",	".volta",     ".bun",
	".deno",  ".sdkman",	".asdf",      ".nodenv",
	".jenv",  ".local/bin", ".local/lib", ".local/share/pnpm",
	"go",	  ".go",
};

bool session_path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* The tree to grant for a PATH entry under home (docs/runtime.md). */
static int grant_entry(struct strv *ro, const char *home, const char *real)
{
	char root[PATH_MAX];
	int r = 0;

	for (size_t i = 0; !r && i < ARRAY_SIZE(toolchain_roots); i++) {
		snprintf(root, sizeof(root), "%s/%s", home, toolchain_roots[i]);
		if (!session_path_below(real, root))
			continue;
		if (!strv_contains(ro, root))
			r = strv_push(ro, root);
		/* cargo's proxies run rustup's toolchains; ~/.local/bin scripts import ~/.local/lib. */
		if (!r && streq(toolchain_roots[i], ".cargo"))
			snprintf(root, sizeof(root), "%s/.rustup", home);
		else if (!r && streq(toolchain_roots[i], ".local/bin"))
			snprintf(root, sizeof(root), "%s/.local/lib", home);
		else
			return r;
		if (access(root, F_OK) == 0 && !strv_contains(ro, root))
			r = strv_push(ro, root);
		return r;
	}
	return strv_contains(ro, real) ? 0 : strv_push(ro, real);
}

/*
 * Per-user toolchains (docs/runtime.md): found read-only at their usual
 * place under the private home, a symlink to the caller's tree, with the
 * variable that names them when there is one. NULL var: found by the path
 * alone; keep: a variable passed through only when the caller set it
 * (rustup and cargo default to the symlinked path).
 */
static const struct {
	const char *rel, *var;
	bool keep;
	/*
	 * Files the tool writes at the top of its tree on every run and does
	 * without: the tree appears as a directory of the session's own, each
	 * entry a symlink to the caller's but these, which the tool makes anew
	 * there (private, gone with the home). NULL: one symlink to the tree.
	 */
	const char *const *fresh;
} toolchains[] = {
	{".rustup", "RUSTUP_HOME", true, NULL},
	{".cargo", "CARGO_HOME", true,
	 (const char *const[]){".global-cache", ".package-cache", ".package-cache-mutate", NULL}},
	{".nvm", "NVM_DIR", false, NULL},
	{".pyenv", "PYENV_ROOT", false, NULL},
	{".sdkman", "SDKMAN_DIR", false, NULL},
	{"go", "GOPATH", false, NULL},
	{".local/share/uv", NULL, false, NULL},
	{".local/bin", NULL, false, NULL},
	{".local/pipx", NULL, false, NULL},
	{".local/share/pipx", NULL, false, NULL},
};

bool session_cred_denied(const struct bpfbox_policy *p, const struct strv *cred, const char *real)
{
	if (cred_path_denied(p, real))
		return true;
	for (size_t i = 0; i < cred->n; i++)
		if (session_path_below(real, cred->v[i]) || session_path_below(cred->v[i], real))
			return true;
	for (size_t i = 0; i < p->deny_paths.n; i++)
		if (p->deny_paths.v[i][0] == '/' && (session_path_below(real, p->deny_paths.v[i]) ||
						     session_path_below(p->deny_paths.v[i], real)))
			return true;
	return false;
}

/* The caller's directory for toolchain i (its variable, else under home), resolved. */
static bool toolchain_dir(size_t i, const char *home, char *real)
{
	const char *v = toolchains[i].var ? getenv(toolchains[i].var) : NULL;
	char dir[PATH_MAX];
	struct stat st;

	if (v && v[0] == '/')
		snprintf(dir, sizeof(dir), "%s", v);
	else if (home &&
		 snprintf(dir, sizeof(dir), "%s/%s", home, toolchains[i].rel) >= (int)sizeof(dir))
		return false;
	return (v || home) && realpath(dir, real) && stat(real, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether name is one of fresh's, or a file sqlite keeps beside one (-journal, -wal, -shm). */
static bool fresh_name(const char *const *fresh, const char *name)
{
	for (; *fresh; fresh++) {
		size_t n = strlen(*fresh);

		if (!strncmp(name, *fresh, n) &&
		    (!name[n] || streq(name + n, "-journal") || streq(name + n, "-wal") ||
		     streq(name + n, "-shm")))
			return true;
	}
	return false;
}

/*
 * The toolchain tree real as the directory link of the session's home: a
 * symlink to each entry of real but the fresh ones and those a credential
 * rule covers (cargo's credentials.toml). The session may add files there
 * (its own); what the symlinks reach stays read-only.
 */
static void shadow_tree(const struct session *s, const struct strv *cred, const char *real,
			const char *link, const char *const *fresh)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (mkdir(link, 0700) < 0 && errno != EEXIST) {
		log_warn("cannot make %s in the session's home: %s", link, strerror(errno));
		return;
	}
	if (!(d = dir_open_at(AT_FDCWD, real))) {
		log_warn("cannot list %s for the session's home: %s", real, strerror(errno));
		return;
	}
	while ((de = dir_next(d))) {
		if (fresh_name(fresh, de->d_name) ||
		    snprintf(from, sizeof(from), "%s/%s", real, de->d_name) >= (int)sizeof(from) ||
		    snprintf(to, sizeof(to), "%s/%s", link, de->d_name) >= (int)sizeof(to) ||
		    session_cred_denied(s->policy, cred, from))
			continue;
		if (symlink(from, to) < 0 && errno != EEXIST)
			log_warn("cannot link %s in the session's home: %s", from, strerror(errno));
	}
	closedir(d);
}

/*
 * Each toolchain tree the caller has: read-only, and a symlink to it at the
 * same place in the private home. Not the home itself, not the workspace,
 * not what a credential rule covers.
 */
static int grant_toolchains(const struct session *s, const struct strv *cred, struct strv *ro)
{
	const struct bpfbox_policy *p = s->policy;
	const char *home = session_caller_home();
	int r = 0;

	for (size_t i = 0; !r && i < ARRAY_SIZE(toolchains); i++) {
		char real[PATH_MAX], link[PATH_MAX];

		if (!toolchain_dir(i, home, real) || (home && streq(real, home)) ||
		    session_path_below(p->workspace, real) || session_cred_denied(p, cred, real))
			continue;
		if (!strv_contains(ro, real))
			r = strv_push(ro, real);
		if (r || !s->home[0] ||
		    snprintf(link, sizeof(link), "%s/%s", s->home, toolchains[i].rel) >=
			    (int)sizeof(link) ||
		    mkdirs(link, 0700) < 0)
			continue;
		if (toolchains[i].fresh)
			shadow_tree(s, cred, real, link, toolchains[i].fresh);
		else if (symlink(real, link) < 0 && errno != EEXIST)
			log_warn("cannot link %s in the session's home: %s", real, strerror(errno));
	}
	/* The links and the directories made for them: the session user's. */
	if (s->home[0] && (home_uid != getuid() || home_gid != getgid()))
		nftw(s->home, chown_entry, 8, FTW_PHYS);
	return r;
}

int session_home_env(const struct session *s, struct strv *env)
{
	int r = 0;

	for (size_t i = 0; !r && s->home[0] && i < ARRAY_SIZE(toolchains); i++) {
		const char *v = toolchains[i].var ? getenv(toolchains[i].var) : NULL;
		char link[PATH_MAX], entry[PATH_MAX + 32];
		struct stat st;

		if (!toolchains[i].var || snprintf(link, sizeof(link), "%s/%s", s->home,
						   toolchains[i].rel) >= (int)sizeof(link))
			continue;
		/* --env and the config said it first. */
		for (size_t k = 0; k < env->n; k++)
			if (startswith(env->v[k], toolchains[i].var) &&
			    env->v[k][strlen(toolchains[i].var)] == '=')
				link[0] = '\0';
		if (!link[0])
			continue;
		/* The caller's value when it named a tree granted above. */
		if (v && v[0] == '/' && lstat(link, &st) == 0 && S_ISLNK(st.st_mode))
			snprintf(entry, sizeof(entry), "%s=%s", toolchains[i].var, v);
		else if (!toolchains[i].keep && lstat(link, &st) == 0 && S_ISLNK(st.st_mode))
			snprintf(entry, sizeof(entry), "%s=%s", toolchains[i].var, link);
		else
			continue;
		r = strv_push(env, entry);
	}
	return r;
}

int session_home_path(const struct session *s, struct strv *ro, char *path_env, size_t size)
{
	const struct bpfbox_policy *p = s->policy;
	const char *path = getenv("PATH"), *home = session_caller_home();
	struct strv cred = {0};
	char dropped[1024] = "";
	size_t len = 0;
	int r = 0;

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	if (home)
		r = cred_top_paths(p, home, &cred);
	if (!r)
		r = grant_toolchains(s, &cred, ro);
	path_env[0] = '\0';
	for (const char *e = path; !r && *e;) {
		size_t n = strcspn(e, ":");
		char entry[PATH_MAX], real[PATH_MAX];
		bool keep = true;

		snprintf(entry, sizeof(entry), "%.*s", (int)(n < sizeof(entry) ? n : 0), e);
		e += n + (e[n] == ':');
		if (!entry[0])
			continue;
		if (home && entry[0] == '/' && realpath(entry, real) &&
		    session_path_below(real, home) && !session_path_below(real, p->workspace)) {
			/* The home itself on PATH would grant all of it: not that. */
			if (streq(real, home) || cred_path_denied(p, real))
				keep = false;
			for (size_t i = 0; i < cred.n; i++)
				if (session_path_below(real, cred.v[i]))
					keep = false;
			for (size_t i = 0; keep && i < p->deny_paths.n; i++)
				if (p->deny_paths.v[i][0] == '/' &&
				    session_path_below(real, p->deny_paths.v[i]))
					keep = false;
			if (keep)
				r = grant_entry(ro, home, real);
			if (!keep)
				snprintf(dropped + strlen(dropped),
					 sizeof(dropped) - strlen(dropped), "%s%s",
					 dropped[0] ? ", " : "", entry);
		}
		if (keep && len + strlen(entry) + 2 < size)
			len += snprintf(path_env + len, size - len, "%s%s", len ? ":" : "", entry);
	}
	strv_clear(&cred);
	if (dropped[0])
		log_warn_always("PATH entries dropped (a credential rule covers them, or the whole "
				"home): %s",
				dropped);
	return r;
}

/*
 * --read-host shows /home and /root (ns_mount.c): the credential entries of every
 * home there are masked like the caller's, a stat per pattern and home.
 */
static int other_homes_credentials(const struct bpfbox_policy *p, struct strv *cred)
{
	DIR *d = opendir("/home");
	struct dirent *e;
	int r = cred_top_paths(p, "/root", cred);

	while (!r && d && (e = readdir(d))) {
		char dir[PATH_MAX];

		if (e->d_name[0] == '.' ||
		    snprintf(dir, sizeof(dir), "/home/%s", e->d_name) >= (int)sizeof(dir))
			continue;
		r = cred_top_paths(p, dir, cred);
	}
	if (d)
		closedir(d);
	return r;
}

bool session_policy_writes(const struct bpfbox_policy *view, const char *path)
{
	if (view->mode != MODE_READ_ONLY && session_path_below(path, view->workspace))
		return true;
	for (size_t i = 0; i < view->rw_paths.n; i++)
		if (session_path_below(path, view->rw_paths.v[i]))
			return true;
	return false;
}

/*
 * The change sets' directory, masked where the view would show it,
 * whatever this session's mode (docs/SECURITY.md, "Change sets"): a
 * direct session granted a tree that holds it (--rw ~/.local, the whole
 * home as the workspace) must neither write into a set that waits for
 * review or apply, nor read another session's. Made first when such a
 * grant holds it and it does not exist yet: otherwise the session could
 * make it, a symlink to a tree of its own, for a later review session. A
 * workspace inside it is the caller's choice and is left alone.
 */
static int mask_change_sets(const struct session *s, struct bpfbox_policy *view)
{
	char root[PATH_MAX];
	struct stat st;
	int r;

	if (s->changes) {
		snprintf(root, sizeof(root), "%s", s->changes->dir);
		*strrchr(root, '/') = '\0';
	} else {
		if (changes_root(root, sizeof(root), false) < 0 ||
		    session_path_below(view->workspace, root))
			return 0;
		if (lstat(root, &st) < 0) {
			if (!session_policy_writes(view, root))
				return 0;
			r = changes_root(root, sizeof(root), true);
			if (r < 0)
				return log_refusal(
					EINVAL,
					"cannot make the change sets' directory %s, which a "
					"grant of this session holds, to mask it: %s (set "
					"BPFBOX_CHANGES_DIR outside the grants); nothing ran",
					root, strerror(-r));
		} else if (!S_ISDIR(st.st_mode)) {
			/*
			 * bpfbox makes it a directory: anything else was put there,
			 * and the child's mask would skip it. Refused where this
			 * session could write there (a review session refuses it
			 * anyway: changes_root).
			 */
			if (!session_policy_writes(view, root))
				return 0;
			return log_refusal(
				EINVAL,
				"the change sets' directory %s is a symlink or not a "
				"directory, and a grant of this session holds it: point "
				"BPFBOX_CHANGES_DIR at a real directory, or remove it and "
				"bpfbox makes it; nothing ran",
				root);
		}
	}
	return strv_contains(&view->deny_paths, root) ? 0 : strv_push(&view->deny_paths, root);
}

int session_view_policy(struct session *s, const struct strv *path_ro, struct bpfbox_policy *view)
{
	const struct bpfbox_policy *p = s->policy;
	const char *home = session_caller_home();
	struct strv cred = {0};
	int r = policy_dup(view, p);

	/*
	 * The BPF LSM holds the deny patterns at Full, with its records: the
	 * masks of the plan's scan would answer first (EACCES).
	 */
	if (s->layers.enabled == LEVEL_FULL)
		s->layers.ns.nmasks = 0;
	if (!r && s->home[0])
		r = strv_push(&view->rw_paths, s->home);
	for (size_t i = 0; !r && i < path_ro->n; i++)
		if (!strv_contains(&view->ro_paths, path_ro->v[i]))
			r = strv_push(&view->ro_paths, path_ro->v[i]);
	/* --read-host: the caller's home too, which the view hides (/home, /root). */
	if (!r && p->read_host && home && !strv_contains(&view->ro_paths, home))
		r = strv_push(&view->ro_paths, home);
	/*
	 * The credential entries of the granted trees, masked by the view as
	 * the absolute deny paths are (a grant of a tree under the session's
	 * /tmp is wider in Landlock than the tree): the top of the trees the
	 * plan's scan did not walk (the caller's home, the PATH trees, the
	 * private home); what it found in the workspace and the --ro/--rw
	 * grants goes to the child through the plan (ns.h, checked there).
	 */
	if (!r)
		r = cred_top_paths(p, home, &cred);
	if (!r && p->read_host)
		r = other_homes_credentials(p, &cred);
	for (size_t i = 0; !r && i < view->ro_paths.n; i++)
		if (!strv_contains(&p->ro_paths, view->ro_paths.v[i]))
			r = cred_top_paths(p, view->ro_paths.v[i], &cred);
	for (size_t i = 0; !r && i < view->rw_paths.n; i++)
		if (!strv_contains(&p->rw_paths, view->rw_paths.v[i]))
			r = cred_top_paths(p, view->rw_paths.v[i], &cred);
	for (size_t i = 0; !r && i < cred.n; i++)
		if (!strv_contains(&view->deny_paths, cred.v[i]))
			r = strv_push(&view->deny_paths, cred.v[i]);
	strv_clear(&cred);
	if (r)
		return log_error_errno(r, "cannot prepare the session's mount view");
	return mask_change_sets(s, view);
}
