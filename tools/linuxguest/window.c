#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tools/linuxguest/out.h"
#include "tools/linuxguest/window.h"

/*
 * The spinners run SCHED_OTHER, not SCHED_FIFO: the acknowledgement byte reaches the tty
 * through a kworker (the tty's flip buffer is pushed on a workqueue), and a real-time
 * spinner on every CPU would starve it; real-time throttling would then idle the CPU (under
 * TCG such spinners stretched a 300 ms window to 1.99 s, each marker waiting ~1 s). A
 * runnable spinner pinned on each CPU is enough: a CPU with a runnable thread never enters
 * the idle loop, so it cannot halt.
 */
static struct {
	bool sync, numbered;
	unsigned ncpus;
	uint64_t timeout_ns;
	int round;    /* bumped to call the spinners in (the futex word they sleep on) */
	int arrived;  /* spinners spinning in this round */
	int released; /* the round the spinners may leave */
} win;

static long futex(int *word, int op, int val)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void *spinner(void *arg)
{
	cpu_set_t set;
	int seen = 0;

	CPU_ZERO(&set);
	CPU_SET((int)(uintptr_t)arg, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (;;) {
		int r = __atomic_load_n(&win.round, __ATOMIC_ACQUIRE);

		if (r == seen) {
			futex(&win.round, FUTEX_WAIT, seen);
			continue;
		}
		seen = r;
		__atomic_fetch_add(&win.arrived, 1, __ATOMIC_ACQ_REL);
		while (__atomic_load_n(&win.released, __ATOMIC_ACQUIRE) != seen)
			__builtin_ia32_pause();
	}
	return NULL;
}

bool window_init(unsigned ncpus, bool sync, bool numbered, uint64_t timeout_ns, char *why,
		 size_t whylen)
{
	win.sync = sync;
	win.numbered = numbered;
	win.ncpus = ncpus;
	win.timeout_ns = timeout_ns;
	if (!sync)
		return true;
	for (unsigned c = 0; c < ncpus; c++) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, spinner, (void *)(uintptr_t)c);

		if (rc != 0) {
			snprintf(why, whylen, "window_sync: cannot start the spinner of CPU %u: %s",
				 c, strerror(rc));
			return false;
		}
		pthread_detach(t);
	}
	return true;
}

static __attribute__((noreturn)) void sync_failed(const char *state, const char *why)
{
	out_line("@idlelab error what=window_sync msg=\"%s marker: %s within window_sync_timeout "
		 "(%lu ns)\"",
		 state, why, (unsigned long)win.timeout_ns);
	out_exit(EXIT_SYNC_TIMEOUT);
}

/* Calls every spinner in; true once all spin. */
static bool quiesce_begin(void)
{
	uint64_t end = now_ns() + win.timeout_ns;

	__atomic_store_n(&win.arrived, 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&win.round, 1, __ATOMIC_ACQ_REL);
	futex(&win.round, FUTEX_WAKE, INT_MAX);
	while (__atomic_load_n(&win.arrived, __ATOMIC_ACQUIRE) < (int)win.ncpus) {
		if (now_ns() > end)
			return false;
		sched_yield();
	}
	return true;
}

static void quiesce_end(void)
{
	__atomic_store_n(&win.released, __atomic_load_n(&win.round, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
}

static void snapshot(const char *state, const struct idle_layout *l, struct idle_snap *s)
{
	char why[192];

	if (!idle_snapshot(l, s, why, sizeof(why))) {
		out_line("@idlelab error what=counters msg=\"%s marker: %s\"", state, why);
		out_exit(EXIT_TEST_FAILED);
	}
}

static void marker(const char *state, const char *what, unsigned window, uint64_t t)
{
	char num[24] = "";

	if (win.numbered)
		snprintf(num, sizeof(num), " window=%u", window);
	out_line("@idlelab window state=%s what=%s t_ns=%lu sync=%d%s", state, what,
		 (unsigned long)t, win.sync, num);
}

uint64_t window_edge(const char *state, const char *what, unsigned window,
		     const struct idle_layout *l, struct idle_snap *s, window_apply_fn *apply)
{
	static struct ack_line ack;
	const char *why;
	uint64_t t;

	if (!win.sync) {
		if (s)
			snapshot(state, l, s);
		t = now_ns();
		marker(state, what, window, t);
		return t;
	}
	if (!quiesce_begin())
		sync_failed(state, "a CPU did not reach the barrier");
	if (s)
		snapshot(state, l, s);
	console_flush_input();
	t = now_ns();
	marker(state, what, window, t);
	why = console_wait_ack(win.timeout_ns, &ack);
	if (why)
		sync_failed(state, why);
	if (ack.text[0] && !apply)
		sync_failed(state, "settings sent with a marker that takes none");
	if (ack.text[0]) /* at a close, the settings are the next window's */
		apply(ack.text, state[0] == 'c' ? window + 1 : window);
	quiesce_end();
	return t;
}
