/*
 * workload=periodic and workload=random: one thread per selected CPU that sleeps and
 * wakes on its own timer, never woken by another CPU. periodic sleeps to a fixed schedule
 * (seed 003: a constant period just under the host's poll window); random sleeps lengths
 * drawn from dist= (seed 004: irregular wake-ups are what grow/shrink must cope with).
 * Both record how late each wake-up came.
 */
#include "arch/x86/tsc.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/workloads/workload.h"
#include "kernel/workloads/sleep_draw.h"
#include "lib/prng.h"

static uint64_t interval_sum[MAX_CPUS];
/* The period the window being measured runs at: period= switches between windows
 * (kernel/knobs/switchable.c), and a window's result prints after the next window's settings
 * are applied, so the report must not read the knob. Set in the gap before the window. */
static long window_period;

static uint64_t next_interval(struct prng *rng)
{
	return sleep_draw(rng, (int)knob(KNOB_dist), (uint64_t)knob(KNOB_mean),
			  (uint64_t)knob(KNOB_spread));
}

/* Sleeps until each deadline; a wake-up's lateness is how far past its deadline it ran. */
static void sleeper_thread(void *arg)
{
	unsigned slot = (unsigned)(uintptr_t)arg;
	bool periodic = knob(KNOB_workload) == WORKLOAD_PERIODIC;
	uint64_t next = rdtsc();
	struct prng rng;

	prng_seed(&rng, (uint64_t)knob(KNOB_seed) * 1000003 + slot);
	while (wl_phase() != WL_STOP) {
		/* Read at every wake: period= changes only while every CPU is parked at the
		 * window barrier (kernel/reconfigure.c), so this sees the old value or the new. */
		uint64_t period = periodic ? ns_to_tsc((uint64_t)knob(KNOB_period)) : 0;
		uint64_t now, step = periodic ? period : ns_to_tsc(next_interval(&rng));

		next += step;
		now = rdtsc();
		if ((int64_t)(next - now) > 0)
			thread_sleep_ns(tsc_to_ns(next - now));
		now = rdtsc();
		if (wl_measured(next)) {
			hist_record(&wl.hist[slot], tsc_to_ns(now - next));
			wl.count[slot]++;
			interval_sum[slot] += tsc_to_ns(step);
		}
		if (periodic && now - next > period)
			next = now; /* fell a whole period behind: skip, do not burst */
	}
	join_done(&wl.threads);
}

static int sleepers_start(void)
{
	join_init(&wl.threads, wl.ncpus);
	for (unsigned i = 0; i < wl.ncpus; i++) {
		interval_sum[i] = 0;
		if (!thread_create(sleeper_thread, (void *)(uintptr_t)i, wl.cpu[i], "sleeper"))
			panic("workload: out of threads");
	}
	return (int)wl.ncpus;
}

static bool periodic_report(uint64_t window_ns)
{
	struct hist late;
	uint64_t wakes = wl_total(wl.ncpus);
	uint64_t per_cpu = wakes / wl.ncpus;

	wl_merge(&late, wl.ncpus);
	printk("@idlelab result workload=periodic ok=%d cpus=%u period_ns=%ld window_ns=%lu "
	       "wakes=%lu achieved_period_ns=%lu late_p50_ns=%lu late_p99_ns=%lu "
	       "late_max_ns=%lu",
	       wakes > 0, wl.ncpus, window_period, window_ns, wakes,
	       per_cpu ? window_ns / per_cpu : 0, hist_percentile(&late, 5000),
	       hist_percentile(&late, 9900), hist_max(&late));
	return wakes > 0;
}

static bool random_report(uint64_t window_ns)
{
	struct hist late;
	uint64_t wakes = wl_total(wl.ncpus), sum = 0;

	for (unsigned i = 0; i < wl.ncpus; i++)
		sum += interval_sum[i];
	wl_merge(&late, wl.ncpus);
	printk("@idlelab result workload=random ok=%d cpus=%u dist=%s mean_ns=%ld spread_ns=%ld "
	       "seed=%ld window_ns=%lu wakes=%lu interval_mean_ns=%lu late_p50_ns=%lu "
	       "late_p99_ns=%lu late_max_ns=%lu",
	       wakes > 0, wl.ncpus, knob_defs[KNOB_dist].choices[knob(KNOB_dist)], knob(KNOB_mean),
	       knob(KNOB_spread), knob(KNOB_seed), window_ns, wakes, wakes ? sum / wakes : 0,
	       hist_percentile(&late, 5000), hist_percentile(&late, 9900), hist_max(&late));
	return wakes > 0;
}

static void sleepers_reset(void)
{
	for (unsigned i = 0; i < wl.ncpus; i++)
		interval_sum[i] = 0;
	window_period = knob(KNOB_period);
}

const struct workload_ops wl_periodic = {
    .start = sleepers_start, .report = periodic_report, .reset = sleepers_reset};
const struct workload_ops wl_random = {
    .start = sleepers_start, .report = random_report, .reset = sleepers_reset};
