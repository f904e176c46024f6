/*
 * Idle governors, after Linux's struct cpuidle_governor: before each idle entry a governor
 * chooses poll or halt (select) and the poll's limit (poll_limit), and after it hears what
 * the entry measured (reflect). Pure policy: every input is an argument, so the host tests
 * run the kernel's code. The idle driver (kernel/idle.c) is the same for every governor,
 * and so is the POLL-flag protocol it runs. Governors are registered in one table
 * (kernel/policy/governors.c) and chosen by the cpuidle.governor= knob.
 *
 * How to add one: a file kernel/policy/gov_NAME.c defining `const struct idle_governor
 * gov_NAME`, its per-CPU state in struct gov_cpu below, a choice in KNOB_CHOICES_GOVERNOR
 * (kernel/policy/knob_table.h) and its slot in idle_governors[]; host vectors in tests/unit.
 * The idle driver reaches it through the table; to cost what haltpoll costs per entry, put
 * its per-entry functions inline in a header, as gov_haltpoll.h and gov_predict.h do, and
 * give it a direct call in kernel/idle.c (GOV_CALL).
 */
#ifndef IDLELAB_KERNEL_GOVERNOR_H
#define IDLELAB_KERNEL_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/policy/predict_cpu.h"
#include "kernel/policy/haltpoll.h"

#define GOV_STATE_POLL HALTPOLL_STATE_POLL
#define GOV_STATE_HALT HALTPOLL_STATE_HALT
#define GOV_NO_LIMIT   UINT64_MAX

/* Each CPU's governor state: room for every governor; only the chosen one's is used. */
struct gov_cpu {
	struct haltpoll_cpu haltpoll;
	struct predict_cpu predict;
	/* Times the governor set haltpoll's rule aside (predict: entered its plateau); 0 for
	 * haltpoll. Written by the owning CPU only; the `cpu` record's takeovers. */
	uint64_t takeovers;
};

/* One finished idle entry, as the idle driver measured it. */
struct gov_entry {
	int state;	       /* GOV_STATE_* */
	uint64_t residency_ns; /* time spent in the state */
	uint64_t limit_ns;     /* a poll's limit; GOV_NO_LIMIT: work came before it was asked */
	bool work;	       /* the entry ended because work arrived (NEED_RESCHED) */
};

struct idle_governor {
	const char *name;
	/* W = 0, empty history: as when the governor is enabled for a CPU. */
	void (*enable)(struct gov_cpu *g);
	/* GOV_STATE_POLL or GOV_STATE_HALT; clears *stop_tick (pre-set true) to keep the tick. */
	int (*select)(struct gov_cpu *g, const struct haltpoll_params *p, bool latency_req_zero,
		      bool *stop_tick);
	/* After select chose halt: how long the halt may last, ns, before the governor wants the
	 * CPU back to poll (the idle driver arms a timer; the halt then ends without work and
	 * select is asked again); 0: until work or an interrupt, as a plain halt. */
	uint64_t (*halt_limit)(struct gov_cpu *g, const struct haltpoll_params *p);
	/* The poll state is entered (before it sets POLLING and tests for work). */
	void (*poll_begin)(struct gov_cpu *g);
	/* The limit of a poll, asked only once setting POLLING found no work (it may store). */
	uint64_t (*poll_limit)(struct gov_cpu *g, const struct haltpoll_params *p,
			       uint64_t tick_nsec);
	/* After an entry; returns what it did to the window (counted as grow/shrink). */
	enum haltpoll_adjust (*reflect)(struct gov_cpu *g, const struct haltpoll_params *p,
					const struct gov_entry *e);
	/* An entry given up after select because work had come (call_cpuidle -EBUSY). */
	void (*aborted)(struct gov_cpu *g);
	/* The current poll window, for the records. */
	uint64_t (*window_ns)(const struct gov_cpu *g);
};

extern const struct idle_governor gov_haltpoll, gov_predict;

/* predict's margin around the period it predicts (kernel/policy/gov_predict.h). */
uint64_t predict_margin(const struct predict_cpu *p, const struct haltpoll_params *hp);

/* The registry, indexed by the cpuidle.governor= choice. */
extern const struct idle_governor *const idle_governors[];
extern const unsigned idle_governors_count;

#endif
