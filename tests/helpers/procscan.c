// SPDX-License-Identifier: GPL-2.0
/*
 * procscan REVERSED...: run inside a session, looks for secrets of the
 * caller under /proc: every process's environ, cmdline, maps and mem
 * (each readable mapping). The markers come reversed on the command line
 * so that this program's own argv never holds them (its own memory does,
 * so its own pid is skipped).
 *
 * Positive control first: a child of this program (sleep) gets the first
 * marker in its environment, and the scan must find it there in environ
 * and mem; a scan that cannot find a planted marker proves nothing.
 *
 * Prints "leak: PID FILE MARKER" for each find outside the control, then
 * "scanned N processes" and exits 0 (control found, no leak), 1 (a leak)
 * or 2 (the control was not found, or the scan could not run).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_MARKERS 4

static char *markers[MAX_MARKERS];
static int n_markers;

static char *reversed(const char *s)
{
	size_t n = strlen(s);
	char *r = malloc(n + 1);

	if (!r)
		exit(2);
	for (size_t i = 0; i < n; i++)
		r[i] = s[n - 1 - i];
	r[n] = '\0';
	return r;
}

/* Which marker buf[0..n) holds, -1 if none. */
static int find_marker(const char *buf, size_t n)
{
	for (int m = 0; m < n_markers; m++) {
		size_t ml = strlen(markers[m]);

		for (size_t i = 0; i + ml <= n; i++)
			if (buf[i] == markers[m][0] && !memcmp(buf + i, markers[m], ml))
				return m;
	}
	return -1;
}

/* Reads a whole /proc file (up to 1 MiB); the marker found or -1. */
static int scan_file(const char *path)
{
	static char buf[1 << 20];
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (total < (ssize_t)sizeof(buf) && (n = read(fd, buf + total, sizeof(buf) - total)) > 0)
		total += n;
	close(fd);
	return find_marker(buf, total);
}

/* Every readable mapping of pid through /proc/PID/mem; the marker or -1. */
static int scan_mem(const char *pid)
{
	static char chunk[1 << 16];
	char path[64], line[512];
	int found = -1, mem;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	maps = fopen(path, "re");
	if (!maps)
		return -1;
	snprintf(path, sizeof(path), "/proc/%s/mem", pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	while (mem >= 0 && found < 0 && fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
		    strstr(line, "[vsyscall]") || strstr(line, "[vvar"))
			continue;
		/* Overlapping reads: a marker across two chunks is still seen. */
		for (unsigned long a = lo; a < hi && found < 0; a += sizeof(chunk) - 256) {
			size_t len = hi - a < sizeof(chunk) ? hi - a : sizeof(chunk);
			ssize_t n = pread(mem, chunk, len, (off_t)a);

			if (n > 0)
				found = find_marker(chunk, n);
		}
	}
	if (mem >= 0)
		close(mem);
	fclose(maps);
	return found;
}

/* Scans one process; returns the number of finds, printed as "leak:" unless tag is set. */
static int scan_pid(const char *pid, const char *tag)
{
	static const char *const files[] = {"environ", "cmdline", "maps"};
	char path[64];
	int finds = 0, m;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "/proc/%s/%s", pid, files[i]);
		if ((m = scan_file(path)) >= 0) {
			printf("%s: %s %s marker %d\n", tag ? tag : "leak", pid, files[i], m);
			finds++;
		}
	}
	if ((m = scan_mem(pid)) >= 0) {
		printf("%s: %s mem marker %d\n", tag ? tag : "leak", pid, m);
		finds++;
	}
	return finds;
}

static pid_t start_control(void)
{
	char env[256];
	pid_t pid;

	snprintf(env, sizeof(env), "CONTROL=%s", markers[0]);
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"sleep", "30", NULL}, *envp[] = {env, NULL};

		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	char self[16], ctl[16], path[64];
	int leaks = 0, scanned = 0, control;
	struct dirent *e;
	pid_t cpid;
	DIR *d;

	for (int i = 1; i < argc && n_markers < MAX_MARKERS; i++)
		markers[n_markers++] = reversed(argv[i]);
	if (!n_markers)
		return 2;
	cpid = start_control();
	snprintf(self, sizeof(self), "%d", getpid());
	snprintf(ctl, sizeof(ctl), "%d", cpid);
	/* The control has exec'd once its environ is sleep's (bounded: 5 s). */
	snprintf(path, sizeof(path), "/proc/%d/environ", cpid);
	for (int i = 0; i < 500 && scan_file(path) < 0; i++)
		usleep(10000);
	control = scan_pid(ctl, "control");
	d = opendir("/proc");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || !strcmp(e->d_name, self) ||
		    !strcmp(e->d_name, ctl))
			continue;
		scanned++;
		leaks += scan_pid(e->d_name, NULL);
	}
	if (d)
		closedir(d);
	kill(cpid, SIGKILL);
	waitpid(cpid, NULL, 0);
	printf("scanned %d processes\n", scanned);
	if (control < 2) {
		printf("control: the planted marker was not found in environ and mem (%d finds)\n",
		       control);
		return 2;
	}
	return leaks ? 1 : 0;
}
