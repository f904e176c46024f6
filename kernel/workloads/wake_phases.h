/*
 * One hand-over of workload=pingpong split into its phases (kernel/workloads/pingpong.c
 * says what each measures). The waker stamps the start on its own CPU and everything else
 * is stamped on the target's, so the phases that start at the waker's stamp (total, going
 * idle, and notice, which starts there when the target was idle already) are differences
 * across two CPUs: they are computed only when the CPUs' TSCs agree (`cross`, the boot's
 * check, kernel/tsc_sync.c), and even then never below 0. Run is the target's alone.
 *
 * Pure, host-tested (tests/unit/test_wake_phases.c). Inline: the sampled hand-overs pay for
 * it inside the round trip they time.
 */
#ifndef IDLELAB_KERNEL_WAKE_PHASES_H
#define IDLELAB_KERNEL_WAKE_PHASES_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/tsc_delta.h"

struct wake_stamps {
	uint64_t woke;	  /* the waker's CPU: the turn was handed over */
	uint64_t since;	  /* the target's CPU: the woken thread last ran (0: never) */
	uint64_t entered; /* the target's CPU: its last idle entry */
	uint64_t notice;  /* the target's CPU: its last exit from idle */
	uint64_t running; /* the target's CPU: the woken thread runs */
};

struct wake_phases {
	bool idled; /* the target's CPU noticed this wake from idle; else it was busy */
	/* TSC cycles; total, going_idle and notice stay 0 unless cross, the rest unless idled */
	uint64_t total, going_idle, notice, run;
};

static inline void wake_phases_split(const struct wake_stamps *s, bool cross,
				     struct wake_phases *out)
{
	uint64_t start;

	*out = (struct wake_phases){0};
	if (cross)
		out->total = tsc_delta(s->running, s->woke);
	/* A notice from before the thread last ran belongs to an earlier idle period; told on
	 * the target's own clock, so it holds whether or not the TSCs agree. With agreeing TSCs,
	 * a notice before the wake (a tick's HLT exit just before the wake came) is not this
	 * wake's either. */
	out->idled = s->notice > s->since && s->notice <= s->running;
	if (cross && s->notice < s->woke)
		out->idled = false;
	if (!out->idled)
		return;
	out->run = s->running - s->notice;
	if (!cross)
		return;
	start = s->entered > s->woke ? s->entered : s->woke; /* idle already: no going idle */
	out->going_idle = start - s->woke;
	/* The last entry can follow the last notice: a poll that expired, then a halt that
	 * found the wake's flag and never halted. */
	out->notice = tsc_delta(s->notice, start);
}

#endif
