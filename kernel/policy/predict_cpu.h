/*
 * The "predict" governor's per-CPU state (kernel/policy/gov_predict.c has the rule).
 */
#ifndef IDLELAB_KERNEL_PREDICT_CPU_H
#define IDLELAB_KERNEL_PREDICT_CPU_H

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

#endif
