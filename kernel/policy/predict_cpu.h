/*
 * The "predict" governor's per-CPU state (kernel/policy/gov_predict.h has the rule). Its
 * haltpoll half lives in struct gov_cpu's haltpoll member, next to this.
 */
#ifndef IDLELAB_KERNEL_PREDICT_CPU_H
#define IDLELAB_KERNEL_PREDICT_CPU_H

#include <stdbool.h>
#include <stdint.h>

#define PREDICT_HISTORY 4u
/* A plateau period without a timed halt takes 1/PREDICT_OVERSHOOT_DECAY off the overshoot. */
#define PREDICT_OVERSHOOT_DECAY 4u

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

#endif
