/*
 * The workload controller: picks the CPUs, runs warm-up and measured window, and prints
 * the tables. The workloads themselves (wl_*.c) only create threads and report.
 */
#include "arch/x86/probe.h"
#include "arch/x86/tsc.h"
#include "kernel/exit_codes.h"
#include "kernel/idle.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/reconfigure.h"
#include "kernel/stats.h"
#include "kernel/timeline.h"
#include "kernel/window.h"
#include "kernel/workloads/workload.h"
#include "lib/format.h"

struct wl wl;
static struct stats_snapshot snap_a, snap_b;

static const struct workload_ops *const ops_by_knob[] = {
    [WORKLOAD_PINGPONG] = &wl_pingpong, [WORKLOAD_PERIODIC] = &wl_periodic,
    [WORKLOAD_IDLE] = &wl_idle,		[WORKLOAD_RANDOM] = &wl_random,
    [WORKLOAD_PIPELINE] = &wl_pipeline,
};
_Static_assert(sizeof(ops_by_knob) / sizeof(ops_by_knob[0]) == KNOB_NCHOICES_workload,
	       "ops_by_knob[] must have a slot for every workload= choice");

void wl_merge(struct hist *out, unsigned n)
{
	hist_init(out);
	for (unsigned i = 0; i < n; i++)
		hist_merge(out, &wl.hist[i]);
}

uint64_t wl_total(unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += wl.count[i];
	return sum;
}

static bool pick_cpus(void)
{
	uint64_t mask = (uint64_t)knob(KNOB_cpus);

	wl.ncpus = 0;
	for (unsigned c = 0; c < ncpus; c++)
		if (!mask || (mask >> c) & 1)
			wl.cpu[wl.ncpus++] = c;
	if (mask >> ncpus) {
		printk("@idlelab error what=workload msg=\"cpus=0x%lx names CPUs this VM lacks "
		       "(it has %u)\"",
		       mask, ncpus);
		return false;
	}
	return wl.ncpus > 0;
}

/* Percent with one decimal, as "12.3", of part over whole. */
static void pct(char *buf, uint64_t part, uint64_t whole)
{
	uint64_t p = whole ? part * 1000 / whole : 0;

	snprintf(buf, 16, "%lu.%lu", p / 10, p % 10);
}

static void print_table(const struct stats_snapshot *a, const struct stats_snapshot *b,
			uint64_t window_ns)
{
	printk("cpu wakeups ipi_sent ipi_avoid ipi_recv timer_irq    hlt poll_hit poll_exp "
	       "aborted  idle%%  poll%% window_us");
	for (unsigned i = 0; i < ncpus; i++) {
		const struct cpu_stats *x = &a->cpu[i], *y = &b->cpu[i];
		char idle[16], poll[16];
		uint64_t poll_cycles, halt_cycles;

		stats_idle_cycles(a, b, i, &poll_cycles, &halt_cycles);
		pct(idle, tsc_to_ns(poll_cycles + halt_cycles), window_ns);
		pct(poll, tsc_to_ns(poll_cycles), window_ns);
		printk("%3u %7lu %8lu %9lu %8lu %9lu %6lu %8lu %8lu %7lu %6s %6s %9lu", i,
		       y->wakeups_local - x->wakeups_local + y->wakeups_remote - x->wakeups_remote,
		       y->ipi_sent - x->ipi_sent, y->ipi_avoided - x->ipi_avoided,
		       y->ipi_received - x->ipi_received, y->timer_irqs - x->timer_irqs,
		       y->hlt - x->hlt, y->poll_hits - x->poll_hits,
		       y->poll_expired - x->poll_expired, y->halts_aborted - x->halts_aborted, idle,
		       poll, b->window_ns[i] / 1000);
	}
}

/* One measured window from t0; `last`: the threads are told to stop, else they go on
 * unmeasured (WL_WARMUP) into the next window's gap. */
static void measure(uint64_t t0, bool last)
{
	uint64_t duration = (uint64_t)knob(KNOB_duration);

	wl.measure_tsc = t0;
	__atomic_store_n(&wl.phase, WL_MEASURE, __ATOMIC_RELEASE);
	if (wl.by_count)
		join_wait(&wl.measured);
	else
		thread_sleep_ns(duration);
	/*
	 * The counted path ends before the threads are told to stop: one that sees WL_STOP and
	 * leaves (join, exit, into the idle loop) is teardown, and window_close()'s own mark
	 * comes after it or not by the order the vCPUs run (a spin floor once counted 109
	 * instructions of it as "block").
	 */
	probe_mark(PROBE_WINDOW_CLOSE);
	__atomic_store_n(&wl.phase, last ? WL_STOP : WL_WARMUP, __ATOMIC_RELEASE);
}

/*
 * A window's own counts start from zero. Called in its gap, with the threads running
 * unmeasured: one that read WL_MEASURE just before the last window closed has long since
 * recorded (the close marker's barrier and the records lie between), and none records
 * until the next opening publishes WL_MEASURE.
 */
static void reset_window(const struct workload_ops *ops)
{
	for (unsigned i = 0; i < ncpus; i++) { /* a workload uses at most one slot per CPU */
		hist_init(&wl.hist[i]);
		wl.count[i] = 0;
	}
	if (ops->reset)
		ops->reset();
}

static bool report(const struct workload_ops *ops, uint64_t window_ns)
{
	bool ok;

	/* For people reading one boot's console; a window's records say it all, and under the
	 * nested host each character costs ~0.1 ms of the time between two windows. */
	if (!wl_windowed())
		print_table(&snap_a, &snap_b, window_ns);
	console_spool_begin();
	stats_print_delta(&snap_a, &snap_b);
	ok = ops->report(window_ns);
	console_spool_end();
	return ok;
}

bool workload_run(void)
{
	const char *name = knob_defs[KNOB_workload].choices[knob(KNOB_workload)];
	const struct workload_ops *ops = ops_by_knob[knob(KNOB_workload)];
	unsigned windows = (unsigned)knob(KNOB_windows);
	bool (*apply)(const char *, unsigned) = knob(KNOB_window_sync) ? reconfigure_apply : NULL;
	bool ok = true;

	wl.phase = WL_WARMUP;
	wl.by_count = false;
	if (!pick_cpus())
		return false;
	reset_window(ops);
	if (ops->start() < 0)
		return false;
	if (wl.by_count && wl_windowed()) {
		printk(
		    "@idlelab error what=workload msg=\"iters= ends a window by count; windows=%u "
		    "needs windows of duration=\"",
		    windows);
		return false;
	}
	thread_sleep_ns((uint64_t)knob(KNOB_warmup));
	/* The gap runs from when the window's settings took effect (the host's acknowledgement
	 * of the marker before it), so the last window's records and the settings print inside
	 * it, not before it: the workload runs unmeasured all along, which is what lets the
	 * poll windows settle. */
	uint64_t gap_from = 0;
	for (unsigned w = 1; w <= windows; w++) {
		if (wl_windowed()) {
			if (w == 1 && apply)
				window_settings(name, 1, apply);
			if (w == 1)
				gap_from = rdtsc();
			console_spool_begin();
			reconfigure_print(w);
			console_spool_end();
			uint64_t gap_end = gap_from + ns_to_tsc((uint64_t)knob(KNOB_window_gap));
			uint64_t now = rdtsc();
			if ((int64_t)(gap_end - now) > 0)
				thread_sleep_ns(tsc_to_ns(gap_end - now));
			reset_window(ops);
		}
		wl.idle_policy = idle_policy_name();
		window_open(&snap_a, name, w);
		if (w == 1)
			timeline_start();
		uint64_t t0 = rdtsc();
		measure(t0, w == windows);
		uint64_t window_ns = tsc_to_ns(rdtsc() - t0);
		if (w == 1)
			timeline_stop();
		window_close(&snap_b, name, w, w < windows ? apply : NULL);
		gap_from = rdtsc();
		if (w == windows)
			join_wait(&wl.threads);
		ok &= report(ops, window_ns);
	}
	console_spool_begin();
	timeline_dump();
	console_spool_end();
	return ok;
}

/* workload=idle: nothing runs; only the tick (hz=) and the controller's own sleep wake CPUs. */
static int idle_start(void)
{
	join_init(&wl.threads, 0);
	return 0;
}

static bool idle_report(uint64_t window_ns)
{
	printk("@idlelab result workload=idle ok=1 cpus=%u window_ns=%lu", ncpus, window_ns);
	return true;
}

const struct workload_ops wl_idle = {.start = idle_start, .report = idle_report};
