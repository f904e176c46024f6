/*
 * bench=sched: the two numbers later idle-policy work is compared against. Reports only;
 * the host decides what they mean (and on this nested KVM they are ~100x hardware's).
 */
#include "arch/x86/apic_timer.h"
#include "arch/x86/tsc.h"
#include "kernel/selftest/bench.h"
#include "lib/histogram.h"
#include "kernel/knobs/knobs.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/stats.h"
#include "lib/format.h"
#include "kernel/timer.h"
#include "kernel/window.h"

static struct {
	struct thread *ping, *pong;
	unsigned turn; /* 1: pong's move, 0: ping's */
	unsigned iters;
	struct join_counter join;
} pp;

static void pong_thread(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < pp.iters; i++) {
		while (__atomic_load_n(&pp.turn, __ATOMIC_ACQUIRE) != 1)
			thread_block();
		__atomic_store_n(&pp.turn, 0, __ATOMIC_RELEASE);
		thread_wake(pp.ping);
	}
	join_done(&pp.join);
}

static void print_hist(const char *name, const char *extra, const struct hist *h)
{
	printk("@idlelab bench name=%s %s n=%lu p50_ns=%lu p90_ns=%lu p99_ns=%lu max_ns=%lu "
	       "mean_ns=%lu",
	       name, extra, hist_count(h), hist_percentile(h, 5000), hist_percentile(h, 9000),
	       hist_percentile(h, 9900), hist_max(h), hist_mean(h));
}

/* The calling thread (on CPU 0) is ping; pong lives on CPU 1 when there is one. */
static void wakeup_rtt(void)
{
	static struct hist rtt;
	unsigned other = ncpus > 1 ? 1 : 0;
	char extra[64];

	hist_init(&rtt);
	pp.iters = (unsigned)knob(KNOB_iters);
	pp.turn = 0;
	pp.ping = thread_self();
	join_init(&pp.join, 1);
	pp.pong = thread_create(pong_thread, 0, other, "pong");
	if (!pp.pong)
		panic("bench: out of threads");
	for (unsigned i = 0; i < pp.iters; i++) {
		uint64_t t0 = rdtsc();

		__atomic_store_n(&pp.turn, 1, __ATOMIC_RELEASE);
		thread_wake(pp.pong);
		while (__atomic_load_n(&pp.turn, __ATOMIC_ACQUIRE) != 0)
			thread_block();
		hist_record(&rtt, tsc_to_ns(rdtsc() - t0));
	}
	join_wait(&pp.join);
	snprintf(extra, sizeof(extra), "from_cpu=%u to_cpu=%u", thread_cpu(pp.ping), other);
	print_hist("wakeup_rtt", extra, &rtt);
}

static void timer_lateness(void)
{
	static const uint64_t sleeps_ns[] = {20000, 100000, 250000, 1000000};
	static struct hist late;
	unsigned n = (unsigned)knob(KNOB_iters) / 8 + 1;
	char extra[96];

	for (unsigned k = 0; k < sizeof(sleeps_ns) / sizeof(sleeps_ns[0]); k++) {
		hist_init(&late);
		for (unsigned i = 0; i < n; i++) {
			uint64_t t0 = rdtsc();

			thread_sleep_ns(sleeps_ns[k]);
			hist_record(&late, tsc_to_ns(rdtsc() - t0) - sleeps_ns[k]);
		}
		snprintf(extra, sizeof(extra), "sleep_ns=%lu timer=%s", sleeps_ns[k],
			 apic_timer_deadline_mode ? "tsc_deadline" : "oneshot");
		print_hist("timer_late", extra, &late);
	}
}

void bench_sched(void)
{
	static struct stats_snapshot a, b;

	printk("@idlelab bench name=sched cpus=%u hz=%u iters=%ld", ncpus, timer_hz(),
	       knob(KNOB_iters));
	window_open(&a, "wakeup_rtt", 1);
	wakeup_rtt();
	window_close(&b, "wakeup_rtt", 1, NULL);
	stats_print_delta(&a, &b);
	timer_lateness();
}
