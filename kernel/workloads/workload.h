/*
 * Workloads: wake-up patterns that reproduce the seed experiments. Each runs a warm-up,
 * then a measured window between two `@idlelab window` markers, then prints a per-CPU
 * table, the `@idlelab cpu` records and one `@idlelab result workload=NAME ...` record.
 */
#ifndef IDLELAB_KERNEL_WORKLOAD_H
#define IDLELAB_KERNEL_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/knobs/knobs.h"
#include "lib/histogram.h"
#include "kernel/percpu.h"
#include "kernel/workloads/window_rule.h"
#include "kernel/sched.h"

enum wl_phase {
	WL_WARMUP, /* running unmeasured: the warm-up, and the gap before each next window */
	WL_MEASURE,
	WL_STOP
};

/* Shared with the workload threads. */
struct wl {
	int phase;		/* enum wl_phase; written by the controller, read by every thread */
	unsigned cpu[MAX_CPUS]; /* the CPUs of cpus=, in order */
	unsigned ncpus;
	struct join_counter threads;  /* every workload thread calls join_done as it exits */
	struct join_counter measured; /* for workloads that end by count (pingpong iters=) */
	bool by_count;
	struct hist hist[MAX_CPUS]; /* one histogram per workload thread slot */
	uint64_t count[MAX_CPUS];   /* per-slot event counts in the measured phase */
	/* The idle policy the window ran with, for its records: the next window's settings are
	 * in force by the time they print. */
	const char *idle_policy;
	/* TSC when the measured phase began (written before the phase, which publishes it). */
	uint64_t measure_tsc;
};

extern struct wl wl;

static inline int wl_phase(void)
{
	return __atomic_load_n(&wl.phase, __ATOMIC_ACQUIRE);
}

/*
 * Whether an event that began at `since` (a sleep's deadline, a round trip's or a lap's
 * start) is the measured window's: the phase is WL_MEASURE and it began inside
 * (kernel/workloads/window_rule.h). `since` is read on the thread's CPU and measure_tsc on the
 * controller's: where their TSCs differ (the boot's tsc_skew_ns, up to ~1.5 us on the
 * nested host), an event that began within that of the opening may fall on either side.
 */
static inline bool wl_measured(uint64_t since)
{
	return wl_phase() == WL_MEASURE && began_inside(since, wl.measure_tsc);
}

struct workload_ops {
	/* Creates the threads (they start in WL_WARMUP) and returns how many it created, or
	 * -1 with a printed reason if the configuration cannot run. */
	int (*start)(void);
	/* Prints the result record; returns false if a workload check failed. */
	bool (*report)(uint64_t window_ns);
	/* windows= given: zeroes what the workload counts beyond wl.hist and wl.count, before
	 * each window (NULL: nothing more). */
	void (*reset)(void);
};

extern const struct workload_ops wl_pingpong, wl_periodic, wl_random, wl_pipeline, wl_idle;

/* Whether the boot measures windows one by one (windows= given, even as 1): each numbered,
 * its settings sent by the host before its gap (docs/windows.md). */
static inline bool wl_windowed(void)
{
	return knob_given(KNOB_windows);
}

/* Runs the workload the knobs name; false if it could not run or a check failed. */
bool workload_run(void);

/* Merges hist[0..n) into *out. */
void wl_merge(struct hist *out, unsigned n);
/* Sum of count[0..n). */
uint64_t wl_total(unsigned n);

#endif
