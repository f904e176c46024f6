/*
 * tools/replay --guest: a guest's idle periods, from its power:cpu_idle trace (a Linux guest
 * under cpuidle-haltpoll: state 0 polls, state 1 halts), replayed through the haltpoll
 * governor the kernel runs (kernel/policy/, in the idealised idle of ideal_idle.h): first
 * the check (does the governor, under the guest's tunables, enter the states the trace
 * shows, period by period?), then the what-if for other tunables (docs/replay.md).
 */
#ifndef IDLELAB_REPLAY_GUEST_H
#define IDLELAB_REPLAY_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/policy/governor.h"
#include "tools/kvmreplay/trace_read.h"

#define GP_MAX_ENTRIES 8

/* One idle period: from its first entry to the exit of the entry that ended it. */
struct gp_period {
	uint64_t d;
	uint8_t n; /* its entries (their states: at most GP_MAX_ENTRIES kept) */
	uint8_t states[GP_MAX_ENTRIES];
};

struct gp_cpu {
	int cpu;
	struct gp_period *p;
	size_t n, cap;
	uint64_t polls, hits, poll_ns, halts; /* as the trace has them */
	/* the reader's */
	bool in_entry, open, last_poll;
	uint32_t state;
	uint64_t entry_t, start, last_exit;
	struct gp_period cur;
};

struct gp_trace {
	enum rp_format format;
	struct gp_cpu *c;
	size_t nc, capc;
	uint64_t lines, lost, periods, t_first, t_last;
	uint64_t merge_gap_ns; /* a poll's exit this close to the next entry: one period */
	bool unitless, any;
};

/* Reads the periods (t->merge_gap_ns set by the caller); the exit code. */
int gp_read(const char *path, struct gp_trace *t);

struct gp_stats {
	uint64_t periods, polls, hits, poll_ns, halts, agree;
};
/* The governor over one CPU's periods under p (tick_nsec: the guest's tick, for the W == 0
 * fallback); agree counts the periods whose states it entered as the trace did. */
void gp_replay(const struct gp_cpu *c, const struct gov_params *p, uint64_t tick_nsec,
	       struct gp_stats *out);
void gp_free(struct gp_trace *t);

#endif
