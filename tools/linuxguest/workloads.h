/*
 * The Linux guest's workloads, the same as idlelab's under the same knobs where Linux can do
 * them: pingpong (two threads pinned to the first two CPUs of cpus= hand a token through
 * futex wait/wake, so the wake is an IPI unless the target polls), periodic (a thread per CPU
 * of cpus= sleeps to absolute deadlines period= apart with clock_nanosleep) and idle.
 */
#ifndef IDLELAB_LINUXGUEST_WORKLOADS_H
#define IDLELAB_LINUXGUEST_WORKLOADS_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/knobs/knobs.h"
#include "tools/linuxguest/cpuidle.h"

enum wl_phase {
	WL_WARMUP,
	WL_MEASURE,
	WL_STOP,
};

struct wl_state {
	const struct knob_values *k;
	unsigned ncpus;
	unsigned cpu[LG_MAX_CPUS]; /* the CPUs cpus= names, in order */
	unsigned nused;
	int phase;
	/* Per CPU: the workload's wake-ups issued there (futex wakes that woke a thread, timer
	 * wakes of its sleeper) over the measured window (wl_reset starts each from 0). */
	uint64_t wakeups[LG_MAX_CPUS];
};

/* Fills st->cpu from cpus=; false (with why) if it names CPUs this VM lacks. */
bool wl_pick_cpus(struct wl_state *st, char *why, size_t whylen);

/* Starts the workload's threads (in the warm-up phase); false with why. */
bool wl_start(struct wl_state *st, char *why, size_t whylen);

/* A window's counts start from zero: called in the gap before it, with the threads running
 * unmeasured (WL_WARMUP), so none records meanwhile. */
void wl_reset(struct wl_state *st);

/* Waits for the threads to end (after phase became WL_STOP). */
void wl_join(struct wl_state *st);

/* Prints the `@idlelab result` record; returns the run's ok. */
bool wl_report(struct wl_state *st, uint64_t window_ns);

#endif
