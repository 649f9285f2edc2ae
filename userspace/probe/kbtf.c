// SPDX-License-Identifier: GPL-2.0
/*
 * One parse of the kernel's BTF for all the loads of a hold (kbtf.h).
 * The copy is shared by threads (the command object loads beside the
 * network's): libbpf only reads a base BTF (types, names, candidates for
 * CO-RE and attach points), and the references are counted under a lock.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kbtf.h"
#include "../lib/util.h"

struct btf *__real_btf__load_vmlinux_btf(void);
void __real_btf__free(struct btf *btf);
struct btf *__wrap_btf__load_vmlinux_btf(void);
void __wrap_btf__free(struct btf *btf);

static pthread_mutex_t kbtf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct btf *shared;
static int holds, users;
static unsigned int reads;

/* A raw BTF file parsed from a private mapping, or NULL. */
static struct btf *parse_fd(int fd)
{
	struct btf *b = NULL;
	struct stat st;
	void *m;

	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			b = btf__new(m, st.st_size);
			munmap(m, st.st_size);
			if (libbpf_get_error(b))
				b = NULL;
		}
	}
	return b;
}

/*
 * The kernel's BTF, mapped where the kernel lets its file be (6.16 on):
 * half the time of libbpf's read() of it a page at a time (66 against
 * 31 ms here, docs/benchmarks.md). libbpf's reader otherwise.
 */
static struct btf *kbtf_read(void)
{
	_cleanup_close_ int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	struct btf *b;

	__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
	b = parse_fd(fd);
	return b ? b : __real_btf__load_vmlinux_btf();
}

/* This thread's stand-in for the kernel's BTF while one object loads (kbtf.h). */
static __thread int standin = -1;

void kbtf_standin(int fd)
{
	standin = fd;
}

/* Frees the copy once no hold and no user is left; the lock is held. */
static void drop_locked(void)
{
	if (shared && !holds && !users) {
		__real_btf__free(shared);
		shared = NULL;
		kbtf_core_forget();
	}
}

unsigned int kbtf_reads(void)
{
	return __atomic_load_n(&reads, __ATOMIC_RELAXED);
}

void kbtf_hold(void)
{
	pthread_mutex_lock(&kbtf_lock);
	holds++;
	pthread_mutex_unlock(&kbtf_lock);
}

void kbtf_release(void)
{
	pthread_mutex_lock(&kbtf_lock);
	if (holds > 0)
		holds--;
	drop_locked();
	pthread_mutex_unlock(&kbtf_lock);
}

struct btf *__wrap_btf__load_vmlinux_btf(void)
{
	struct btf *b;

	if (standin >= 0 && (b = parse_fd(standin)))
		return b; /* the caller's own: its btf__free() frees it */

	pthread_mutex_lock(&kbtf_lock);
	if (!holds && !shared) {
		pthread_mutex_unlock(&kbtf_lock);
		return kbtf_read();
	}
	if (!shared) {
		b = kbtf_read();
		if (libbpf_get_error(b)) {
			pthread_mutex_unlock(&kbtf_lock);
			return b; /* not kept: the next load tries again */
		}
		shared = b;
	}
	users++;
	b = shared;
	pthread_mutex_unlock(&kbtf_lock);
	return b;
}

void __wrap_btf__free(struct btf *btf)
{
	if (!btf || libbpf_get_error(btf))
		return;
	pthread_mutex_lock(&kbtf_lock);
	if (btf == shared) {
		users--;
		drop_locked();
		pthread_mutex_unlock(&kbtf_lock);
		return;
	}
	pthread_mutex_unlock(&kbtf_lock);
	__real_btf__free(btf);
}
