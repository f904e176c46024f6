/*
 * The haltpoll idle governor: Linux's drivers/cpuidle/governors/haltpoll.c plus the two
 * pieces of the cpuidle core it depends on (the W == 0 poll-limit fallback and the expiry of
 * a poll), restated from docs/haltpoll-spec.md §1.3-1.8 on the governor interface's types
 * (kernel/policy/governor.h). It decides "poll or halt" before each idle entry and adapts
 * the per-CPU poll window W after each halt. Every input is an argument; nothing here reads
 * a clock, touches hardware or keeps global state, so the host tests run the kernel's code.
 *
 * Every function is inline: the idle loop (kernel/idle.c) calls them on every entry through
 * a constant copy of HALTPOLL_GOVERNOR, so they compile into its path.
 *
 * Decisions of spec §8 taken here, and why:
 *  - W == 0 poll-limit fallback (1.6 step 4): REPRODUCED. A poll forced by latency_req == 0
 *    with W == 0 polls for TICK_NSEC/16 and stores that into W, as Linux does, so runs that
 *    force polling are comparable with a Linux guest. The tick length is an argument because
 *    HZ is a kernel build/boot choice.
 *  - Shrink rule: v6.9+ (collapse to 0 below grow_start) by DEFAULT; the pre-v6.9 divide-only
 *    rule stays selectable with legacy_shrink so old-kernel traces can be replayed.
 *  - What the governor adapts on: the post-poll RESIDUAL of the halt (last_residency_ns), like
 *    Linux, not the whole idle period. This deliberately reproduces the 1.10.3 plateau (for a
 *    constant period 50 us < D <= 200 us every poll expires); it is the behaviour we want to
 *    measure against, and changing it would invalidate every vector of 1.10.2/1.10.3.
 *  - Flag-word layout / call-pending bit (also spec §8) is not decided here: this file never
 *    sees the flag word.
 */
#ifndef IDLELAB_KERNEL_HALTPOLL_H
#define IDLELAB_KERNEL_HALTPOLL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/policy/governor.h"

/* Linux defaults of the governor module parameters (spec §1.2); the knob table's too. */
#define HALTPOLL_DEFAULT_POLL_NS    200000u
#define HALTPOLL_DEFAULT_GROW	    2u
#define HALTPOLL_DEFAULT_SHRINK	    2u
#define HALTPOLL_DEFAULT_GROW_START 50000u

/* cpuidle core fallback when W == 0 (spec §1.6 step 4): floor and tick divisor. */
#define HALTPOLL_POLL_MIN_NS	   10000u
#define HALTPOLL_POLL_MAX_TICK_DIV 16u
/* Target residency the haltpoll driver advertises for its halt state (1 us). */
#define HALTPOLL_HALT_TARGET_RESIDENCY_NS 1000u

/* Linux's TICK_NSEC: nanoseconds per tick, rounded to nearest. hz == 0 yields 0. */
static inline uint64_t haltpoll_tick_nsec(uint32_t hz)
{
	if (hz == 0)
		return 0;
	return (1000000000ull + hz / 2) / hz;
}

/*
 * cpuidle core fallback (spec §1.6 step 4) with a single deeper state of target residency
 * deeper_residency_ns: it counts only if >= 10 us, and is capped at TICK_NSEC/16; otherwise
 * the result is TICK_NSEC/16.
 */
static inline uint64_t haltpoll_fallback_limit(uint64_t tick_nsec, uint64_t deeper_residency_ns)
{
	uint64_t max = tick_nsec / HALTPOLL_POLL_MAX_TICK_DIV;

	if (deeper_residency_ns < HALTPOLL_POLL_MIN_NS)
		return max;
	return deeper_residency_ns < max ? deeper_residency_ns : max;
}

/* Grow branch of 1.5: u32 multiply, then the GS floor BEFORE the Gmax ceiling. */
static inline uint32_t haltpoll_grown_window(const struct gov_params *p, uint64_t w)
{
	/* Linux multiplies the u64 field and truncates into an unsigned int. */
	uint32_t v = (uint32_t)(w * p->grow);

	if (v < p->grow_start)
		v = p->grow_start;
	if (v > p->guest_halt_poll_ns)
		v = p->guest_halt_poll_ns;
	return v;
}

/* Shrink branch of 1.5: u32 divide; v6.9+ drops sub-grow_start windows to 0. */
static inline uint32_t haltpoll_shrunk_window(const struct gov_params *p, uint64_t w)
{
	uint32_t v = (uint32_t)w;

	if (p->shrink == 0)
		return 0;
	v /= p->shrink;
	if (!p->legacy_shrink && v < p->grow_start)
		v = 0;
	return v;
}

/*
 * The window rule of spec 1.5 on a halt's residency block_ns. Parameters are read through p
 * on every call, so a change between calls takes effect at the next adjustment.
 */
static inline enum gov_adjust haltpoll_adjust(const struct gov_params *p, struct haltpoll_cpu *hp,
					      uint64_t block_ns)
{
	if (block_ns > hp->poll_limit_ns && block_ns <= p->guest_halt_poll_ns) {
		hp->poll_limit_ns = haltpoll_grown_window(p, hp->poll_limit_ns);
		hp->grow_events++;
		return GOV_ADJ_GROW;
	}
	if (block_ns > p->guest_halt_poll_ns && p->allow_shrink) {
		hp->poll_limit_ns = haltpoll_shrunk_window(p, hp->poll_limit_ns);
		hp->shrink_events++;
		return GOV_ADJ_SHRINK;
	}
	return GOV_ADJ_NONE;
}

/* Governor "enable" for one CPU: Linux zeroes W; the rest starts zeroed with the device. */
static inline void haltpoll_enable(struct gov_cpu *g)
{
	g->haltpoll = (struct haltpoll_cpu){.last_state_idx = GOV_STATE_POLL};
}

/*
 * Spec 1.4, rows top to bottom. Purely history driven: no timer or sleep prediction. The idle
 * core pre-sets *stop_tick to true; only "poll" decisions clear it. Row 1's "driver has no
 * states" half cannot happen here: our driver always registers poll + halt.
 */
static inline enum gov_state haltpoll_select(struct gov_cpu *g, const struct gov_params *p,
					     bool latency_req_zero, bool *stop_tick)
{
	const struct haltpoll_cpu *hp = &g->haltpoll;

	(void)p;
	if (latency_req_zero) {
		*stop_tick = false;
		return GOV_STATE_POLL;
	}
	if (hp->poll_limit_ns == 0)
		return GOV_STATE_HALT;
	if (hp->last_state_idx == GOV_STATE_POLL && hp->poll_time_limit)
		return GOV_STATE_HALT;
	*stop_tick = false;
	return GOV_STATE_POLL;
}

static inline uint64_t haltpoll_halt_limit(struct gov_cpu *g, const struct gov_params *p)
{
	(void)g;
	(void)p;
	return 0; /* Linux's halt lasts until an interrupt */
}

/* Poll entry: the end reason starts as "not expired" even if the poll ends at once. */
static inline void haltpoll_poll_begin(struct gov_cpu *g)
{
	g->haltpoll.poll_time_limit = false;
}

/*
 * The limit a poll entry uses (cpuidle_poll_time): W if non-zero, else the fallback, which is
 * STORED into W (the Linux quirk we reproduce, see the top comment). Asked only once the
 * poll has really started (NEED_RESCHED was clear at set-polling-and-test), as in Linux.
 */
static inline uint64_t haltpoll_poll_limit(struct gov_cpu *g, const struct gov_params *p,
					   uint64_t tick_nsec)
{
	struct haltpoll_cpu *hp = &g->haltpoll;

	(void)p;
	if (hp->poll_limit_ns == 0)
		hp->poll_limit_ns =
		    haltpoll_fallback_limit(tick_nsec, HALTPOLL_HALT_TARGET_RESIDENCY_NS);
	return hp->poll_limit_ns;
}

/*
 * After an entry (spec §1.5, §1.8): the idle core measured it (last_residency_ns); a poll
 * its limit ended sets poll_time_limit, as Linux's poll loop does on expiry (work that came
 * at the expiry check included); only a halt feeds the window.
 */
static inline enum gov_adjust haltpoll_reflect(struct gov_cpu *g, const struct gov_params *p,
					       const struct gov_entry *e)
{
	struct haltpoll_cpu *hp = &g->haltpoll;

	if (e->state == GOV_STATE_POLL && !e->work)
		hp->poll_time_limit = true;
	hp->last_residency_ns = e->residency_ns;
	hp->last_state_idx = e->state;
	if (e->state == GOV_STATE_POLL)
		return GOV_ADJ_NONE;
	return haltpoll_adjust(p, hp, e->residency_ns);
}

/* An entry aborted before its state ran records residency 0 and is not reflected (§1.8). */
static inline void haltpoll_aborted(struct gov_cpu *g)
{
	g->haltpoll.last_residency_ns = 0;
}

static inline uint64_t haltpoll_window_ns(const struct gov_cpu *g)
{
	return g->haltpoll.poll_limit_ns;
}

/* The table's initializer: gov_haltpoll (kernel/policy/governors.c), and the idle loop's
 * constant copy through which these functions are called directly. */
#define HALTPOLL_GOVERNOR                                                                          \
	{                                                                                          \
		.name = "haltpoll", .enable = haltpoll_enable, .select = haltpoll_select,          \
		.halt_limit = haltpoll_halt_limit, .poll_begin = haltpoll_poll_begin,              \
		.poll_limit = haltpoll_poll_limit, .reflect = haltpoll_reflect,                    \
		.aborted = haltpoll_aborted, .window_ns = haltpoll_window_ns,                      \
	}

#endif
