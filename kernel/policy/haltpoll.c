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

/*
 * Spec 1.4, rows top to bottom. Purely history driven: no timer or sleep prediction. The idle
 * core pre-sets *stop_tick to true; only "poll" decisions clear it. Row 1's "driver has no
 * states" half cannot happen here: our driver always registers poll + halt.
 */
int haltpoll_select(const struct haltpoll_cpu *cpu, bool latency_req_zero, bool *stop_tick)
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
void haltpoll_record_residency(struct haltpoll_cpu *cpu, uint64_t residency_ns)
{
	cpu->last_residency_ns = residency_ns;
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

/* After an entry of state index: remember it; only a halt feeds the window (spec §1.5). */
enum haltpoll_adjust haltpoll_reflect(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
				      int index)
{
	cpu->last_state_idx = index;
	if (index == HALTPOLL_STATE_POLL)
		return HALTPOLL_ADJ_NONE;
	return haltpoll_adjust(p, cpu, cpu->last_residency_ns);
}

/* Linux's TICK_NSEC: nanoseconds per tick, rounded to nearest. hz == 0 yields 0. */
uint64_t haltpoll_tick_nsec(uint32_t hz)
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
uint64_t haltpoll_fallback_limit(uint64_t tick_nsec, uint64_t deeper_residency_ns)
{
	uint64_t max = tick_nsec / HALTPOLL_POLL_MAX_TICK_DIV;

	if (deeper_residency_ns < HALTPOLL_POLL_MIN_NS)
		return max;
	return deeper_residency_ns < max ? deeper_residency_ns : max;
}

/*
 * The limit a poll entry uses (cpuidle_poll_time): W if non-zero, else the fallback, which is
 * STORED into W (the Linux quirk we reproduce, see the top comment). Call it only once the
 * poll has really started (NEED_RESCHED was clear at set-polling-and-test), as Linux does.
 */
uint64_t haltpoll_poll_limit(struct haltpoll_cpu *cpu, uint64_t tick_nsec)
{
	if (cpu->poll_limit_ns == 0)
		cpu->poll_limit_ns =
		    haltpoll_fallback_limit(tick_nsec, HALTPOLL_HALT_TARGET_RESIDENCY_NS);
	return cpu->poll_limit_ns;
}

/* Poll entry: the end reason starts as "not expired" even if the poll ends at once. */
void haltpoll_poll_begin(struct haltpoll_cpu *cpu)
{
	cpu->poll_time_limit = false;
}

/*
 * One check of the poll loop at elapsed_ns since poll entry. Work wins (Linux tests
 * NEED_RESCHED before every clock check); expiry needs a strict elapsed > limit and is the
 * only thing that sets poll_time_limit. How often the caller checks the clock (Linux: every
 * 201 PAUSEs) is the caller's business.
 */
enum haltpoll_poll_verdict haltpoll_poll_check(struct haltpoll_cpu *cpu, bool work_arrived,
					       uint64_t elapsed_ns, uint64_t limit_ns)
{
	if (work_arrived)
		return HALTPOLL_POLL_WORK;
	if (elapsed_ns > limit_ns) {
		cpu->poll_time_limit = true;
		return HALTPOLL_POLL_EXPIRED;
	}
	return HALTPOLL_POLL_CONTINUE;
}
