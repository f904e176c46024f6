/* The neighbour of an experiment (matrix key neighbour=hog:N): N threads that spin and count
 * their loops, the CPU-hungry host task seed 002's trade-off is about.
 *
 *   hog COUNTERS N
 *
 * creates the file COUNTERS (N 64-byte slots, one cache line per thread), maps it shared and
 * starts N threads; thread i adds 1 to slot i's 64-bit counter every loop (a relaxed atomic
 * store, so a reader never sees a torn value). When every thread runs it prints one line,
 * "ready TID TID ...", the threads' ids (the harness pins them with sched_setaffinity), and
 * then runs until SIGTERM/SIGINT or until its parent dies (PR_SET_PDEATHSIG: a bench killed
 * with SIGKILL leaves no hog behind). The harness reads the counters through its own mapping
 * of the file at the window's markers (tools/idlelab/host/neighbour.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOT_BYTES  64
#define MAX_THREADS 256

struct slot {
	uint64_t loops;
	uint64_t tid;
} __attribute__((aligned(SLOT_BYTES)));

_Static_assert(sizeof(struct slot) == SLOT_BYTES, "one cache line per thread");

static struct slot *slots;
static volatile int started;

static void *spin(void *arg)
{
	struct slot *s = arg;
	uint64_t n = 0;

	__atomic_store_n(&s->tid, (uint64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	__atomic_add_fetch(&started, 1, __ATOMIC_ACQ_REL);
	for (;;)
		__atomic_store_n(&s->loops, ++n, __ATOMIC_RELAXED);
	return NULL;
}

static void die(const char *what)
{
	fprintf(stderr, "hog: %s: %s\n", what, strerror(errno));
	exit(2);
}

int main(int argc, char **argv)
{
	char *end;
	long n;
	int fd;
	sigset_t set;
	int sig;

	if (argc != 3 || (n = strtol(argv[2], &end, 10)) < 1 || n > MAX_THREADS || *end) {
		fprintf(stderr, "usage: hog COUNTERS N (1 <= N <= %d)\n", MAX_THREADS);
		return 2;
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die("prctl");
	if (getppid() == 1)
		return 1; /* the parent is already gone */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited: only main waits for them */
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(argv[1]);
	if (ftruncate(fd, (off_t)n * SLOT_BYTES) != 0)
		die("ftruncate");
	slots = mmap(NULL, (size_t)n * SLOT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slots == MAP_FAILED)
		die("mmap");
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int err = pthread_create(&t, NULL, spin, &slots[i]);
		if (err) {
			errno = err;
			die("pthread_create");
		}
	}
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < n)
		usleep(1000);
	printf("ready");
	for (long i = 0; i < n; i++)
		printf(" %llu",
		       (unsigned long long)__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE));
	printf("\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
