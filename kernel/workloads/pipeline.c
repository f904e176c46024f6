/*
 * workload=pipeline: one token travels a ring of threads, one per selected CPU; every hop
 * is a cross-CPU wake-up and every CPU idles between its turns. Thread 0 times each lap.
 */
#include "arch/x86/tsc.h"
#include "kernel/printk.h"
#include "kernel/workloads/workload.h"

static struct thread *ring[MAX_CPUS];
static unsigned token, n;

static void stage_thread(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg, next = (me + 1) % n;
	uint64_t lap_start = rdtsc();

	for (;;) {
		while (__atomic_load_n(&token, __ATOMIC_ACQUIRE) != me) {
			if (wl_phase() == WL_STOP)
				goto out;
			thread_block();
		}
		if (me == 0) {
			uint64_t now = rdtsc();

			if (wl_measured(lap_start)) {
				hist_record(&wl.hist[0], tsc_to_ns(now - lap_start));
				wl.count[0]++;
			}
			lap_start = now;
		}
		if (wl_phase() == WL_STOP)
			break;
		__atomic_store_n(&token, next, __ATOMIC_RELEASE);
		thread_wake(ring[next]);
	}
out:
	/* let the others see STOP: each may be blocked waiting for the token */
	for (unsigned i = 0; i < n; i++)
		if (i != me)
			thread_wake(ring[i]);
	join_done(&wl.threads);
}

static int pipeline_start(void)
{
	n = wl.ncpus;
	if (n < 2) {
		printk("@idlelab error what=workload msg=\"pipeline needs at least 2 CPUs\"");
		return -1;
	}
	token = n; /* nobody's until the ring exists */
	join_init(&wl.threads, n);
	for (unsigned i = 0; i < n; i++) {
		ring[i] = thread_create(stage_thread, (void *)(uintptr_t)i, wl.cpu[i], "stage");
		if (!ring[i])
			panic("pipeline: out of threads");
	}
	__atomic_store_n(&token, 0, __ATOMIC_RELEASE);
	thread_wake(ring[0]);
	return (int)n;
}

static bool pipeline_report(uint64_t window_ns)
{
	struct hist *lap = &wl.hist[0];
	uint64_t laps = wl.count[0];

	printk("@idlelab result workload=pipeline ok=%d cpus=%u window_ns=%lu laps=%lu "
	       "lap_p50_ns=%lu lap_p99_ns=%lu lap_max_ns=%lu hop_p50_ns=%lu",
	       laps > 0, n, window_ns, laps, hist_percentile(lap, 5000), hist_percentile(lap, 9900),
	       hist_max(lap), hist_percentile(lap, 5000) / n);
	return laps > 0;
}

const struct workload_ops wl_pipeline = {.start = pipeline_start, .report = pipeline_report};
