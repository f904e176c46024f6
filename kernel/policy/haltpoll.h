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

/* The window rule of spec §1.5 on its own (reflect calls it for halts). */
enum haltpoll_adjust haltpoll_adjust(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
				     uint64_t block_ns);

/* Linux TICK_NSEC for a given HZ (rounded to nearest); 0 for hz == 0. */
uint64_t haltpoll_tick_nsec(uint32_t hz);
/*
 * cpuidle core fallback (spec §1.6 step 4) with a single deeper state of target residency
 * deeper_residency_ns: it counts only if >= 10 us, and is capped at TICK_NSEC/16; otherwise
 * the result is TICK_NSEC/16. Inline: the poll entry that finds W = 0 calls it, and a call
 * there would make the idle path keep its values in callee-saved registers on every entry.
 */
static inline uint64_t haltpoll_fallback_limit(uint64_t tick_nsec, uint64_t deeper_residency_ns)
{
	uint64_t max = tick_nsec / HALTPOLL_POLL_MAX_TICK_DIV;

	if (deeper_residency_ns < HALTPOLL_POLL_MIN_NS)
		return max;
	return deeper_residency_ns < max ? deeper_residency_ns : max;
}

/*
 * Per idle entry, in this order: select -> (poll or halt; the poll body calls poll_begin,
 * poll_limit, poll_check) -> record_residency -> reflect. An entry aborted before the state
 * ran (NEED_RESCHED seen at clear-and-test) records residency 0 and is NOT reflected.
 * select returns HALTPOLL_STATE_*; it writes *stop_tick only to clear it (poll decisions).
 * These per-entry functions are inline: the idle path calls them on every entry.
 */
/*
 * Spec 1.4, rows top to bottom. Purely history driven: no timer or sleep prediction. The idle
 * core pre-sets *stop_tick to true; only "poll" decisions clear it. Row 1's "driver has no
 * states" half cannot happen here: our driver always registers poll + halt.
 */
static inline int haltpoll_select(const struct haltpoll_cpu *cpu, bool latency_req_zero,
				  bool *stop_tick)
{
	if (latency_req_zero) {
		*stop_tick = false;
		return HALTPOLL_STATE_POLL;
	}
	if (cpu->poll_limit_ns == 0)
		return HALTPOLL_STATE_HALT;
	if (cpu->last_state_idx == HALTPOLL_STATE_POLL && cpu->poll_time_limit)
		return HALTPOLL_STATE_HALT;
	*stop_tick = false;
	return HALTPOLL_STATE_POLL;
}

/*
 * The idle core measures every state entry (spec §1.8); an entry aborted before the state ran
 * records 0 and is not reflected.
 */
static inline void haltpoll_record_residency(struct haltpoll_cpu *cpu, uint64_t residency_ns)
{
	cpu->last_residency_ns = residency_ns;
}

/* After an entry of state index: remember it; only a halt feeds the window (spec §1.5). */
static inline enum haltpoll_adjust haltpoll_reflect(const struct haltpoll_params *p,
						    struct haltpoll_cpu *cpu, int index)
{
	cpu->last_state_idx = index;
	if (index == HALTPOLL_STATE_POLL)
		return HALTPOLL_ADJ_NONE;
	return haltpoll_adjust(p, cpu, cpu->last_residency_ns);
}

/*
 * The limit a poll entry uses (cpuidle_poll_time): W if non-zero, else the fallback, which is
 * STORED into W (the Linux quirk we reproduce, see the top comment). Call it only once the
 * poll has really started (NEED_RESCHED was clear at set-polling-and-test), as Linux does.
 */
static inline uint64_t haltpoll_poll_limit(struct haltpoll_cpu *cpu, uint64_t tick_nsec)
{
	if (cpu->poll_limit_ns == 0)
		cpu->poll_limit_ns =
		    haltpoll_fallback_limit(tick_nsec, HALTPOLL_HALT_TARGET_RESIDENCY_NS);
	return cpu->poll_limit_ns;
}

/* Poll entry: the end reason starts as "not expired" even if the poll ends at once. */
static inline void haltpoll_poll_begin(struct haltpoll_cpu *cpu)
{
	cpu->poll_time_limit = false;
}

/*
 * One check of the poll loop at elapsed_ns since poll entry. Work wins (Linux tests
 * NEED_RESCHED before every clock check); expiry needs a strict elapsed > limit and is the
 * only thing that sets poll_time_limit. How often the caller checks the clock (Linux: every
 * 201 PAUSEs) is the caller's business.
 */
static inline enum haltpoll_poll_verdict haltpoll_poll_check(struct haltpoll_cpu *cpu,
							     bool work_arrived, uint64_t elapsed_ns,
							     uint64_t limit_ns)
{
	if (work_arrived)
		return HALTPOLL_POLL_WORK;
	if (elapsed_ns > limit_ns) {
		cpu->poll_time_limit = true;
		return HALTPOLL_POLL_EXPIRED;
	}
	return HALTPOLL_POLL_CONTINUE;
}

#endif
