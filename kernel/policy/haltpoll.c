/*
 * haltpoll governor: Linux's drivers/cpuidle/governors/haltpoll.c plus the two pieces of the
 * cpuidle core it depends on (the W == 0 poll-limit fallback and the poll-expiry test),
 * restated from docs/haltpoll-spec.md §1.3-1.8 as pure functions.
 *
 * Decisions of spec §8 taken here, and why:
 *  - W == 0 poll-limit fallback (1.6 step 4): REPRODUCED. A poll forced by latency_req == 0
 *    with W == 0 polls for TICK_NSEC/16 and stores that into W, as Linux does, so runs that
 *    force polling are comparable with a Linux guest. The tick length is an argument because
 *    HZ is a kernel build/boot choice.
 *  - Shrink rule: v6.9+ (collapse to 0 below grow_start) by DEFAULT; the pre-v6.9 divide-only
 *    rule stays selectable with params.legacy_shrink so old-kernel traces can be replayed.
 *  - What the governor adapts on: the post-poll RESIDUAL of the halt (last_residency_ns), like
 *    Linux, not the whole idle period. This deliberately reproduces the 1.10.3 plateau (for a
 *    constant period 50 us < D <= 200 us every poll expires); it is the behaviour we want to
 *    measure against, and changing it would invalidate every vector of 1.10.2/1.10.3.
 *  - Flag-word layout / call-pending bit (also spec §8) is not decided here: this file never
 *    sees the flag word.
 */
#include "kernel/policy/haltpoll.h"

/* Governor "enable" for one CPU: Linux zeroes W; the rest starts zeroed with the device. */
void haltpoll_cpu_init(struct haltpoll_cpu *cpu)
{
	cpu->poll_limit_ns = 0;
	cpu->last_state_idx = HALTPOLL_STATE_POLL;
	cpu->poll_time_limit = false;
	cpu->last_residency_ns = 0;
	cpu->grow_events = 0;
	cpu->shrink_events = 0;
}

/* Grow branch of 1.5: u32 multiply, then the GS floor BEFORE the Gmax ceiling. */
static uint32_t grown_window(const struct haltpoll_params *p, uint64_t w)
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
static uint32_t shrunk_window(const struct haltpoll_params *p, uint64_t w)
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
 * Spec 1.5 on halt residency block_ns. Parameters are read through p on every call, so a
 * change between calls takes effect at the next adjustment (Linux's 0644 semantics).
 */
enum haltpoll_adjust haltpoll_adjust(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
				     uint64_t block_ns)
{
	if (block_ns > cpu->poll_limit_ns && block_ns <= p->guest_halt_poll_ns) {
		cpu->poll_limit_ns = grown_window(p, cpu->poll_limit_ns);
		cpu->grow_events++;
		return HALTPOLL_ADJ_GROW;
	}
	if (block_ns > p->guest_halt_poll_ns && p->allow_shrink) {
		cpu->poll_limit_ns = shrunk_window(p, cpu->poll_limit_ns);
		cpu->shrink_events++;
		return HALTPOLL_ADJ_SHRINK;
	}
	return HALTPOLL_ADJ_NONE;
}

/* Linux's TICK_NSEC: nanoseconds per tick, rounded to nearest. hz == 0 yields 0. */
uint64_t haltpoll_tick_nsec(uint32_t hz)
{
	if (hz == 0)
		return 0;
	return (1000000000ull + hz / 2) / hz;
}
