/*
 * The idle governor interface, after Linux's struct cpuidle_governor: before each idle entry
 * a governor chooses poll or halt (select) and the poll's limit (poll_limit), and after it
 * hears what the entry measured (reflect). Pure policy: every input is an argument, so the
 * host tests run the kernel's code. The sequence of calls is the same for every governor
 * (kernel/policy/idle_entry.h), and so is the POLL-flag protocol the idle driver runs.
 *
 * The interface names no governor: each one's per-CPU state and the tunables are structs
 * only the registry (kernel/policy/governors.h) and the governors themselves see whole.
 *
 * How to add one: a file kernel/policy/gov_NAME.c defining `const struct idle_governor
 * gov_NAME`, its per-CPU state in struct gov_cpu (kernel/policy/governors.h), a choice in
 * KNOB_CHOICES_GOVERNOR (kernel/knobs/knob_table.h) and its slot in idle_governors[]
 * (kernel/policy/governors.c); host vectors in tests/unit. The idle driver reaches it
 * through its table.
 */
#ifndef IDLELAB_KERNEL_GOVERNOR_H
#define IDLELAB_KERNEL_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

/* The two idle states every governor chooses between. */
enum gov_state {
	GOV_STATE_POLL,
	GOV_STATE_HALT,
};

/* What a reflect did to the governor's poll window (the `cpu` record's grows/shrinks). */
enum gov_adjust {
	GOV_ADJ_NONE,
	GOV_ADJ_GROW,
	GOV_ADJ_SHRINK,
};

#define GOV_NO_LIMIT UINT64_MAX

struct gov_cpu;	   /* each CPU's governor state (kernel/policy/governors.h) */
struct gov_params; /* the tunables, read afresh on every call (kernel/policy/governors.h) */

/* One finished idle entry, as the idle driver measured it. */
struct gov_entry {
	enum gov_state state;
	uint64_t residency_ns; /* time spent in the state */
	uint64_t limit_ns;     /* a poll's limit; GOV_NO_LIMIT: work came before it was asked */
	bool work;	       /* the entry ended because work arrived (NEED_RESCHED) */
	/* A poll that expired found work pending as it ended (it came at the expiry check):
	 * still an expiry (work is false), as Linux's poll loop reports it, but the idle
	 * period ended with this entry. */
	bool work_at_expiry;
};

struct idle_governor {
	const char *name;
	/* W = 0, empty history: as when the governor is enabled for a CPU. */
	void (*enable)(struct gov_cpu *g);
	/* The state to enter; clears *stop_tick (pre-set true) to keep the tick. */
	enum gov_state (*select)(struct gov_cpu *g, const struct gov_params *p,
				 bool latency_req_zero, bool *stop_tick);
	/* After select chose halt: how long the halt may last, ns, before the governor wants the
	 * CPU back to poll (the idle driver arms a timer; the halt then ends without work and
	 * select is asked again); 0: until work or an interrupt, as a plain halt. */
	uint64_t (*halt_limit)(struct gov_cpu *g, const struct gov_params *p);
	/* The poll state is entered (before it sets POLLING and tests for work). */
	void (*poll_begin)(struct gov_cpu *g);
	/* The limit of a poll, asked only once setting POLLING found no work (it may store). */
	uint64_t (*poll_limit)(struct gov_cpu *g, const struct gov_params *p, uint64_t tick_nsec);
	/* After an entry; returns what it did to the window. */
	enum gov_adjust (*reflect)(struct gov_cpu *g, const struct gov_params *p,
				   const struct gov_entry *e);
	/* An entry given up after select because work had come (call_cpuidle -EBUSY). */
	void (*aborted)(struct gov_cpu *g);
	/* The current poll window, for the records. */
	uint64_t (*window_ns)(const struct gov_cpu *g);
};

#endif
