#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/histogram.h"
#include "tools/linuxguest/out.h"
#include "tools/linuxguest/workloads.h"

/* The token's states: whose turn it is, or the end of the run. */
enum {
	TURN_PONG = 1,
	TURN_PING = 2,
	TURN_STOP = 3
};

static struct hist hists[LG_MAX_CPUS];
static uint64_t counts[LG_MAX_CPUS];
static pthread_t threads[LG_MAX_CPUS];
static unsigned nthreads;
static int token;

struct slot {
	struct wl_state *st;
	unsigned i; /* index into st->cpu */
};
static struct slot slots[LG_MAX_CPUS];

static long futex(int *word, int op, int val)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static int phase(const struct wl_state *st)
{
	return __atomic_load_n(&st->phase, __ATOMIC_ACQUIRE);
}

static void pin(unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void count_wake(struct wl_state *st, unsigned cpu, long woke)
{
	if (woke > 0 && phase(st) == WL_MEASURE)
		__atomic_fetch_add(&st->wakeups[cpu], 1, __ATOMIC_RELAXED);
}

/* Hands the token over and wakes the other side if it sleeps on it. */
static void pass(struct wl_state *st, unsigned cpu, int to)
{
	__atomic_store_n(&token, to, __ATOMIC_RELEASE);
	count_wake(st, cpu, futex(&token, FUTEX_WAKE, 1));
}

/* Sleeps until the token is no longer `held`; returns what it became. */
static int wait_while(int held)
{
	int t;

	while ((t = __atomic_load_n(&token, __ATOMIC_ACQUIRE)) == held)
		futex(&token, FUTEX_WAIT, held);
	return t;
}

static void *pong(void *arg)
{
	struct slot *s = arg;
	unsigned cpu = s->st->cpu[1];

	pin(cpu);
	while (wait_while(TURN_PING) != TURN_STOP)
		pass(s->st, cpu, TURN_PING);
	return NULL;
}

static void *ping(void *arg)
{
	struct slot *s = arg;
	struct wl_state *st = s->st;
	unsigned cpu = st->cpu[0];
	uint64_t think = (uint64_t)st->k->v[KNOB_think];

	pin(cpu);
	while (phase(st) != WL_STOP) {
		uint64_t t0 = now_ns(), rtt;

		pass(st, cpu, TURN_PONG);
		wait_while(TURN_PONG);
		rtt = now_ns() - t0;
		if (phase(st) == WL_MEASURE) {
			hist_record(&hists[0], rtt);
			counts[0]++;
		}
		if (think) {
			struct timespec ts = {(time_t)(think / 1000000000u),
					      (long)(think % 1000000000u)};

			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		}
	}
	pass(st, cpu, TURN_STOP);
	return NULL;
}

static void add_ns(struct timespec *ts, uint64_t ns)
{
	uint64_t n = (uint64_t)ts->tv_nsec + ns;

	ts->tv_sec += (time_t)(n / 1000000000u);
	ts->tv_nsec = (long)(n % 1000000000u);
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Sleeps to absolute deadlines; a wake-up's lateness is how far past its deadline it ran. */
static void *sleeper(void *arg)
{
	struct slot *s = arg;
	struct wl_state *st = s->st;
	unsigned cpu = st->cpu[s->i];
	uint64_t period = (uint64_t)st->k->v[KNOB_period];
	struct timespec next;

	pin(cpu);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (phase(st) != WL_STOP) {
		uint64_t now;

		add_ns(&next, period);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		now = now_ns();
		if (phase(st) == WL_MEASURE) {
			hist_record(&hists[s->i], now - ts_ns(&next));
			counts[s->i]++;
			__atomic_fetch_add(&st->wakeups[cpu], 1, __ATOMIC_RELAXED);
		}
		if (now - ts_ns(&next) > period) /* fell a whole period behind: skip, no burst */
			clock_gettime(CLOCK_MONOTONIC, &next);
	}
	return NULL;
}

bool wl_pick_cpus(struct wl_state *st, char *why, size_t whylen)
{
	uint64_t mask = (uint64_t)st->k->v[KNOB_cpus];

	st->nused = 0;
	if (mask == 0)
		mask = st->ncpus >= 64 ? ~0ull : (1ull << st->ncpus) - 1;
	if (st->ncpus < 64 && mask >> st->ncpus) {
		snprintf(why, whylen, "cpus=0x%llx names CPUs this VM lacks (it has %u)",
			 (unsigned long long)mask, st->ncpus);
		return false;
	}
	for (unsigned c = 0; c < st->ncpus; c++)
		if (mask >> c & 1)
			st->cpu[st->nused++] = c;
	return true;
}

static bool spawn(void *(*fn)(void *), struct wl_state *st, unsigned i, char *why, size_t whylen)
{
	int rc;

	slots[i] = (struct slot){st, i};
	rc = pthread_create(&threads[nthreads], NULL, fn, &slots[i]);
	if (rc != 0) {
		snprintf(why, whylen, "cannot start a workload thread: %s", strerror(rc));
		return false;
	}
	nthreads++;
	return true;
}

void wl_reset(struct wl_state *st)
{
	for (unsigned i = 0; i < LG_MAX_CPUS; i++) {
		hist_init(&hists[i]);
		counts[i] = 0;
		__atomic_store_n(&st->wakeups[i], 0, __ATOMIC_RELAXED);
	}
}

bool wl_start(struct wl_state *st, char *why, size_t whylen)
{
	nthreads = 0;
	wl_reset(st);
	switch (st->k->v[KNOB_workload]) {
	case WORKLOAD_PINGPONG:
		if (st->nused < 2) {
			snprintf(why, whylen, "pingpong needs 2 CPUs, cpus= gives %u", st->nused);
			return false;
		}
		token = TURN_PING;
		return spawn(pong, st, 1, why, whylen) && spawn(ping, st, 0, why, whylen);
	case WORKLOAD_PERIODIC:
		for (unsigned i = 0; i < st->nused; i++)
			if (!spawn(sleeper, st, i, why, whylen))
				return false;
		return true;
	default:
		return true;
	}
}

void wl_join(struct wl_state *st)
{
	(void)st;
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
}

bool wl_report(struct wl_state *st, uint64_t window_ns)
{
	static struct hist all;
	uint64_t n = 0;

	hist_init(&all);
	for (unsigned i = 0; i < LG_MAX_CPUS; i++) {
		hist_merge(&all, &hists[i]);
		n += counts[i];
	}
	switch (st->k->v[KNOB_workload]) {
	case WORKLOAD_PINGPONG:
		out_line("@idlelab result workload=pingpong ok=%d pairs=1 iters=%lu window_ns=%lu "
			 "rtt_p50_ns=%lu rtt_p90_ns=%lu rtt_p99_ns=%lu rtt_max_ns=%lu rt_per_s=%lu "
			 "think_ns=%ld mode=block",
			 n > 0, (unsigned long)n, (unsigned long)window_ns,
			 (unsigned long)hist_percentile(&all, 5000),
			 (unsigned long)hist_percentile(&all, 9000),
			 (unsigned long)hist_percentile(&all, 9900), (unsigned long)hist_max(&all),
			 (unsigned long)(window_ns ? n * 1000000000u / window_ns : 0),
			 (long)st->k->v[KNOB_think]);
		return n > 0;
	case WORKLOAD_PERIODIC: {
		uint64_t per_cpu = n / st->nused;

		out_line("@idlelab result workload=periodic ok=%d cpus=%u period_ns=%ld "
			 "window_ns=%lu wakes=%lu achieved_period_ns=%lu late_p50_ns=%lu "
			 "late_p99_ns=%lu late_max_ns=%lu",
			 n > 0, st->nused, (long)st->k->v[KNOB_period], (unsigned long)window_ns,
			 (unsigned long)n, (unsigned long)(per_cpu ? window_ns / per_cpu : 0),
			 (unsigned long)hist_percentile(&all, 5000),
			 (unsigned long)hist_percentile(&all, 9900), (unsigned long)hist_max(&all));
		return n > 0;
	}
	default:
		out_line("@idlelab result workload=idle ok=1 cpus=%u window_ns=%lu", st->nused,
			 (unsigned long)window_ns);
		return true;
	}
}
