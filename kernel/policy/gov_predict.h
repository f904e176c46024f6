/*
 * The "predict" governor's per-CPU state (kernel/policy/gov_predict.c has the rule).
 */
#ifndef IDLELAB_KERNEL_GOV_PREDICT_H
#define IDLELAB_KERNEL_GOV_PREDICT_H

#include <stdbool.h>
#include <stdint.h>

#define PREDICT_HISTORY 4u

struct predict_cpu {
	uint64_t periods[PREDICT_HISTORY]; /* the last whole idle periods, ns, a ring */
	unsigned count;			   /* how many of them are filled (<= PREDICT_HISTORY) */
	unsigned next;			   /* ring position of the next one */
	uint64_t period_ns;		   /* the idle period in progress, summed over entries */
	bool polled_out;		   /* a poll already expired in the period in progress */
	uint64_t limit_ns;		   /* the poll limit the prediction gives now (0: halt) */
};

/* The prediction: the second largest of the last PREDICT_HISTORY periods (the largest while
 * fewer are known), 0 with none. */
uint64_t predict_next_period(const struct predict_cpu *p);

#endif
