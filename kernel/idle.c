/*
 * The idle loop and its two states: a bounded poll and a halt. idle=halt only halts,
 * idle=poll only polls (without a bound), idle=haltpoll lets the governor choose before
 * every entry (cpuidle.governor=, haltpoll by default), as Linux's cpuidle-haltpoll does;
 * the sequence of that choice is kernel/policy/idle_entry.h, and this file gives it the
 * states. The setup and the `idle` record are kernel/idle_setup.c.
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
 *      and POLLING is set only inside poll_start(), after which every poll_wait()
 *      iteration tests NEED_RESCHED (I5: it is re-tested within one loop iteration).
 *   I4 the flag word is changed only with atomic read-modify-writes, here and in sched.c.
 *   R2 POLLING is clear whenever this CPU runs anything but its idle states: poll_end()
 *      clears it before the poll state returns, and only idle_until_work() polls.
 * tests/model/pollflag.pml checks these with spin.
 *
 * The NEED_RESCHED test before HLT runs with interrupts off and safe_halt() enables them
 * with `sti; hlt`: STI's one-instruction shadow makes an IPI already pending end the HLT
 * rather than be serviced before it.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/kvm.h"
#include "arch/x86/probe.h"
#include "arch/x86/tsc.h"
#include "kernel/idle.h"
#include "kernel/idle_config.h"
#include "kernel/percpu.h"
#include "kernel/policy/haltpoll.h"
#include "kernel/policy/idle_entry.h"
#include "kernel/policy/idle_policy.h"
#include "kernel/policy/predict.h"
#include "kernel/policy/steal_gate.h"
#include "kernel/static_branch.h"
#include "kernel/timeline.h"
#include "kernel/timer.h"

#define NO_LIMIT UINT64_MAX

static uint32_t flags_load(const struct cpu *c)
{
	return __atomic_load_n(&c->flags, __ATOMIC_SEQ_CST);
}

static bool work_pending(const struct cpu *c)
{
	return flags_load(c) & CPU_NEED_RESCHED;
}

/*
 * The idle state in progress and the counters that describe finished ones change together
 * under an even/odd sequence count, so a remote snapshot (kernel/stats.c) sees them
 * consistent (hlt = halts - halts_aborted at every instant) and can credit time not yet
 * ended. x86 keeps stores in order, so compiler barriers are all the count needs. Between
 * seq_open and seq_close: plain updates only. A poll's start, which changes no counter,
 * orders its two stores instead (poll_start).
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

/* The poll limit in cycles and how often to read the clock for it, cached per CPU: the
 * window rarely changes, and the conversion and divisions would be paid on every entry. */
static __attribute__((noinline)) void poll_replan(struct cpu *c, uint64_t limit_ns)
{
	c->poll_plan_ns = limit_ns;
	c->poll_plan_cycles = limit_ns == NO_LIMIT ? NO_LIMIT : ns_to_tsc(limit_ns);
	c->poll_plan_every = idle_poll_check_every(c->poll_plan_cycles);
}

/*
 * The poll state and the governed entry's small callbacks are inline in the idle loop, so
 * that its common entries (idle=poll; the default governor's poll that finds work) call
 * nothing: where guest ring 0 is emulated a call with its return costs what ten ALU
 * operations or more do (docs/platform-notes.md). poll_end's `work` and `immediate` are
 * constants at each of its calls, so each way out of the poll state is straight code.
 */
#define ON_ENTRY_PATH static inline __attribute__((always_inline))

/* The end of a poll: POLLING cleared, the counters; the poll's length in cycles. */
ON_ENTRY_PATH uint64_t poll_end(struct cpu *c, bool work, bool immediate, uint64_t limit)
{
	uint64_t now, elapsed;

	irq_disable();
	if (!static_branch_on(BRANCH_POLLFLAG_OFF))
		__atomic_fetch_and(&c->flags, ~CPU_POLLING, __ATOMIC_SEQ_CST);
	now = rdtsc();
	probe_mark(PROBE_NOTICE);
	timeline_rec_at(TL_IDLE_END, work ? TL_END_WORK : 0, now);
	elapsed = now - c->idle_entered;
	if (work)
		c->idle_notice = now;
	seq_open(c);
	c->idle_since = 0;
	c->stats.poll_cycles += elapsed; /* (idle_entries, poll_entries: kernel/stats.c) */
	if (immediate) {
		c->stats.poll_immediate++;
	} else if (work) {
		c->stats.poll_hits++;
	} else {
		uint64_t over = elapsed - limit;

		c->stats.poll_expired++;
		c->stats.poll_overshoot_cycles += over;
		if (over > c->stats.poll_overshoot_max_cycles)
			c->stats.poll_overshoot_max_cycles = over;
	}
	seq_close(c);
	return elapsed;
}

/*
 * The poll state's start. Entered with interrupts off; polls with them on. Sets POLLING and
 * tests NEED_RESCHED (Linux's current_set_polling_and_test()): the locked OR is a full
 * barrier, so the test sees any wake whose RMW came before it, and a wake after it saw
 * POLLING and is found by poll_wait. If work was there the poll ends at once (true, *ns its
 * length), and, as in Linux's poll_idle(), no limit is asked: asking may store haltpoll's
 * W = 0 fallback into the window.
 */
ON_ENTRY_PATH bool poll_start(void *cpu, uint64_t *ns)
{
	struct cpu *c = cpu;
	uint64_t t0 = rdtsc();

	/* No counter changes here, so no sequence count: polling is stored before since, and a
	 * reader (kernel/stats.c), which loads since before polling, that sees this since
	 * sees this polling too (x86 keeps stores, and loads, in order). */
	c->idle_polling = true;
	barrier();
	c->idle_since = c->idle_entered = t0;
	timeline_rec_at(TL_POLL, 0, t0);
	irq_enable();
	if (!static_branch_on(BRANCH_POLLFLAG_OFF))
		__atomic_fetch_or(&c->flags, CPU_POLLING, __ATOMIC_SEQ_CST);
	if (!work_pending(c))
		return false;
	probe_mark(PROBE_IDLE_WAIT);
	*ns = tsc_to_ns(poll_end(c, true, true, NO_LIMIT));
	return true;
}

/*
 * The poll state after poll_start: until NEED_RESCHED (true) or until `limit` cycles have
 * passed (false); leaves with interrupts off. The clock is read every `every` iterations:
 * Linux's fixed 201 assumes a PAUSE of tens of cycles, and under an emulating hypervisor one
 * iteration can cost microseconds (kernel/idle_setup.c: idle_poll_check_every).
 */
ON_ENTRY_PATH bool poll_until(struct cpu *c, uint64_t limit, unsigned every, uint64_t *ns)
{
	uint64_t t0 = c->idle_entered;
	unsigned n = 0;

	probe_mark(PROBE_IDLE_WAIT);
	while (!work_pending(c)) {
		cpu_relax();
		if (++n >= every) {
			n = 0;
			if (rdtsc() - t0 > limit) {
				*ns = tsc_to_ns(poll_end(c, false, false, limit));
				return false;
			}
		}
	}
	*ns = tsc_to_ns(poll_end(c, true, false, limit));
	return true;
}

/* The governed entry's poll, limited to limit_ns: its plan is cached per CPU. */
ON_ENTRY_PATH bool poll_wait(void *cpu, uint64_t limit_ns, uint64_t *ns)
{
	struct cpu *c = cpu;

	if (limit_ns != c->poll_plan_ns)
		poll_replan(c, limit_ns);
	return poll_until(c, c->poll_plan_cycles, c->poll_plan_every, ns);
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

	if (work_pending(c)) {
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

void idle_shadow_break(void)
{
	struct cpu *c = this_cpu();

	seq_open(c);
	c->stats.shadow_breaks++;
	/* In the halt state (since set, not polling) the HLT was counted as it started: it never
	 * ran, and the host saw no exit for it, so it was a halt abandoned before its HLT. */
	if (c->idle_since && !c->idle_polling) {
		c->stats.hlt--;
		c->stats.halts_aborted++;
	}
	seq_close(c);
}

/*
 * The window's quiesce barrier holds every CPU but the initiator in an interrupt handler,
 * spinning, while the host reads its counters: a CPU it caught idle would count that wait
 * as idle (its state's time runs from idle_since to its end), though it ran, and its idle
 * time would outlast the window (up to a third of it on the nested host, whose
 * acknowledgement takes ~70 ms). The wait is kept apart instead, so the snapshots leave it
 * out: while held, barrier_since stops the idle time in progress; released, the wait joins
 * barrier_*_cycles, which kernel/stats.c takes off the state's cycles. Off the idle path.
 */
bool idle_barrier_begin(uint64_t t_in)
{
	struct cpu *c = this_cpu();

	if (!c->idle_since)
		return false;
	seq_open(c);
	c->barrier_since = t_in;
	seq_close(c);
	return true;
}

void idle_barrier_end(uint64_t t_in)
{
	struct cpu *c = this_cpu();
	uint64_t waited = rdtsc() - t_in;

	seq_open(c);
	c->barrier_since = 0;
	if (c->idle_polling)
		c->stats.barrier_poll_cycles += waited;
	else
		c->stats.barrier_halt_cycles += waited;
	seq_close(c);
}

/* Each CPU's timer for a halt the governor limited; only that CPU touches its own. */
static struct timer idle_timers[MAX_CPUS];

/* The idle timer's interrupt is all it does: it ends the HLT, the idle loop goes on. */
static void idle_timer_fired(struct timer *t)
{
	(void)t;
}

/*
 * The halt state for the governed entry: a halt the governor limited (halt_limit) is ended
 * by a timer on this CPU, and is then reflected as a halt that ended without work. Only a
 * plain interrupt: the POLL-flag protocol is the same as for any halt ended by a tick.
 */
static uint64_t governed_halt(void *cpu, uint64_t limit_ns)
{
	struct cpu *c = cpu;
	struct timer *t = &idle_timers[c->id];
	uint64_t cycles;

	if (!limit_ns)
		return tsc_to_ns(halt_state(c));
	t->fn = idle_timer_fired;
	timer_arm(t, rdtsc() + ns_to_tsc(limit_ns));
	cycles = halt_state(c);
	timer_cancel(t);
	return tsc_to_ns(cycles);
}

ON_ENTRY_PATH bool governed_work(void *cpu)
{
	return work_pending(cpu);
}

/* haltpoll.steal_threshold=: while this CPU's recent steal is above the threshold it halts
 * without asking the governor (whose state stays as it was), so the host CPU goes to
 * whoever else wants it. Returns true if it did. */
static __attribute__((noinline)) bool steal_gated_halt(struct cpu *c)
{
	if (steal_gate_allows(&c->steal_gate, idle_config.steal_threshold, tsc_to_ns(rdtsc()),
			      kvm_steal_ns(c->id)))
		return false;
	c->stats.polls_suspended++;
	if (work_pending(c))
		c->stats.idle_aborted++;
	else
		halt_state(c);
	return true;
}

static inline bool steal_gate(void *cpu)
{
	return static_branch_on(BRANCH_STEAL_GATE) && steal_gated_halt(cpu);
}

ON_ENTRY_PATH void governed_aborted(void *cpu)
{
	((struct cpu *)cpu)->stats.idle_aborted++;
}

/* After every reflect: the adjustment counted, and the window it left in the timeline. */
ON_ENTRY_PATH void governed_reflected(void *cpu, enum gov_adjust a)
{
	struct cpu *c = cpu;

	if (a == GOV_ADJ_GROW)
		c->stats.window_grows++;
	else if (a == GOV_ADJ_SHRINK)
		c->stats.window_shrinks++;
	timeline_rec(TL_REFLECT, 0); /* the recorder reads the window: nothing here when off */
}

static const struct idle_entry_ops governed_states = {
    .work = governed_work,
    .gate = steal_gate,
    .poll_start = poll_start,
    .poll_wait = poll_wait,
    .halt = governed_halt,
    .aborted = governed_aborted,
    .reflected = governed_reflected,
};

/* What a governed entry reads of the knobs, for the governor `gov`. */
static inline struct idle_entry_setup entry_setup(const struct idle_governor *gov)
{
	return (struct idle_entry_setup){
	    .gov = gov,
	    .params = &idle_config.params,
	    .tick_nsec = idle_config.tick_nsec,
	    .latency_req_zero = idle_config.latency_req_zero,
	};
}

/* The governors' tables as constants here, so that their calls are direct and their
 * per-entry functions (kernel/policy/haltpoll.h, predict.h) compile into the entry: through
 * idle_config.gov instead, a round trip takes 144 more instructions under haltpoll and 52
 * more under predict (issue 45's count, as kernel/static_branch.h's). */
static const struct idle_governor haltpoll_here = HALTPOLL_GOVERNOR;
static const struct idle_governor predict_here = PREDICT_GOVERNOR;

/* predict's entry, out of line: the idle loop, with the default governor's entry inline,
 * keeps fewer registers. */
static __attribute__((noinline)) bool governed_entry_predict(struct cpu *c)
{
	struct idle_entry_setup k = entry_setup(&predict_here);

	return idle_entry_run(&governed_states, c, &k, &c->gov, &c->idle_entry);
}

/* One governed entry (kernel/policy/idle_entry.h); true if work ended it. */
static inline bool governed_entry(struct cpu *c)
{
	struct idle_entry_setup k;

	if (static_branch_on(BRANCH_GOV_PREDICT))
		return governed_entry_predict(c);
	k = entry_setup(&haltpoll_here);
	return idle_entry_run(&governed_states, c, &k, &c->gov, &c->idle_entry);
}

void idle_until_work(struct cpu *c)
{
	uint64_t ns;

	while (!work_pending(c)) {
		probe_mark(PROBE_IDLE_ENTER);
		if (static_branch_on(BRANCH_RECONFIGURE))
			idle_reconfigure_cpu(c);
		if (static_branch_on(BRANCH_IDLE_HALTPOLL)) {
			if (governed_entry(c))
				return;
		} else if (static_branch_on(BRANCH_IDLE_POLL)) {
			/* unbounded: the plan poll_replan() would give is known, no lookup */
			if (poll_start(c, &ns) || poll_until(c, NO_LIMIT, IDLE_POLL_CHECK_MAX, &ns))
				return;
		} else {
			halt_state(c);
		}
	}
}
