/* Per-CPU counter snapshots and their `@idlelab cpu` records. */
#ifndef IDLELAB_KERNEL_STATS_H
#define IDLELAB_KERNEL_STATS_H

#include "kernel/percpu.h"

struct stats_snapshot {
	uint64_t t;	 /* the reader's TSC: in-progress idle states are credited up to it */
	unsigned reader; /* the CPU that took the snapshot */
	struct cpu_stats cpu[MAX_CPUS];
	uint64_t window_ns[MAX_CPUS]; /* the poll window at snapshot time */
	uint64_t takeovers[MAX_CPUS]; /* the governor's count (struct gov_cpu) at that time */
};

/* Copies every online CPU's counters (each CPU's own view; exact once the run is quiet). */
void stats_snapshot(struct stats_snapshot *s);
/* One `@idlelab cpu id=N ...` record per CPU with the counters' growth from a to b. */
void stats_print_delta(const struct stats_snapshot *a, const struct stats_snapshot *b);
/* CPU cpu's poll and halt cycles from a to b, never below 0 and together never more than the
 * time between the two snapshots, which a cross-CPU stamp could otherwise make them. */
void stats_idle_cycles(const struct stats_snapshot *a, const struct stats_snapshot *b, unsigned cpu,
		       uint64_t *poll, uint64_t *halt);
/* Sum of one counter over all CPUs, by its offset in struct cpu_stats. */
uint64_t stats_sum(const struct stats_snapshot *s, unsigned field_offset);

#define STATS_FIELD(name) ((unsigned)__builtin_offsetof(struct cpu_stats, name))

#endif
