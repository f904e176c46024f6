/*
 * The haltpoll idle governor (docs/haltpoll-spec.md §1.3-1.8), as pure policy: it decides
 * "poll or halt" before each idle entry and adapts the per-CPU poll window W after each halt. Every input
 * (tunables, elapsed time, "work arrived", residency, tick length) is an argument; nothing
 * here reads a clock, touches hardware or keeps global state, so the host unit tests run the
 * exact code the kernel runs.
 */
#ifndef IDLELAB_KERNEL_HALTPOLL_H
#define IDLELAB_KERNEL_HALTPOLL_H

#include <stdbool.h>
#include <stdint.h>

/* The two idle states of the haltpoll driver (spec §1.1). */
#define HALTPOLL_STATE_POLL 0
#define HALTPOLL_STATE_HALT 1

/* Linux defaults of the five governor module parameters (spec §1.2). */
#define HALTPOLL_DEFAULT_POLL_NS    200000u
#define HALTPOLL_DEFAULT_GROW	    2u
#define HALTPOLL_DEFAULT_SHRINK	    2u
#define HALTPOLL_DEFAULT_GROW_START 50000u

/* cpuidle core fallback when W == 0 (spec §1.6 step 4): floor and tick divisor. */
#define HALTPOLL_POLL_MIN_NS	   10000u
#define HALTPOLL_POLL_MAX_TICK_DIV 16u
/* Target residency the haltpoll driver advertises for its halt state (1 us). */
#define HALTPOLL_HALT_TARGET_RESIDENCY_NS 1000u

/*
 * Tunables, read afresh on every call like Linux's 0644 module parameters. legacy_shrink
 * selects the pre-v6.9 rule (shrink only divides); false is the v6.9+ rule (a shrunk window
 * below grow_start collapses to 0).
 */
struct haltpoll_params {
	uint32_t guest_halt_poll_ns;
	uint32_t grow;
	uint32_t shrink;
	uint32_t grow_start;
	bool allow_shrink;
	bool legacy_shrink;
};

/*
 * Per-CPU governor state (spec §1.3). poll_limit_ns is W: stored as u64 but, as in Linux,
 * grown and shrunk with u32 arithmetic. grow_events/shrink_events count the branches taken,
 * i.e. Linux's guest_halt_poll_ns_grow/_shrink trace events (even when W does not change).
 */
struct haltpoll_cpu {
	uint64_t poll_limit_ns;
	int last_state_idx;
	bool poll_time_limit;
	uint64_t last_residency_ns;
	uint64_t grow_events;
	uint64_t shrink_events;
};

/* Which branch of the window adjustment (spec §1.5) a call took. */
enum haltpoll_adjust {
	HALTPOLL_ADJ_NONE = 0,
	HALTPOLL_ADJ_GROW,
	HALTPOLL_ADJ_SHRINK,
};

/* What one check of the poll loop decided (spec §1.6 step 5). */
enum haltpoll_poll_verdict {
	HALTPOLL_POLL_CONTINUE = 0,
	HALTPOLL_POLL_WORK,
	HALTPOLL_POLL_EXPIRED,
};

/* W = 0 and a zeroed history, as when the governor is enabled for a CPU. */
void haltpoll_cpu_init(struct haltpoll_cpu *cpu);

/*
 * Per idle entry, in this order: select -> (poll or halt; the poll body calls poll_begin,
 * poll_limit, poll_check) -> record_residency -> reflect. An entry aborted before the state
 * ran (NEED_RESCHED seen at clear-and-test) records residency 0 and is NOT reflected.
 * select returns HALTPOLL_STATE_*; it writes *stop_tick only to clear it (poll decisions).
 */
int haltpoll_select(const struct haltpoll_cpu *cpu, bool latency_req_zero, bool *stop_tick);
void haltpoll_record_residency(struct haltpoll_cpu *cpu, uint64_t residency_ns);
enum haltpoll_adjust haltpoll_reflect(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
				      int index);
/* The window rule of spec §1.5 on its own (reflect calls it for halts). */
enum haltpoll_adjust haltpoll_adjust(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
				     uint64_t block_ns);

/* Linux TICK_NSEC for a given HZ (rounded to nearest); 0 for hz == 0. */
uint64_t haltpoll_tick_nsec(uint32_t hz);
/* cpuidle fallback: deeper residency if >= 10 us (capped at tick/16), else tick/16. */
uint64_t haltpoll_fallback_limit(uint64_t tick_nsec, uint64_t deeper_residency_ns);
/* Poll limit: W, or (W == 0) the fallback for our 1 us halt state, which is stored into W. */
uint64_t haltpoll_poll_limit(struct haltpoll_cpu *cpu, uint64_t tick_nsec);

/* Poll loop bookkeeping: begin clears poll_time_limit; check sets it on strict expiry. */
void haltpoll_poll_begin(struct haltpoll_cpu *cpu);
enum haltpoll_poll_verdict haltpoll_poll_check(struct haltpoll_cpu *cpu, bool work_arrived,
					       uint64_t elapsed_ns, uint64_t limit_ns);

#endif
