/*
 * The idle loop and its two states: a bounded poll and a halt. idle=halt only halts,
 * idle=poll only polls (without a bound), idle=haltpoll lets the haltpoll governor
 * (kernel/policy/haltpoll.c) choose before every entry, as Linux's cpuidle-haltpoll does.
 *
 * The POLLING bit (docs/haltpoll-spec.md §3.1-3.5). While this CPU spins in the poll state it
 * advertises POLLING in its flag word, and a waker that sees it skips the IPI. Invariants:
 *   I1 no lost wake-up: POLLING is cleared with an atomic RMW and interrupts off, and only
 *      then is NEED_RESCHED re-tested before `sti; hlt`. A waker whose RMW precedes the
 *      clear saw POLLING and sent nothing, but the re-test (ordered after the clear, which
 *      is a full barrier) sees its NEED_RESCHED and the halt is abandoned. A waker whose
 *      RMW follows the clear sees POLLING clear and sends an IPI (or one is already in
 *      flight: IPI_PENDING), which ends the HLT.
 *   I2 sound elision: an IPI is skipped only by a waker whose atomic RMW saw POLLING set,
 *      and POLLING is set only inside poll_state(), whose every iteration tests
 *      NEED_RESCHED (I5: it is re-tested within one loop iteration).
 *   I4 the flag word is changed only with atomic read-modify-writes, here and in sched.c.
 *   R2 POLLING is clear whenever this CPU runs anything but its idle states: poll_state()
 *      clears it before returning, and only idle_until_work() calls poll_state().
 * tests/model/pollflag.pml checks these with spin.
 *
 * The NEED_RESCHED test before HLT runs with interrupts off and safe_halt() enables them
 * with `sti; hlt`: STI's one-instruction shadow makes an IPI already pending end the HLT
 * rather than be serviced before it.
 */
#include "arch/x86/coldcall.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/kvm.h"
#include "arch/x86/probe.h"
#include "arch/x86/tsc.h"
#include "kernel/policy/gov_haltpoll.h"
#include "kernel/policy/gov_predict.h"
#include "kernel/policy/governor.h"
#include "kernel/policy/haltpoll.h"
#include "kernel/idle.h"
#include "kernel/policy/idle_policy.h"
#include "kernel/policy/knobs.h"
#include "kernel/policy/steal_gate.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/timeline.h"
#include "kernel/timer.h"

/* Linux checks the clock every 201 PAUSEs; we also cap it there (see idle_setup). */
#define POLL_CHECK_MAX	  200
#define POLL_CHECKS_PER_W 100 /* read the clock at least every 1 % of the window */
#define POLL_CALIBRATE_N  256
#define NO_LIMIT	  UINT64_MAX

static int policy;
static const char *policy_reason;
static int msr_value;		    /* what every CPU writes; -1: the host offers no MSR */
static int msr_read_back[MAX_CPUS]; /* what each CPU read back after writing it */
static bool pollflag;
static bool latency_req_zero;
static uint64_t tick_nsec;
static uint64_t poll_iter_cycles; /* one poll-loop iteration without a clock read */
static struct haltpoll_params hp;
static const struct idle_governor *gov; /* idle=haltpoll's governor: cpuidle.governor= */
static enum gov_call gov_how;		/* how GOV_CALL reaches it */
static bool steal_time;			/* kvm-steal-time offered and registered on every CPU */
static uint32_t steal_threshold;	/* haltpoll.steal_threshold=, % (0: off) */

/*
 * A call into the chosen governor. The governors in kernel/policy are called directly, so
 * their few instructions per entry compile into this path instead of going through
 * indirect calls (the idea of Linux's INDIRECT_CALL_2); any other goes through its table.
 * The functions on the per-entry path take `how` (gov_how, decided once at setup) as a
 * constant: they are always inlined, so each kind of caller gets its own copy with the
 * test folded.
 */
enum gov_call {
	GOV_BY_TABLE,
	GOV_HALTPOLL_INLINE,
	GOV_PREDICT_INLINE
};
#define GOV_CALL(fn, ...)                                                                          \
	(how == GOV_HALTPOLL_INLINE  ? hp_##fn(__VA_ARGS__)                                        \
	 : how == GOV_PREDICT_INLINE ? pr_##fn(__VA_ARGS__)                                        \
				     : gov->fn(__VA_ARGS__))
#define ENTRY_PATH static inline __attribute__((always_inline))

static uint32_t flags_load(const struct cpu *c)
{
	return __atomic_load_n(&c->flags, __ATOMIC_SEQ_CST);
}

/*
 * The idle state in progress and the counters that describe finished ones change together
 * under an even/odd sequence count, so a remote snapshot (kernel/stats.c) sees them
 * consistent (hlt = halts - halts_aborted at every instant) and can credit time not yet
 * ended. x86 keeps stores in order, so compiler barriers are all the count needs. Between
 * seq_open and seq_close: plain updates only. A poll's start, which changes no counter,
 * orders its two stores instead (poll_state).
 */
static void seq_open(struct cpu *c)
{
	c->idle_seq++;
	barrier();
}

static void seq_close(struct cpu *c)
{
	barrier();
	c->idle_seq++;
}

/*
 * How many iterations between clock reads so that a window of limit_cyc is checked at
 * least POLL_CHECKS_PER_W times. Linux's fixed 201 assumes a PAUSE of tens of cycles; under
 * an emulating hypervisor one iteration can cost microseconds, and 201 of them would
 * overshoot a 200 us window several times over.
 */
static unsigned check_every(uint64_t limit_cyc)
{
	uint64_t n;

	if (limit_cyc == NO_LIMIT)
		return POLL_CHECK_MAX;
	n = limit_cyc / POLL_CHECKS_PER_W / (poll_iter_cycles ? poll_iter_cycles : 1);
	return n < 1 ? 1 : n > POLL_CHECK_MAX ? POLL_CHECK_MAX : (unsigned)n;
}

/* The poll limit in cycles and how often to read the clock for it, cached per CPU: the
 * window rarely changes, and the conversion and divisions would be paid on every entry.
 * A cold callee (arch/x86/coldcall.h): its caller need not keep anything from it. */
static __attribute__((noinline)) ARCH_COLD_CALLEE void poll_replan(struct cpu *c, uint64_t limit_ns)
{
	c->poll_plan_ns = limit_ns;
	c->poll_plan_cycles = limit_ns == NO_LIMIT ? NO_LIMIT : ns_to_tsc(limit_ns);
	c->poll_plan_every = check_every(c->poll_plan_cycles);
}

static inline void poll_plan(struct cpu *c, uint64_t limit_ns, uint64_t *limit, unsigned *every)
{
	if (limit_ns != c->poll_plan_ns)
		arch_cold_call3_mem(poll_replan, c, limit_ns, 0);
	*limit = c->poll_plan_cycles;
	*every = c->poll_plan_every;
}

/*
 * The end of a poll: POLLING cleared, the counters. `work` and `immediate` are constants at
 * each call, so each way out of the poll state runs straight through its own copy.
 */
ENTRY_PATH void poll_end(struct cpu *c, bool pf, uint64_t t0, bool work, bool immediate,
			 uint64_t limit, uint64_t *elapsed)
{
	uint64_t now;

	irq_disable();
	if (pf)
		__atomic_fetch_and(&c->flags, ~CPU_POLLING, __ATOMIC_SEQ_CST);
	now = rdtsc();
	probe_mark(PROBE_NOTICE);
	timeline_rec_at(TL_IDLE_END, work ? TL_END_WORK : 0, now);
	*elapsed = now - t0;
	if (work)
		c->idle_notice = now;
	seq_open(c);
	c->idle_since = 0;
	c->stats.poll_cycles += *elapsed; /* (idle_entries, poll_entries: kernel/stats.c) */
	if (immediate) {
		c->stats.poll_immediate++;
	} else if (work) {
		c->stats.poll_hits++;
	} else {
		uint64_t over = *elapsed - limit;

		c->stats.poll_expired++;
		c->stats.poll_overshoot_cycles += over;
		if (over > c->stats.poll_overshoot_max_cycles)
			c->stats.poll_overshoot_max_cycles = over;
	}
	seq_close(c);
}

/*
 * The poll state. Entered and left with interrupts off; polls with them on. g is the
 * governor's state (NULL for idle=poll, which polls without a limit): as in Linux's
 * poll_idle(), the limit is asked for only once setting POLLING and testing NEED_RESCHED
 * found no work, because asking may store the W = 0 fallback into the window.
 * Returns true if work arrived (NEED_RESCHED), false if the limit passed first. *elapsed
 * gets the TSC cycles spent, *limit_ns the limit polled against (NO_LIMIT if none).
 */
ENTRY_PATH bool poll_state(struct cpu *c, struct gov_cpu *g, enum gov_call how, bool pf,
			   uint64_t *elapsed, uint64_t *limit_ns)
{
	uint64_t t0 = rdtsc(), limit = NO_LIMIT;
	unsigned every = POLL_CHECK_MAX, n = 0;
	bool immediate;

	if (g)
		GOV_CALL(poll_begin, g);
	/* No counter changes here, so no sequence count: polling is stored before since, and a
	 * reader (kernel/stats.c), which loads since before polling, that sees this since
	 * sees this polling too (x86 keeps stores, and loads, in order). */
	c->idle_polling = true;
	barrier();
	c->idle_since = c->idle_entered = t0;
	timeline_rec_at(TL_POLL, 0, t0);
	irq_enable();
	/* Set POLLING, then test NEED_RESCHED: Linux's current_set_polling_and_test(). The
	 * locked OR is a full barrier, so the test sees any wake whose RMW came before it, and a
	 * wake after it saw POLLING and is found by the loop. The OR's old value is not needed,
	 * so it is one locked instruction, not a compare-exchange loop. */
	if (pf)
		__atomic_fetch_or(&c->flags, CPU_POLLING, __ATOMIC_SEQ_CST);
	immediate = flags_load(c) & CPU_NEED_RESCHED;
	*limit_ns = NO_LIMIT;
	if (!immediate && g) {
		*limit_ns = GOV_CALL(poll_limit, g, &hp, tick_nsec);
		poll_plan(c, *limit_ns, &limit, &every);
	}
	probe_mark(PROBE_IDLE_WAIT);
	if (immediate) {
		poll_end(c, pf, t0, true, true, limit, elapsed);
		return true;
	}
	while (!(flags_load(c) & CPU_NEED_RESCHED)) {
		cpu_relax();
		if (++n >= every) {
			n = 0;
			if (rdtsc() - t0 > limit) {
				poll_end(c, pf, t0, false, false, limit, elapsed);
				return false;
			}
		}
	}
	poll_end(c, pf, t0, true, false, limit, elapsed);
	return true;
}

/*
 * The halt state. Entered and left with interrupts off, POLLING clear. Returns the cycles
 * spent in HLT; if NEED_RESCHED was already set the HLT is skipped (halts_aborted) and the
 * few cycles of the skipped entry are returned, never 0, as Linux's default_enter_idle()
 * returns its index and the entry is measured and reflected.
 */
static uint64_t halt_state(struct cpu *c)
{
	uint64_t t0 = rdtsc(), cycles;

	if (flags_load(c) & CPU_NEED_RESCHED) {
		seq_open(c);
		c->stats.halts++;
		c->stats.halts_aborted++;
		seq_close(c);
		return rdtsc() - t0 + 1; /* the skipped entry's own (near-zero) length */
	}
	seq_open(c); /* counted as it starts, as the host counts the HLT exit */
	c->stats.halts++;
	c->stats.hlt++;
	c->idle_since = c->idle_entered = t0;
	c->idle_polling = false;
	seq_close(c);
	probe_mark(PROBE_IDLE_WAIT);
	timeline_rec_at(TL_HALT, 0, t0); /* t0: where the residency counts from */
	safe_halt(); /* returns with interrupts on, after the waking handler ran */
	irq_disable();
	c->idle_notice = rdtsc();
	probe_mark(PROBE_NOTICE);
	timeline_rec_at(TL_IDLE_END, TL_END_HALT, c->idle_notice);
	cycles = c->idle_notice - t0;
	seq_open(c);
	c->stats.halt_cycles += cycles;
	c->idle_since = 0;
	seq_close(c);
	return cycles;
}

/* After every reflect: the adjustment counted, and the window it left in the timeline. */
static void count_adjust(struct cpu *c, enum haltpoll_adjust a)
{
	if (a == HALTPOLL_ADJ_GROW)
		c->stats.window_grows++;
	else if (a == HALTPOLL_ADJ_SHRINK)
		c->stats.window_shrinks++;
	timeline_rec(TL_REFLECT, 0); /* the recorder reads the window: nothing here when off */
}

/*
 * The governor hears of a finished entry (reflect) before its next select. A halt, or an
 * entry through the governor table, that ended with work is reflected when this CPU next
 * idles (same inputs, same decisions), so the woken thread does not wait for it; an entry
 * that ended without work is followed by a select at once, so the deferral costs nothing
 * there. A poll that found work under an inline governor is reflected at once
 * (governed_enter): for haltpoll that is two stores, fewer than keeping the entry.
 */
ENTRY_PATH void reflect_entry(struct cpu *c, enum gov_call how, int state, uint64_t cycles,
			      uint64_t limit, bool work)
{
	struct gov_entry e = {
	    .state = state,
	    .residency_ns = tsc_to_ns(cycles),
	    .limit_ns = limit == NO_LIMIT ? GOV_NO_LIMIT : limit,
	    .work = work,
	};

	count_adjust(c, GOV_CALL(reflect, &c->gov, &hp, &e));
}

ENTRY_PATH void reflect_done(struct cpu *c, enum gov_call how, int state)
{
	c->done_pending = false;
	reflect_entry(c, how, state, c->done_cycles, c->done_limit, c->done_work);
}

/* The state is passed as a constant, so that each case compiles with what the governor's
 * reflect does for it alone (for haltpoll's poll, little). */
ENTRY_PATH void finish_entry(struct cpu *c, enum gov_call how)
{
	if (c->done_state == GOV_STATE_POLL)
		reflect_done(c, how, GOV_STATE_POLL);
	else
		reflect_done(c, how, GOV_STATE_HALT);
}

/* Keeps a finished entry for finish_entry. */
static inline void entry_done(struct cpu *c, int state, uint64_t cycles, uint64_t limit, bool work)
{
	c->done_state = state;
	c->done_cycles = cycles;
	c->done_limit = limit;
	c->done_work = work;
	c->done_pending = true;
}

/*
 * One governed idle entry (docs/haltpoll-spec.md §1.4-1.8). The tick is the hz= knob's
 * business, so the governor's stop_tick advice is not acted on. After select, Linux tests
 * for work twice, and the governor sees the two differently: call_cpuidle() aborts the
 * entry (residency 0, not reflected); the halt state's own enter skips the HLT but the entry
 * counts (reflected with its near-zero residency, so from W = 0 haltpoll's window grows).
 */
ENTRY_PATH bool entry_aborted(struct cpu *c, enum gov_call how) /* call_cpuidle(): -EBUSY */
{
	if (!(flags_load(c) & CPU_NEED_RESCHED))
		return false;
	GOV_CALL(aborted, &c->gov);
	c->stats.idle_aborted++;
	return true;
}

/* Each CPU's timer for a halt the governor limited; only that CPU touches its own. */
static struct timer idle_timers[MAX_CPUS];

/* The idle timer's interrupt is all it does: it ends the HLT, the idle loop goes on. */
static void idle_timer_fired(struct timer *t)
{
	(void)t;
}

/*
 * A halt the governor limited (halt_limit): a timer on this CPU ends it, the entry is
 * reflected as a halt that ended without work, and select is asked again. Only a plain
 * interrupt: the POLL-flag protocol is the same as for any halt ended by a tick.
 */
static __attribute__((noinline)) uint64_t timed_halt(struct cpu *c, uint64_t limit_ns)
{
	uint64_t cycles;

	struct timer *t = &idle_timers[c->id];

	t->fn = idle_timer_fired;
	timer_arm(t, rdtsc() + ns_to_tsc(limit_ns));
	cycles = halt_state(c);
	timer_cancel(t);
	return cycles;
}

/* The governor chose halt: the entry, measured, kept for finish_entry. Out of line, so that
 * the poll path does not pay for the halt's. */
static __attribute__((noinline)) void governed_halt(struct cpu *c, enum gov_call how)
{
	uint64_t limit, cycles;

	if (entry_aborted(c, how))
		return;
	limit = GOV_CALL(halt_limit, &c->gov, &hp);
	cycles = limit ? timed_halt(c, limit) : halt_state(c);
	entry_done(c, GOV_STATE_HALT, cycles, NO_LIMIT, flags_load(c) & CPU_NEED_RESCHED);
}

/* haltpoll.steal_threshold=: while this CPU's recent steal is above the threshold it halts
 * without asking the governor (whose state stays as it was), so the host CPU goes to
 * whoever else wants it. Returns true if it did. */
static __attribute__((noinline)) bool steal_gated_halt(struct cpu *c)
{
	if (steal_gate_allows(&c->steal_gate, steal_threshold, tsc_to_ns(rdtsc()),
			      kvm_steal_ns(c->id)))
		return false;
	c->stats.polls_suspended++;
	if (flags_load(c) & CPU_NEED_RESCHED)
		c->stats.idle_aborted++;
	else
		halt_state(c);
	return true;
}

/*
 * The setup an idle loop is compiled for: the policy, how the governor is called, and the
 * knobs tested on every entry. The common setups get a copy each with these constant (the
 * tests fold away); any other runs the copy that reads them.
 */
struct idle_setup {
	int policy;
	enum gov_call how;
	bool pollflag, steal_gate, latency_req_zero;
};

/* One governed idle entry; true if work ended it (NEED_RESCHED was seen). */
ENTRY_PATH bool governed_enter(struct cpu *c, struct idle_setup k)
{
	enum gov_call how = k.how;
	bool stop_tick = true, work;
	uint64_t cycles, limit;

	if (c->done_pending)
		finish_entry(c, how);
	if (k.steal_gate && steal_gated_halt(c))
		return false;
	if (GOV_CALL(select, &c->gov, &hp, k.latency_req_zero, &stop_tick) != GOV_STATE_POLL) {
		governed_halt(c, how);
		return false;
	}
	if (entry_aborted(c, how))
		return true;
	work = poll_state(c, &c->gov, how, k.pollflag, &cycles, &limit);
	if (how != GOV_BY_TABLE && work)
		/* haltpoll's reflect of a poll that found work is two stores (predict's, off its
		 * plateau, a few more): fewer than keeping the entry for later */
		reflect_entry(c, how, GOV_STATE_POLL, cycles, limit, true);
	else
		entry_done(c, GOV_STATE_POLL, cycles, limit, work);
	return work;
}

ENTRY_PATH void idle_loop(struct cpu *c, struct idle_setup k)
{
	uint64_t cycles, limit;

	while (!(flags_load(c) & CPU_NEED_RESCHED)) {
		probe_mark(PROBE_IDLE_ENTER);
		if (k.policy == IDLE_HALTPOLL) {
			if (governed_enter(c, k))
				return;
		} else if (k.policy == IDLE_POLL) {
			if (poll_state(c, 0, GOV_BY_TABLE, k.pollflag, &cycles, &limit))
				return;
		} else {
			halt_state(c);
		}
	}
}

/* The governor chose halt for an entry idle_first_entry() began: that entry, then the loop. */
static __attribute__((noinline)) void halt_then_loop(struct cpu *c, enum gov_call how,
						     void (*loop)(struct cpu *c))
{
	governed_halt(c, how);
	loop(c);
}

/*
 * A governed copy's first entry, for its common case: nothing left to reflect, the governor
 * chooses poll, the poll ends with work (the same steps as governed_enter, in the same
 * order). It calls nothing except as its last act (a tail call: to `loop`, the copy's
 * whole loop, for anything else), so it keeps nothing in callee-saved registers and saves
 * none: each one saved is a store and a load on every idle entry, and where ring 0 is
 * emulated a memory access costs several register instructions (docs/platform-notes.md).
 */
ENTRY_PATH void idle_first_entry(struct cpu *c, struct idle_setup k, void (*loop)(struct cpu *c))
{
	enum gov_call how = k.how;
	bool stop_tick = true;
	uint64_t cycles, limit;

	if (flags_load(c) & CPU_NEED_RESCHED)
		return;
	if (c->done_pending)
		return loop(c); /* its first entry reflects this one, then goes on as usual */
	probe_mark(PROBE_IDLE_ENTER);
	if (GOV_CALL(select, &c->gov, &hp, false, &stop_tick) != GOV_STATE_POLL)
		return halt_then_loop(c, how, loop);
	if (entry_aborted(c, how))
		return;
	if (poll_state(c, &c->gov, how, k.pollflag, &cycles, &limit)) {
		reflect_entry(c, how, GOV_STATE_POLL, cycles, limit, true);
		return;
	}
	entry_done(c, GOV_STATE_POLL, cycles, limit, false);
	return loop(c);
}

/* A copy for each common setup: policy, governor and POLL flag fixed, nothing else set. */
#define IDLE_SETUP(pol, gov_how_, pf)                                                              \
	((struct idle_setup){.policy = (pol), .how = (gov_how_), .pollflag = (pf)})
#define IDLE_LOOP_COPY(name, pol, gov_how_, pf)                                                    \
	static void name(struct cpu *c)                                                            \
	{                                                                                          \
		idle_loop(c, IDLE_SETUP(pol, gov_how_, pf));                                       \
	}
/* A governed copy: its loop out of line, entered through idle_first_entry(), which is
 * governed_enter() for an inline governor with no steal gate and no latency_req_zero (any
 * other setup runs idle_loop_any). */
#define IDLE_LOOP_GOVERNED_COPY(name, gov_how_, pf)                                                \
	_Static_assert((gov_how_) != GOV_BY_TABLE, "idle_first_entry reflects at once");           \
	static __attribute__((noinline)) void name##_loop(struct cpu *c)                           \
	{                                                                                          \
		idle_loop(c, IDLE_SETUP(IDLE_HALTPOLL, gov_how_, pf));                             \
	}                                                                                          \
	static void name(struct cpu *c)                                                            \
	{                                                                                          \
		idle_first_entry(c, IDLE_SETUP(IDLE_HALTPOLL, gov_how_, pf), name##_loop);         \
	}
IDLE_LOOP_GOVERNED_COPY(idle_loop_haltpoll, GOV_HALTPOLL_INLINE, true)
IDLE_LOOP_GOVERNED_COPY(idle_loop_haltpoll_noflag, GOV_HALTPOLL_INLINE, false)
IDLE_LOOP_GOVERNED_COPY(idle_loop_predict, GOV_PREDICT_INLINE, true)
IDLE_LOOP_GOVERNED_COPY(idle_loop_predict_noflag, GOV_PREDICT_INLINE, false)
IDLE_LOOP_COPY(idle_loop_poll, IDLE_POLL, GOV_BY_TABLE, true)
IDLE_LOOP_COPY(idle_loop_poll_noflag, IDLE_POLL, GOV_BY_TABLE, false)
IDLE_LOOP_COPY(idle_loop_halt, IDLE_HALT, GOV_BY_TABLE, false)

/* Any other setup (steal_threshold=, latency_req_zero=, a governor added later): the knobs
 * read on every entry. */
static void idle_loop_any(struct cpu *c)
{
	struct idle_setup k = {.policy = policy,
			       .pollflag = pollflag,
			       .steal_gate = steal_threshold != 0,
			       .latency_req_zero = latency_req_zero};

	switch (gov_how) { /* each case a constant: direct calls to kernel/policy's governors */
	case GOV_HALTPOLL_INLINE:
		k.how = GOV_HALTPOLL_INLINE;
		idle_loop(c, k);
		break;
	case GOV_PREDICT_INLINE:
		k.how = GOV_PREDICT_INLINE;
		idle_loop(c, k);
		break;
	default:
		k.how = GOV_BY_TABLE;
		idle_loop(c, k);
	}
}

/* The copies, by the name the `idle` record gives (loop=). */
struct idle_loop_copy {
	void (*fn)(struct cpu *c);
	const char *name;
};
static const struct idle_loop_copy loop_halt = {idle_loop_halt, "halt"},
				   loop_poll = {idle_loop_poll, "poll"},
				   loop_poll_noflag = {idle_loop_poll_noflag, "poll_noflag"},
				   loop_haltpoll = {idle_loop_haltpoll, "haltpoll"},
				   loop_haltpoll_noflag = {idle_loop_haltpoll_noflag,
							   "haltpoll_noflag"},
				   loop_predict = {idle_loop_predict, "predict"},
				   loop_predict_noflag = {idle_loop_predict_noflag,
							  "predict_noflag"},
				   loop_any = {idle_loop_any, "any"};
static const struct idle_loop_copy *loop_chosen = &loop_any;

void (*idle_until_work)(struct cpu *c) = idle_loop_any;

/* The copy of the idle loop for this setup (idle_until_work). */
static const struct idle_loop_copy *choose_idle_loop(void)
{
	if (policy == IDLE_HALT)
		return &loop_halt;
	if (policy == IDLE_POLL)
		return pollflag ? &loop_poll : &loop_poll_noflag;
	if (steal_threshold || latency_req_zero)
		return &loop_any;
	if (gov_how == GOV_HALTPOLL_INLINE)
		return pollflag ? &loop_haltpoll : &loop_haltpoll_noflag;
	if (gov_how == GOV_PREDICT_INLINE)
		return pollflag ? &loop_predict : &loop_predict_noflag;
	return &loop_any;
}

/* Times the poll loop's body (flag load, PAUSE, count) with the clock read taken out. */
static uint64_t calibrate_poll_iteration(void)
{
	struct cpu *c = this_cpu();
	unsigned n = 0;
	uint64_t t0 = rdtsc();

	while (!(flags_load(c) & CPU_NEED_RESCHED) && ++n < POLL_CALIBRATE_N)
		cpu_relax();
	return (rdtsc() - t0) / POLL_CALIBRATE_N;
}

void idle_setup(void)
{
	const struct cpu_features *f = &cpu_features;
	struct idle_env env = {
	    .kvm = f->kvm,
	    .realtime_hint = f->kvm && (f->kvm_hints >> KVM_HINTS_REALTIME) & 1,
	    .force = knob(KNOB_haltpoll_force),
	    .pollctl = kvm_has(KVM_FEATURE_POLL_CONTROL),
	};

	policy = idle_policy_choose((int)knob(KNOB_idle), &env, &policy_reason);
	timeline_reflect_source(idle_window_ns);
	msr_value = hostpoll_msr_value((int)knob(KNOB_hostpoll), policy, &env);
	pollflag = knob(KNOB_pollflag);
	latency_req_zero = knob(KNOB_latency_req_zero);
	/* With hz=0 there is no tick length; the W=0 fallback then uses a 250 Hz tick. */
	tick_nsec = haltpoll_tick_nsec(timer_hz() ? timer_hz() : 250);
	hp = (struct haltpoll_params){
	    .guest_halt_poll_ns = (uint32_t)knob(KNOB_guest_halt_poll_ns),
	    .grow = (uint32_t)knob(KNOB_guest_halt_poll_grow),
	    .shrink = (uint32_t)knob(KNOB_guest_halt_poll_shrink),
	    .grow_start = (uint32_t)knob(KNOB_guest_halt_poll_grow_start),
	    .allow_shrink = knob(KNOB_guest_halt_poll_allow_shrink),
	    .legacy_shrink = knob(KNOB_haltpoll_legacy_shrink),
	};
	gov = idle_governors[knob(KNOB_governor)];
	gov_how = gov == &gov_haltpoll	? GOV_HALTPOLL_INLINE
		  : gov == &gov_predict ? GOV_PREDICT_INLINE
					: GOV_BY_TABLE;
	poll_iter_cycles = calibrate_poll_iteration();
	steal_time = kvm_has(KVM_FEATURE_STEAL_TIME);
	steal_threshold = (uint32_t)knob(KNOB_steal_threshold);
	if (steal_threshold && !steal_time)
		printk("idlelab: haltpoll.steal_threshold=%u has no effect: the host offers no "
		       "kvm-steal-time",
		       steal_threshold);
	if (msr_value < 0 && idle_policy_polls(policy))
		printk("idlelab: the host does not offer MSR_KVM_POLL_CONTROL; guest and host "
		       "may both poll");
	loop_chosen = choose_idle_loop(); /* last: it reads every knob above */
	idle_until_work = loop_chosen->fn;
}

/* The value every CPU read back from MSR_KVM_POLL_CONTROL, not the one it meant to write. */
static const char *msr_record_value(void)
{
	static const char *const names[] = {"0", "1"};

	if (msr_value < 0)
		return "none";
	for (unsigned i = 1; i < ncpus; i++)
		if (msr_read_back[i] != msr_read_back[0])
			return "mixed";
	return names[msr_read_back[0] & 1];
}

void idle_print_record(void)
{
	printk(
	    "@idlelab idle policy=%s governor=%s reason=%s pollflag=%d hostpoll=%s msr=%s "
	    "poll_iter_ns=%lu poll_check_every=%u tick_nsec=%lu steal_time=%s steal_threshold=%u "
	    "loop=%s",
	    knob_defs[KNOB_idle].choices[policy], gov->name, policy_reason, pollflag,
	    knob_defs[KNOB_hostpoll].choices[knob(KNOB_hostpoll)], msr_record_value(),
	    tsc_to_ns(poll_iter_cycles), check_every(ns_to_tsc(hp.guest_halt_poll_ns)), tick_nsec,
	    steal_time ? "kvm" : "none", steal_threshold, loop_chosen->name);
}

void idle_init_cpu(void)
{
	struct cpu *c = this_cpu();

	gov->enable(&c->gov);
	if (steal_time)
		kvm_steal_time_enable(c->id);
	if (msr_value < 0)
		return;
	msr_read_back[c->id] = kvm_poll_control_set(msr_value);
	if (msr_read_back[c->id] != msr_value)
		panic("MSR_KVM_POLL_CONTROL did not keep the value %d", msr_value);
}

const char *idle_policy_name(void)
{
	return knob_defs[KNOB_idle].choices[policy];
}

uint64_t idle_window_ns(const struct cpu *c)
{
	return policy == IDLE_HALTPOLL ? gov->window_ns(&c->gov) : 0;
}
