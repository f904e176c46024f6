/*
 * One governed idle entry (docs/haltpoll-spec.md §1.4-1.8), the sequence of Linux's
 * cpuidle_idle_call() with the haltpoll driver: the last entry's reflect, select, the two
 * tests for work after it, the state, and the reflect of what the state measured. Pure
 * policy: the states themselves (the poll loop, the halt) are the caller's, as callbacks,
 * so the kernel (kernel/idle.c) and the host tests (tests/unit/test_idle_entry.c and the
 * governors' tests) run this same sequence.
 *
 * After select, Linux tests for work twice, and the governor sees the two differently:
 * call_cpuidle() aborts the entry (residency 0, not reflected: `aborted`); the halt state's
 * own enter skips the HLT but the entry counts (the halt callback returns its near-zero
 * residency, and it is reflected: from W = 0 haltpoll's window grows). A poll that finds
 * work at once (set POLLING, then test) asks for no limit, so haltpoll's W = 0 fallback is
 * not stored. The tick is the hz= knob's business, so the governor's stop_tick advice is
 * not acted on.
 *
 * A poll that expires is followed by a test for work: work that came between the poll's
 * last test and its clock check is pending, and the idle period ends there (the entry is
 * still an expiry, work false, as Linux's poll loop reports it; work_at_expiry says the
 * rest), so a governor that measures idle periods does not run two of them together.
 *
 * An entry that ended with work (or with work at its expiry) is reflected when this CPU
 * next idles, before its select (the governor hears the same things in the same order), so
 * the woken thread does not wait for it; one that ended without work is reflected at once,
 * since select follows.
 */
#ifndef IDLELAB_KERNEL_IDLE_ENTRY_H
#define IDLELAB_KERNEL_IDLE_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/policy/governor.h"

/* The states, as the caller runs them on `cpu` (its own, opaque here). Times are ns. */
struct idle_entry_ops {
	/* True if work is pending (NEED_RESCHED). */
	bool (*work)(void *cpu);
	/* Before select, after the last entry's reflect: true if the caller took this entry
	 * without the governor (the steal gate's halt); NULL: never. */
	bool (*gate)(void *cpu);
	/* Enters the poll state and advertises it (POLLING), then tests for work: true if work
	 * was there, and the poll has ended (*ns its length); false: the poll goes on. */
	bool (*poll_start)(void *cpu, uint64_t *ns);
	/* Polls until work (true) or until limit_ns has passed (false), then leaves the poll
	 * state; *ns the whole poll's length. */
	bool (*poll_wait)(void *cpu, uint64_t limit_ns, uint64_t *ns);
	/* The halt state, until an interrupt or, if limit_ns is not 0, about that long; if work
	 * was pending it is skipped. Returns its length, never 0. */
	uint64_t (*halt)(void *cpu, uint64_t limit_ns);
	/* The entry was given up after select (work had come). */
	void (*aborted)(void *cpu);
	/* A reflect's outcome. */
	void (*reflected)(void *cpu, enum gov_adjust a);
};

/* What the entries share: the governor, its tunables, the knobs the sequence reads. */
struct idle_entry_setup {
	const struct idle_governor *gov;
	const struct gov_params *params;
	uint64_t tick_nsec; /* for the governor's W = 0 fallback */
	bool latency_req_zero;
};

/* What of the last entry the governor has yet to hear. */
enum idle_entry_pending {
	IDLE_ENTRY_NONE,
	/* A poll that found work, the common ending: only its residency and limit are kept
	 * (in `last`), so that, where the governor is compiled in (kernel/idle.c), its reflect
	 * compiles with the rest known and costs what it does for a poll hit, not a reading of
	 * the whole entry. */
	IDLE_ENTRY_POLL_HIT,
	IDLE_ENTRY_OTHER, /* any other ending with work: `last` whole */
};

/* Each CPU's part of the sequence: an entry that ended with work, not yet reflected. */
struct idle_entry_cpu {
	struct gov_entry last;
	enum idle_entry_pending pending;
};

/* The governor hears of an entry that ended with work, if it has not yet: the start of
 * every entry, and a test's end of an idle period. */
static inline __attribute__((always_inline)) void
idle_entry_reflect_last(const struct idle_entry_ops *ops, void *cpu,
			const struct idle_entry_setup *k, struct gov_cpu *g,
			struct idle_entry_cpu *s)
{
	if (s->pending == IDLE_ENTRY_POLL_HIT) {
		/* The hit as constants: a reflect compiled in here becomes what it does for
		 * a poll hit. */
		const struct gov_entry hit = {.state = GOV_STATE_POLL,
					      .residency_ns = s->last.residency_ns,
					      .limit_ns = s->last.limit_ns,
					      .work = true};

		s->pending = IDLE_ENTRY_NONE;
		ops->reflected(cpu, k->gov->reflect(g, k->params, &hit));
	} else if (s->pending == IDLE_ENTRY_OTHER) {
		s->pending = IDLE_ENTRY_NONE;
		ops->reflected(cpu, k->gov->reflect(g, k->params, &s->last));
	}
}

/*
 * One entry; true if work ended it (or was found before its state ran). Inline, so that a
 * caller whose ops and governor are constants gets the callbacks compiled in.
 */
static inline __attribute__((always_inline)) bool
idle_entry_run(const struct idle_entry_ops *ops, void *cpu, const struct idle_entry_setup *k,
	       struct gov_cpu *g, struct idle_entry_cpu *s)
{
	const struct idle_governor *gov = k->gov;
	struct gov_entry e = {.limit_ns = GOV_NO_LIMIT};
	bool stop_tick = true;

	idle_entry_reflect_last(ops, cpu, k, g, s);
	if (ops->gate && ops->gate(cpu))
		return false;
	e.state = gov->select(g, k->params, k->latency_req_zero, &stop_tick);
	if (ops->work(cpu)) { /* call_cpuidle(): -EBUSY */
		gov->aborted(g);
		ops->aborted(cpu);
		return true;
	}
	if (e.state == GOV_STATE_HALT) {
		e.residency_ns = ops->halt(cpu, gov->halt_limit(g, k->params));
		e.work = ops->work(cpu);
	} else {
		gov->poll_begin(g);
		e.work = ops->poll_start(cpu, &e.residency_ns);
		if (!e.work) {
			e.limit_ns = gov->poll_limit(g, k->params, k->tick_nsec);
			e.work = ops->poll_wait(cpu, e.limit_ns, &e.residency_ns);
		}
		if (e.work) {
			s->last.residency_ns = e.residency_ns;
			s->last.limit_ns = e.limit_ns;
			s->pending = IDLE_ENTRY_POLL_HIT;
			return true;
		}
	}
	if (!e.work) {
		/* (a poll without work expired: the work may have come at its clock check) */
		e.work_at_expiry = e.state == GOV_STATE_POLL && ops->work(cpu);
		if (!e.work_at_expiry) {
			ops->reflected(cpu, gov->reflect(g, k->params, &e));
			return false;
		}
	}
	s->last = e;
	s->pending = IDLE_ENTRY_OTHER;
	return true;
}

#endif
