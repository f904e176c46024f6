/*
 * The idle governor interface, after Linux's struct cpuidle_governor: before each idle entry
 * a governor chooses poll or halt (select) and the poll's limit (poll_limit), and after it
 * hears what the entry measured (reflect). Pure policy: every input is an argument, so the
 * host tests run the kernel's code. The sequence of calls is the same for every governor
 * (kernel/policy/idle_entry.h), and so is the POLL-flag protocol the idle driver runs.
 *
 * The per-CPU state and the tunables are the interface's own types, as Linux's struct
 * cpuidle_device carries haltpoll's window and last state: each governor is then one file
 * of rules on them (kernel/policy/haltpoll.h, kernel/policy/predict.h), and the registry
 * (kernel/policy/governors.h) lists them.
 *
 * How to add one: a file kernel/policy/NAME.h with its functions and a NAME_GOVERNOR
 * initializer, its per-CPU state in struct gov_cpu below, a choice in KNOB_CHOICES_GOVERNOR
 * (kernel/knobs/knob_table.h), its table and slot in kernel/policy/governors.c, an entry of
 * its own in kernel/idle.c (idle_setup.c's static assert asks for it); host vectors in
 * tests/unit.
 */
#ifndef IDLELAB_KERNEL_GOVERNOR_H
#define IDLELAB_KERNEL_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

/* The two idle states every governor chooses between: the driver's indices (spec §1.1). */
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

/*
 * The tunables, Linux's haltpoll module parameters (the guest_halt_poll_* knobs; predict
 * reads them too), read afresh on every call like Linux's 0644 ones. legacy_shrink selects
 * the pre-v6.9 rule (shrink only divides); false is the v6.9+ rule (a shrunk window below
 * grow_start collapses to 0).
 */
struct gov_params {
	uint32_t guest_halt_poll_ns;
	uint32_t grow;
	uint32_t shrink;
	uint32_t grow_start;
	bool allow_shrink;
	bool legacy_shrink;
};

/*
 * haltpoll's per-CPU state (spec §1.3), the fields Linux keeps in struct cpuidle_device.
 * poll_limit_ns is W: stored as u64 but, as in Linux, grown and shrunk with u32 arithmetic.
 * grow_events/shrink_events count the branches taken, i.e. Linux's guest_halt_poll_ns_grow
 * and _shrink trace events (even when W does not change).
 */
struct haltpoll_cpu {
	uint64_t poll_limit_ns;
	enum gov_state last_state_idx;
	bool poll_time_limit;
	uint64_t last_residency_ns;
	uint64_t grow_events;
	uint64_t shrink_events;
};

#define PREDICT_HISTORY 4u

/* predict's own per-CPU state (its rule: kernel/policy/predict.h); its haltpoll half is the
 * haltpoll member of struct gov_cpu. */
struct predict_cpu {
	uint64_t periods[PREDICT_HISTORY]; /* the last whole idle periods, ns, a ring */
	unsigned count;			   /* how many of them are filled (<= PREDICT_HISTORY) */
	unsigned next;			   /* ring position of the next one */
	unsigned streak;		   /* plateau periods filed in a row (<= PREDICT_HISTORY) */
	uint64_t period_ns;		   /* the idle period in progress, summed over entries */
	uint64_t window_at_start;	   /* haltpoll's window when that period began */
	bool expired;			   /* a poll expired in the period in progress */
	bool mixed;			   /* the plateau decided an entry of that period */
	bool plateau;			   /* on the plateau (else haltpoll decides) */
	/* On the plateau, as lengths of the period in progress: halt until the first, poll
	 * until the second. */
	uint64_t halt_until_ns, poll_until_ns;
	uint64_t asked_halt_ns; /* the halt limit handed out for the entry in progress, 0: none */
	uint64_t overshoot_ns;	/* how much later than asked the last timed halt returned */
	bool timed;		/* a timed halt was reflected in the period in progress */
};

/* Each CPU's governor state: room for every governor; only the chosen one's is used. */
struct gov_cpu {
	struct haltpoll_cpu haltpoll;
	struct predict_cpu predict;
	/* Times the governor set haltpoll's rule aside (predict: entered its plateau); 0 for
	 * haltpoll. Written by the owning CPU only; the `cpu` record's takeovers. */
	uint64_t takeovers;
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
