/*
 * workload=pingpong: pairs of threads on two CPUs hand a token back and forth through the
 * scheduler's cross-CPU wake-up; a request/response, the shape seeds 000 and 002 measured.
 * The initiator times each round trip; think= makes it sleep between them.
 */
#include "arch/x86/tsc.h"
#include "kernel/policy/knobs.h"
#include "kernel/printk.h"
#include "kernel/workloads/workload.h"

struct pair {
	struct thread *ping, *pong;
	unsigned turn; /* 1: pong's move, 0: ping's */
	unsigned slot;
} __attribute__((aligned(CACHELINE)));

static struct pair pairs[MAX_CPUS / 2];
static unsigned npairs;
static uint64_t iters; /* 0: run for duration= */

static void pong_thread(void *arg)
{
	struct pair *p = arg;

	for (;;) {
		while (__atomic_load_n(&p->turn, __ATOMIC_ACQUIRE) != 1) {
			if (wl_phase() == WL_STOP)
				goto out;
			thread_block();
		}
		__atomic_store_n(&p->turn, 0, __ATOMIC_RELEASE);
		thread_wake(p->ping);
	}
out:
	join_done(&wl.threads);
}

static void ping_thread(void *arg)
{
	struct pair *p = arg;
	uint64_t think = (uint64_t)knob(KNOB_think);
	bool counted_out = false;

	while (wl_phase() != WL_STOP) {
		uint64_t t0;

		if (think)
			thread_sleep_ns(think);
		t0 = rdtsc();
		__atomic_store_n(&p->turn, 1, __ATOMIC_RELEASE);
		thread_wake(p->pong);
		while (__atomic_load_n(&p->turn, __ATOMIC_ACQUIRE) != 0)
			thread_block();
		if (wl_phase() != WL_MEASURE || counted_out)
			continue;
		hist_record(&wl.hist[p->slot], tsc_to_ns(rdtsc() - t0));
		if (++wl.count[p->slot] == iters) {
			counted_out = true; /* enough: keep the partner busy until everyone is */
			join_done(&wl.measured);
		}
	}
	thread_wake(p->pong); /* it may be blocked waiting for a turn that will not come */
	join_done(&wl.threads);
}

static int pingpong_start(void)
{
	npairs = (unsigned)knob(KNOB_pairs);
	if (2 * npairs > wl.ncpus) {
		printk("@idlelab error what=workload msg=\"pingpong: pairs=%u needs %u CPUs, "
		       "cpus= gives %u\"",
		       npairs, 2 * npairs, wl.ncpus);
		return -1;
	}
	iters = knob_given(KNOB_iters) ? (uint64_t)knob(KNOB_iters) : 0;
	wl.by_count = iters != 0;
	join_init(&wl.threads, 2 * npairs);
	join_init(&wl.measured, npairs);
	for (unsigned k = 0; k < npairs; k++) {
		struct pair *p = &pairs[k];

		*p = (struct pair){.slot = k};
		p->pong = thread_create(pong_thread, p, wl.cpu[2 * k + 1], "pong");
		p->ping = thread_create(ping_thread, p, wl.cpu[2 * k], "ping");
		if (!p->ping || !p->pong)
			panic("pingpong: out of threads");
	}
	return (int)(2 * npairs);
}

static bool pingpong_report(uint64_t window_ns)
{
	struct hist rtt;
	uint64_t n = wl_total(npairs);
	bool ok = !iters || n == iters * npairs;

	wl_merge(&rtt, npairs);
	printk("@idlelab result workload=pingpong ok=%d pairs=%u iters=%lu window_ns=%lu "
	       "rtt_p50_ns=%lu rtt_p90_ns=%lu rtt_p99_ns=%lu rtt_max_ns=%lu rt_per_s=%lu "
	       "think_ns=%ld",
	       ok, npairs, n, window_ns, hist_percentile(&rtt, 5000), hist_percentile(&rtt, 9000),
	       hist_percentile(&rtt, 9900), hist_max(&rtt),
	       window_ns ? n * (uint64_t)1000000000 / window_ns : 0, knob(KNOB_think));
	return ok;
}

const struct workload_ops wl_pingpong = {pingpong_start, pingpong_report};
