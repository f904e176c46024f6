/*
 * bench=exits: the platform's cost table, measured in the guest, in the manner of
 * kvm-unit-tests' x86/vmexit.c: a table of primitives, each timed over iters= samples and
 * reported as ns per operation (median and p90), one `@idlelab bench name=exits` record
 * each. A primitive this run cannot execute is reported as skipped, with the reason.
 *
 * Local primitives (alu ... wrmsr_pollctl, load, call, pushf) time a batch of unrolled
 * copies per sample (arch/x86/costprims.h) with interrupts off and divide by the batch size;
 * nothing is subtracted: the batch amortises the two TSC reads, whose cost
 * (empty_sample_ns, per sample, not per op) every record carries so a reader can judge.
 *
 * The cross-CPU primitives use a responder thread pinned on CPU 1 that runs its own raw
 * loop with interrupts off, in one of two modes:
 *   POLL: spins (PAUSE) on poll_req and copies it to poll_ack: poll_wake_rtt.
 *   HALT: announces the bench IPI it waits for (halting = n+1), then `sti; hlt` until the
 *         IPI handler has counted it, then answers through memory (halt_ack = n+1):
 *         ipi_send and ipi_halt_rtt. Every (re)entry into HLT bumps halt_epoch, so the
 *         sender can tell the responder stayed halted through the whole settle time.
 *   HALT_POLLED: the same, with the responder's MSR_KVM_POLL_CONTROL at 1 (the host may
 *         poll it; everywhere else the bench has it at 0 but on CPU 0 for timer_poll:
 *         host_poll()) and the IPI sent as soon as its HLT has exited: ipi_poll_rtt, the wake
 *         a host poll catches.
 * The bench IPIs use their own vector (VEC_BENCH) and handler: the scheduler's IPI
 * counters never see them.
 *
 * Reports only; on this nested KVM the figures are ~100x hardware's.
 */
#include "arch/x86/apic.h"
#include "arch/x86/apic_timer.h"
#include "arch/x86/costprims.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/kvm.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "kernel/idle.h"
#include "kernel/percpu.h"
#include "lib/histogram.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/selftest/bench.h"
#include "kernel/timer.h"
#include "lib/format.h"

#define RESPONDER_CPU 1
/* The settle time before each IPI to the halted responder: see calibrate_settle(). */
#define SETTLE_RTTS	     4
#define SETTLE_WARMUP	     32
#define SETTLE_TICK_FRACTION 4
/* ipi_poll_rtt's settle, in CPUID round trips: see setup_halt_polled() */
#define POLL_SETTLE_CPUIDS 1

enum mode {
	MODE_HALT,
	MODE_HALT_POLLED,
	MODE_POLL,
	MODE_RUN, /* spinning in guest code with interrupts on */
	MODE_EXIT
};

/* Each word written by one side only, on a cache line of its own. */
static struct {
	unsigned mode __attribute__((aligned(CACHELINE)));	 /* CPU 0 */
	uint64_t poll_req __attribute__((aligned(CACHELINE)));	 /* CPU 0 */
	uint64_t poll_ack __attribute__((aligned(CACHELINE)));	 /* responder */
	uint64_t halting __attribute__((aligned(CACHELINE)));	 /* responder */
	uint64_t halt_epoch __attribute__((aligned(CACHELINE))); /* responder */
	uint64_t halt_ack __attribute__((aligned(CACHELINE)));	 /* responder */
	uint64_t ipis __attribute__((aligned(CACHELINE)));	 /* IPI handler, CPU 1 */
	uint64_t ipis_sent;					 /* CPU 0 */
	uint64_t settle_cycles;					 /* CPU 0 */
	uint64_t poll_settle_cycles;				 /* CPU 0 */
	struct join_counter join;
} ex;

static uint64_t rmw_word __attribute__((aligned(CACHELINE)));
/* Holds its own address (set up before sampling): sample_load's chain. */
static uint64_t load_word __attribute__((aligned(CACHELINE)));
static uint64_t pollctl_value;
static struct timer bench_timer;
static uint64_t timer_fired_tsc;

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void bench_ipi_interrupt(struct trap_frame *f)
{
	(void)f;
	apic_eoi();
	__atomic_fetch_add(&ex.ipis, 1, __ATOMIC_RELEASE);
}

/*
 * MSR_KVM_POLL_CONTROL of the calling CPU (the MSR is per vCPU: each CPU writes its own).
 * The bench has it at 0, the host told not to poll, so that every halt it times sleeps in
 * the host whatever the host's halt-polling parameters and the boot's idle policy; the
 * responder has it at 1 in HALT_POLLED alone, and CPU 0 for timer_poll alone. *now: the value
 * written last.
 */
static void host_poll(bool polled, bool *now)
{
	if (!kvm_has(KVM_FEATURE_POLL_CONTROL) || polled == *now)
		return;
	kvm_poll_control_set(polled);
	*now = polled;
}

static void responder(void *arg)
{
	bool polled = true; /* not written yet: the first host_poll() writes 0 */

	(void)arg;
	irq_disable();
	for (;;) {
		unsigned m = __atomic_load_n(&ex.mode, __ATOMIC_ACQUIRE);

		host_poll(m == MODE_HALT_POLLED, &polled);
		if (m == MODE_EXIT) {
			idle_reconfigure_msr(); /* the idle policy's value again: a workload may follow */
			break;
		}
		if (m == MODE_POLL) {
			uint64_t seen = ex.poll_ack, r;

			while ((r = load(&ex.poll_req)) == seen)
				cpu_relax();
			store(&ex.poll_ack, r);
		} else if (m == MODE_RUN) {
			irq_enable(); /* the IPI is taken between two loads of the mode */
			while (__atomic_load_n(&ex.mode, __ATOMIC_ACQUIRE) == MODE_RUN)
				cpu_relax();
			irq_disable();
		} else { /* MODE_HALT, MODE_HALT_POLLED */
			uint64_t n = load(&ex.ipis);

			store(&ex.halting, n + 1);
			while (load(&ex.ipis) == n) {
				store(&ex.halt_epoch, ex.halt_epoch + 1);
				safe_halt(); /* the IPI is taken inside HLT, and wakes it */
				irq_disable();
			}
			/* the mode an IPI leaves this one for gets its MSR before the answer the
			 * sender waits for: no sample of that mode times the write */
			host_poll(__atomic_load_n(&ex.mode, __ATOMIC_ACQUIRE) == MODE_HALT_POLLED,
				  &polled);
			store(&ex.halt_ack, n + 1);
		}
	}
	irq_enable();
	join_done(&ex.join);
}

/*
 * CPU 0, called and returning with interrupts off: waits until the responder has announced
 * HLT for the next IPI and stayed there (no new entry) for a whole settle time. Returns that
 * IPI's number. Nothing here is timed, so it waits with interrupts on: the watchdog can end a
 * run whose responder never answers.
 */
static uint64_t wait_responder_halted(void)
{
	uint64_t n = ex.ipis_sent + 1, epoch;
	uint64_t settle = ex.mode == MODE_HALT_POLLED ? ex.poll_settle_cycles : ex.settle_cycles;

	irq_enable();
	while (load(&ex.halting) != n)
		;
	do {
		uint64_t t = cost_tsc();

		epoch = load(&ex.halt_epoch);
		while (cost_tsc() - t < settle)
			;
	} while (load(&ex.halt_epoch) != epoch || epoch == 0);
	irq_disable();
	return n;
}

static void send_bench_ipi(void)
{
	apic_send_ipi(cpus[RESPONDER_CPU].apic_id, VEC_BENCH);
	ex.ipis_sent++;
}

static void wait_halt_ack(uint64_t n)
{
	while (load(&ex.halt_ack) != n)
		;
}

/* Gets the responder out of the wait of its current mode and into mode m. */
static void responder_mode(enum mode m)
{
	unsigned old = ex.mode;

	irq_disable();
	if (old == MODE_HALT || old == MODE_HALT_POLLED) {
		/* The new mode only once the responder is in HLT: stored earlier, a responder
		 * between its last answer and its next announcement would read it and never
		 * announce the halt this waits for. */
		uint64_t n = wait_responder_halted();

		__atomic_store_n(&ex.mode, m, __ATOMIC_RELEASE);
		send_bench_ipi();
		wait_halt_ack(n);
	} else {
		__atomic_store_n(&ex.mode, m, __ATOMIC_RELEASE);
		if (old == MODE_POLL) {
			uint64_t r = ex.poll_req + 1;

			store(&ex.poll_req, r);
			while (load(&ex.poll_ack) != r)
				;
		} /* MODE_RUN: the responder sees the store itself */
	}
	irq_enable();
}

/* --- one sample of each primitive: TSC cycles for ops_per_sample operations, irqs off --- */

static uint64_t sample_empty(void)
{
	uint64_t t0 = cost_tsc();

	return cost_tsc() - t0;
}

#define BATCH_SAMPLE(fn_name, call)                                                                \
	static uint64_t fn_name(void)                                                              \
	{                                                                                          \
		uint64_t t0 = cost_tsc();                                                          \
		call;                                                                              \
		return cost_tsc() - t0;                                                            \
	}

BATCH_SAMPLE(sample_alu, cost_alu_batch())
BATCH_SAMPLE(sample_pause, cost_pause_batch())
BATCH_SAMPLE(sample_rdtsc, cost_rdtsc_batch())
BATCH_SAMPLE(sample_locked_rmw, cost_locked_rmw_batch(&rmw_word))
BATCH_SAMPLE(sample_cli_sti, cost_cli_sti_batch())
BATCH_SAMPLE(sample_cpuid, cost_cpuid_batch())
BATCH_SAMPLE(sample_wrmsr_pollctl, cost_pollctl_write_batch(pollctl_value))
BATCH_SAMPLE(sample_load, cost_load_batch(&load_word))
BATCH_SAMPLE(sample_call, cost_call_batch())
BATCH_SAMPLE(sample_pushf, cost_pushf_batch())
BATCH_SAMPLE(sample_eoi, cost_eoi_batch())

/* The deadline written is a second away; the one the timer had is put back after. */
static uint64_t sample_deadline(void)
{
	uint64_t was = cost_deadline_read(), t0 = cost_tsc();

	cost_deadline_batch(t0 + ns_to_tsc(1000000000));
	t0 = cost_tsc() - t0;
	cost_deadline_restore(was);
	return t0;
}

/* ICR write to the halted responder; its answer is awaited outside the timed part. */
static uint64_t sample_ipi_send(void)
{
	uint64_t n = wait_responder_halted(), t0 = cost_tsc(), dt;

	send_bench_ipi();
	dt = cost_tsc() - t0;
	wait_halt_ack(n);
	return dt;
}

/* ipi_halt_rtt's round trip; in MODE_HALT_POLLED, ipi_poll_rtt's. */
static uint64_t sample_ipi_halt_rtt(void)
{
	uint64_t n = wait_responder_halted(), t0 = cost_tsc();

	send_bench_ipi();
	wait_halt_ack(n);
	return cost_tsc() - t0;
}

/* An IPI to the responder spinning with interrupts on, until its handler's count shows: on
 * hardware with posted interrupts no exit at all, on an emulating host whatever it takes the
 * host to stop the running vCPU and inject. */
static uint64_t sample_ipi_run_rtt(void)
{
	uint64_t n = load(&ex.ipis), t0 = cost_tsc();

	send_bench_ipi();
	while (load(&ex.ipis) == n)
		;
	return cost_tsc() - t0;
}

static uint64_t sample_poll_wake_rtt(void)
{
	uint64_t r = ex.poll_req + 1, t0 = cost_tsc();

	store(&ex.poll_req, r);
	while (load(&ex.poll_ack) != r)
		;
	return cost_tsc() - t0;
}

static void timer_fired(struct timer *t)
{
	(void)t;
	store(&timer_fired_tsc, cost_tsc());
}

/* Arms an already-due timer through the timer layer, then spins with interrupts on. */
static uint64_t sample_timer(void)
{
	uint64_t t0;

	store(&timer_fired_tsc, 0);
	t0 = cost_tsc();
	timer_arm(&bench_timer, t0);
	irq_enable();
	while (!load(&timer_fired_tsc))
		;
	irq_disable();
	return load(&timer_fired_tsc) - t0;
}

/*
 * The timer as the idle path meets it: armed (already due) with interrupts off, as the
 * scheduler arms it before idling, then `sti; hlt` until its callback has run, as the idle
 * loop sleeps. On KVM the deadline write exits, and the HLT exits and finds the interrupt
 * pending (kvm-unit-tests' tscdeadline_immed): two exits, where `timer`, spinning with
 * interrupts on, takes a third for the interrupt window it opens.
 */
static uint64_t sample_timer_halt(void)
{
	uint64_t t0;

	store(&timer_fired_tsc, 0);
	t0 = cost_tsc();
	timer_arm(&bench_timer, t0);
	while (!load(&timer_fired_tsc)) {
		safe_halt(); /* the timer's interrupt is taken inside HLT, and wakes it */
		irq_disable();
	}
	return load(&timer_fired_tsc) - t0;
}

/* The sleep of timer_sleep: as long as a periodic workload's sleeps on the nested host
 * (0.2-1 ms), where a timer wakes a halted vCPU ~80 us sooner than after the idle CPU's
 * multi-millisecond sleeps (docs/notebook/2026-12-03-bar-noise-floor.md). */
#define TIMER_SLEEP_AHEAD_NS 500000
/* timer_poll's deadline: past the HLT's exit (tens of us on the nested host), inside the 500 us
 * window the cost boots give every polled halt (costtable/measuring.py), 300 us before it
 * closes. */
#define TIMER_POLL_AHEAD_NS 200000

/*
 * A deadline ahead_ns away, armed with interrupts off, then `sti; hlt` until its callback has
 * run. Returns how late the callback ran (the periodic workload's lateness).
 */
static uint64_t timer_late(uint64_t ahead_ns)
{
	uint64_t due = cost_tsc() + ns_to_tsc(ahead_ns);

	store(&timer_fired_tsc, 0);
	timer_arm(&bench_timer, due);
	while (!load(&timer_fired_tsc)) {
		safe_halt(); /* a tick may end the HLT first: sleep again */
		irq_disable();
	}
	return load(&timer_fired_tsc) - due;
}

/*
 * A sleep as a workload sleeps: a deadline TIMER_SLEEP_AHEAD_NS ahead. On KVM the host's timer
 * wakes a thread that really slept, which timer_halt's already-due deadline never lets it do,
 * and the cost table's trace prices those wakes by the length of the sleep
 * (derive/threadtrace.py).
 */
static uint64_t sample_timer_sleep(void)
{
	return timer_late(TIMER_SLEEP_AHEAD_NS);
}

/*
 * The same with the host polling the halt (this CPU's poll-control MSR at 1 for this primitive
 * alone): the deadline passes while the vCPU thread polls on its CPU, where the host's timer
 * interrupt finds the CPU busy, not idle as timer_sleep's does (on the nested host a sleeping
 * thread's timer fires ~90 us late). The simulator prices a timer that ends a host poll by it
 * (tools/sim/costs/here.txt timer_poll_slack).
 */
static uint64_t sample_timer_poll(void)
{
	return timer_late(TIMER_POLL_AHEAD_NS);
}

/*
 * A thread's sleep through the scheduler, as the periodic and random workloads sleep: its
 * own timer armed (the deadline TIMER_SLEEP_AHEAD_NS ahead, with interrupts saved, as
 * thread_sleep_ns arms), then thread_block until the timer's callback woke it. Three parts,
 * each a primitive of its own, on the guest's clock: sleep_arm, the call to the timer armed
 * (on KVM the deadline write's exit, and the guest code after it); sleep_entry, armed to the
 * idle state's start (block, schedule, the idle loop: kernel/idle.c's idle_entered); sleep_run,
 * the idle state's end (idle_notice, after the waking handler ran) to the thread running
 * again. The simulator prices a sleep's way in by the first two (tools/sim/costs/here.txt),
 * which tsc_deadline's batched writes a second ahead do not time: on the nested host arming
 * a deadline half a millisecond away costs ~30 us more (docs/notebook/2026-12-07-the-way-into-
 * idle.md); sleep_run checks that the pingpong run phase the simulator's wake_path takes
 * holds for a timer's wake too.
 * A sleep is a sample only if its CPU entered one idle state, a halt, between the two (a tick
 * that ended the halt, or an idle policy that polls first, would make the stamps another
 * state's): up to SLEEP_ATTEMPTS sleeps are tried for each sample.
 */
#define SLEEP_ATTEMPTS 8
#define NO_SAMPLE      UINT64_MAX

enum sleep_part {
	SLEEP_ARM,
	SLEEP_ENTRY,
	SLEEP_RUN
};

static struct thread *sleeper;
static struct timer sleeper_timer;

static void sleeper_woken(struct timer *t)
{
	(void)t;
	store(&timer_fired_tsc, cost_tsc());
	thread_wake(sleeper);
}

static uint64_t polls_ended(const struct cpu *c)
{
	return c->stats.poll_hits + c->stats.poll_immediate + c->stats.poll_expired;
}

static uint64_t sleep_once(enum sleep_part part)
{
	struct cpu *c = this_cpu();
	uint64_t halts = c->stats.halts, polls = polls_ended(c), called, armed, running, flags;

	sleeper = thread_self();
	store(&timer_fired_tsc, 0);
	irq_enable(); /* measure() samples with interrupts off; a thread sleeps with them on */
	called = cost_tsc();
	flags = irq_save();
	timer_arm(&sleeper_timer, called + ns_to_tsc(TIMER_SLEEP_AHEAD_NS));
	irq_restore(flags);
	armed = cost_tsc();
	while (!load(&timer_fired_tsc))
		thread_block();
	running = cost_tsc();
	irq_disable();
	if (c->stats.halts != halts + 1 || polls_ended(c) != polls || c->idle_entered < armed ||
	    c->idle_notice < c->idle_entered || c->idle_notice > running)
		return NO_SAMPLE;
	if (part == SLEEP_ARM)
		return armed - called;
	return part == SLEEP_ENTRY ? c->idle_entered - armed : running - c->idle_notice;
}

static uint64_t sample_sleep(enum sleep_part part)
{
	uint64_t cycles = NO_SAMPLE;

	for (unsigned i = 0; i < SLEEP_ATTEMPTS && cycles == NO_SAMPLE; i++)
		cycles = sleep_once(part);
	return cycles;
}

static uint64_t sample_sleep_arm(void)
{
	return sample_sleep(SLEEP_ARM);
}

static uint64_t sample_sleep_entry(void)
{
	return sample_sleep(SLEEP_ENTRY);
}

static uint64_t sample_sleep_run(void)
{
	return sample_sleep(SLEEP_RUN);
}

/*
 * sleep_cut: the lead, from a sleep's call to its deadline, under which the sleep's CPU never
 * goes idle: the deadline is due by the time the host takes its write (on KVM the write finds
 * it passed and fires it at once), and its interrupt comes before the thread blocks; with a
 * longer lead the host's timer fires it after the CPU went idle (on the nested host 100-130 us
 * late). The random workload's exponential sleeps end under it often (docs/notebook/
 * 2026-12-07-the-sleep-that-never-halts.md); the simulator wakes such a sleep without a halt
 * (tools/sim/costs/here.txt sleep_cut). The sleeps are thread_sleep_ns's own, as the workloads
 * sleep: when the interrupt is taken depends on the instructions after the write (under the
 * nested host's emulated SVM a pending interrupt waited past a plain load after
 * irq_restore: the same code or none).
 * The cut differs from sleep to sleep (the exit's own time), so each sample estimates the lead
 * at which half the sleeps idle: it brackets it by doubling the lead from CUT_START_NS until
 * most sleeps idle, then bisects the bracket in CUT_STEPS steps, each step the majority of
 * CUT_VOTES sleeps. A sleep during which another timer interrupt came (a tick) is made again,
 * up to SLEEP_ATTEMPTS times; a sample with no answer, or none under CUT_MAX_NS, is none.
 */
#define CUT_START_NS 1000
#define CUT_MAX_NS   10000000
#define CUT_STEPS    6
#define CUT_VOTES    3

/* 1: the sleep's timer woke it before its CPU went idle; 0: after; -1: no answer (a tick). */
static int sleep_never_idled(uint64_t lead_ns)
{
	struct cpu *c = this_cpu();
	uint64_t irqs = c->stats.timer_irqs;
	int taken = -1;

	irq_enable(); /* measure() samples with interrupts off; a thread sleeps with them on */
	for (unsigned i = 0; i < SLEEP_ATTEMPTS && taken < 0; i++) {
		uint64_t idled = c->stats.halts + polls_ended(c);

		thread_sleep_ns(lead_ns);
		/* no interrupt at all: the lead ran out before the timer was armed */
		if (c->stats.timer_irqs <= irqs + 1)
			taken = c->stats.halts + polls_ended(c) == idled;
		irqs = c->stats.timer_irqs;
	}
	irq_disable();
	return taken;
}

/* The majority of CUT_VOTES sleeps of `lead_ns` (-1: a sleep with no answer). */
static int most_never_idled(uint64_t lead_ns)
{
	unsigned yes = 0, no = 0;

	while (yes <= CUT_VOTES / 2 && no <= CUT_VOTES / 2) {
		int taken = sleep_never_idled(lead_ns);

		if (taken < 0)
			return -1;
		if (taken)
			yes++;
		else
			no++;
	}
	return yes > no;
}

static uint64_t sample_sleep_cut(void)
{
	uint64_t lo = 0, hi = CUT_START_NS;
	int taken;

	while ((taken = most_never_idled(hi)) != 0) {
		if (taken < 0 || hi > CUT_MAX_NS)
			return NO_SAMPLE;
		lo = hi;
		hi *= 2;
	}
	for (unsigned step = 0; step < CUT_STEPS; step++) {
		uint64_t mid = lo + (hi - lo) / 2;

		taken = most_never_idled(mid);
		if (taken < 0)
			return NO_SAMPLE;
		if (taken)
			lo = mid;
		else
			hi = mid;
	}
	return ns_to_tsc(lo + (hi - lo) / 2);
}

static struct hist h;
static uint64_t poll_p50_ps, cpuid_p50_ps;

/* Every CPU's shadow_breaks (kernel/idle.c): a primitive whose HLTs the host delivered an
 * interrupt on before they ran (a dropped STI shadow) timed no halt there, and says so. */
static uint64_t shadow_breaks_now(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < ncpus; i++)
		n += __atomic_load_n(&cpus[i].stats.shadow_breaks, __ATOMIC_RELAXED);
	return n;
}

static void measure(uint64_t (*fn)(void), unsigned ops, uint64_t iters);

static uint64_t clamp_to_tick(uint64_t c)
{
	uint64_t limit = timer_hz() ? tsc_hz / timer_hz() / SETTLE_TICK_FRACTION : UINT64_MAX;

	return c < limit ? c : limit;
}

/*
 * How long the responder must have stayed in HLT (no new entry: halt_epoch) before an IPI
 * is sent to it, derived from this run's own figures, never a fixed time:
 *   1. the guest side: from its announcement to HLT are a few instructions on CPU 1, the
 *      scale of the median memory round trip to it: SETTLE_RTTS x poll_wake_rtt p50;
 *   2. the host side: a vCPU that has executed HLT still takes time to be really asleep
 *      in the host (under TCG a short settle gave a bimodal round trip: some IPIs caught
 *      the vCPU before it slept). Going to sleep costs about what waking costs, so the
 *      settle becomes at least the p90 of SETTLE_WARMUP round trips timed with (1).
 * Capped at a quarter of a tick: a tick on CPU 1 ends its HLT and restarts the settle, so
 * a longer one might never complete.
 */
static void calibrate_settle(void)
{
	uint64_t warm;

	ex.settle_cycles = clamp_to_tick(ns_to_tsc(SETTLE_RTTS * poll_p50_ps / 1000) + 1);
	measure(sample_ipi_halt_rtt, 1, SETTLE_WARMUP);
	warm = ns_to_tsc(hist_percentile(&h, 9000) / 1000);
	if (warm > ex.settle_cycles)
		ex.settle_cycles = clamp_to_tick(warm);
}

/* --- the table --- */

static const char *need_pollctl(void)
{
	return kvm_has(KVM_FEATURE_POLL_CONTROL)
		   ? 0
		   : "CPUID 0x40000001 does not offer KVM_FEATURE_POLL_CONTROL";
}

static const char *need_two_cpus(void)
{
	return ncpus > RESPONDER_CPU ? 0 : "needs 2 CPUs: the responder runs on CPU 1";
}

static const char *need_pollctl_two_cpus(void)
{
	const char *why = need_two_cpus();

	return why ? why : need_pollctl();
}

static const char *need_x2apic(void)
{
	return apic_x2apic_mode ? 0 : "the APIC is not in x2APIC mode (EOI is MMIO)";
}

static const char *need_deadline(void)
{
	return apic_timer_deadline_mode ? 0 : "CPUID does not offer the TSC-deadline timer";
}

static void setup_pollctl(void)
{
	pollctl_value = cost_pollctl_read();
}

static void setup_load(void)
{
	load_word = (uint64_t)&load_word;
}

static void setup_poll(void)
{
	responder_mode(MODE_POLL);
}

static void setup_run(void)
{
	responder_mode(MODE_RUN);
}

static void setup_halt(void)
{
	responder_mode(MODE_HALT);
	if (!ex.settle_cycles)
		calibrate_settle();
}

/*
 * The IPI goes out once the responder's HLT has exited to the host, and within the host's
 * poll if it polls: the settle is POLL_SETTLE_CPUIDS CPUID round trips (an exit and an
 * entry each) after the responder's last announcement of HLT. The shortest: the median
 * hardly moves with a longer one, but the spread grows with the time the host has polled
 * (nested host, 2026-12-03: settles of 1, 4 and 10 round trips, p50 66-73, 66-69 and 78 us,
 * p90 99-134, 138-151 and 214-231), and what ends a long poll early, the host's other
 * tasks, is priced apart. KVM's poll window starts at 0 and grows only on halts shorter
 * than its maximum, so SETTLE_WARMUP round trips come first, untimed.
 */
static void setup_halt_polled(void)
{
	responder_mode(MODE_HALT_POLLED);
	ex.poll_settle_cycles =
	    clamp_to_tick(ns_to_tsc(POLL_SETTLE_CPUIDS * cpuid_p50_ps / 1000) + 1);
	measure(sample_ipi_halt_rtt, 1, SETTLE_WARMUP);
}

/* KVM's poll window starts at 0 and opens on the first halt: SETTLE_WARMUP sleeps come first,
 * untimed (the bench's loop has set this CPU's poll-control MSR to 1 by then). */
static void setup_timer_poll(void)
{
	measure(sample_timer_poll, 1, SETTLE_WARMUP);
}

struct prim {
	const char *name;
	uint64_t (*sample)(void);
	unsigned ops;		   /* operations per sample */
	const char *(*skip)(void); /* why it cannot run here, or 0 */
	void (*setup)(void);
	const char *extra; /* fields after the common ones (0: the timers': mode, wait) */
	bool settle;	   /* waits for the responder to settle in HLT: add settle_ns */
};

/* poll_wake_rtt runs before the IPI primitives: their settle time is derived from it. */
static const struct prim prims[] = {
    {"alu", sample_alu, COST_ALU_BATCH, 0, 0, "", false},
    {"pause", sample_pause, COST_PAUSE_BATCH, 0, 0, "", false},
    {"rdtsc", sample_rdtsc, COST_RDTSC_BATCH, 0, 0, "", false},
    {"locked_rmw", sample_locked_rmw, COST_LOCKED_RMW_BATCH, 0, 0, "", false},
    {"cli_sti", sample_cli_sti, COST_CLI_STI_BATCH, 0, 0, "", false},
    {"cpuid", sample_cpuid, COST_CPUID_BATCH, 0, 0, "leaf=0 reload_insns=1", false},
    {"wrmsr_pollctl", sample_wrmsr_pollctl, COST_WRMSR_BATCH, need_pollctl, setup_pollctl,
     "msr=0x4b564d05", false},
    {"load", sample_load, COST_LOAD_BATCH, 0, setup_load, "chain=dependent", false},
    {"call", sample_call, COST_CALL_BATCH, 0, 0, "with=ret", false},
    {"pushf", sample_pushf, COST_PUSHF_BATCH, 0, 0, "with=pop", false},
    {"eoi", sample_eoi, COST_EOI_BATCH, need_x2apic, 0, "msr=0x80b in_service=none", false},
    {"tsc_deadline", sample_deadline, COST_DEADLINE_BATCH, need_deadline, 0, "ahead_ns=1000000000",
     false},
    {"poll_wake_rtt", sample_poll_wake_rtt, 1, need_two_cpus, setup_poll,
     "target=polling answer=memory", false},
    {"ipi_send", sample_ipi_send, 1, need_two_cpus, setup_halt, "target=halted", true},
    {"ipi_halt_rtt", sample_ipi_halt_rtt, 1, need_two_cpus, setup_halt,
     "target=halted answer=memory", true},
    {"timer", sample_timer, 1, 0, 0, 0, false},
    {"timer_halt", sample_timer_halt, 1, 0, 0, 0, false},
    {"timer_sleep", sample_timer_sleep, 1, 0, 0, 0, false},
    {"sleep_arm", sample_sleep_arm, 1, 0, 0, "ahead_ns=" COST_STR(TIMER_SLEEP_AHEAD_NS), false},
    {"sleep_entry", sample_sleep_entry, 1, 0, 0, "ahead_ns=" COST_STR(TIMER_SLEEP_AHEAD_NS), false},
    {"sleep_run", sample_sleep_run, 1, 0, 0, "ahead_ns=" COST_STR(TIMER_SLEEP_AHEAD_NS), false},
    {"sleep_cut", sample_sleep_cut, 1, 0, 0, "measures=lead", false},
    {"timer_poll", sample_timer_poll, 1, need_pollctl, setup_timer_poll, 0, false},
    /* after the timers: a responder the host may poll would change their conditions */
    {"ipi_poll_rtt", sample_ipi_halt_rtt, 1, need_pollctl_two_cpus, setup_halt_polled,
     "target=halted host_poll=allowed answer=memory", true},
    /* last: the responder spinning would change the conditions of the timer's samples */
    {"ipi_run_rtt", sample_ipi_run_rtt, 1, need_two_cpus, setup_run,
     "target=running answer=handler", false},
};
#define NPRIMS (sizeof(prims) / sizeof(prims[0]))

struct result {
	const char *skipped;
	uint64_t n, p50_ps, p90_ps;
};

/* ps as ns with three decimals: "0.312", "156923.000". */
static const char *ns3(char *buf, size_t len, uint64_t ps)
{
	snprintf(buf, len, "%lu.%03lu", ps / 1000, ps % 1000);
	return buf;
}

/* iters samples of fn, each ops operations, into h as ps per operation. */
static void measure(uint64_t (*fn)(void), unsigned ops, uint64_t iters)
{
	hist_init(&h);
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t cycles;

		irq_disable();
		cycles = fn();
		irq_enable();
		if (cycles != NO_SAMPLE) /* a sample that could not be taken: n says so */
			hist_record(&h, tsc_to_ns(cycles * 1000) / ops);
	}
}

void bench_exits(void)
{
	static struct result res[NPRIMS];
	uint64_t iters = (uint64_t)knob(KNOB_iters), empty_ps, breaks;
	bool responder_up = false;
	char a[32], b[32], c[32], extra[96];
	bool polled = true; /* as in responder() */

	host_poll(false, &polled);
	irq_register(VEC_BENCH, bench_ipi_interrupt);
	bench_timer.fn = timer_fired;
	sleeper_timer.fn = sleeper_woken;
	measure(sample_empty, 1, iters);
	empty_ps = hist_percentile(&h, 5000);

	for (unsigned i = 0; i < NPRIMS; i++) {
		const struct prim *p = &prims[i];
		struct result *r = &res[i];

		r->skipped = p->skip ? p->skip() : 0;
		if (r->skipped) {
			printk("@idlelab bench name=exits prim=%s skipped=1 why=\"%s\" n=0",
			       p->name, r->skipped);
			continue;
		}
		if (p->skip == need_two_cpus || p->skip == need_pollctl_two_cpus) {
			if (!responder_up) {
				ex.mode = MODE_POLL;
				join_init(&ex.join, 1);
				if (!thread_create(responder, 0, RESPONDER_CPU, "responder"))
					panic("bench: out of threads");
				responder_up = true;
			}
		}
		/* the host may poll this CPU's halts for timer_poll alone */
		host_poll(p->sample == sample_timer_poll, &polled);
		if (p->setup)
			p->setup();
		breaks = shadow_breaks_now();
		measure(p->sample, p->ops, iters);
		breaks = shadow_breaks_now() - breaks;
		r->n = hist_count(&h);
		if (!r->n) { /* every sample refused (NO_SAMPLE): the sleeps' conditions */
			r->skipped = "no sleep entered one halt alone (an idle policy that polls "
				     "first, or a tick in every sleep)";
			printk("@idlelab bench name=exits prim=%s skipped=1 why=\"%s\" n=0",
			       p->name, r->skipped);
			continue;
		}
		r->p50_ps = hist_percentile(&h, 5000);
		r->p90_ps = hist_percentile(&h, 9000);
		if (p->sample == sample_poll_wake_rtt)
			poll_p50_ps = r->p50_ps;
		if (p->sample == sample_cpuid)
			cpuid_p50_ps = r->p50_ps;

		if (!p->extra)
			snprintf(extra, sizeof(extra), "timer=%s wait=%s%s",
				 apic_timer_deadline_mode ? "tsc_deadline" : "oneshot",
				 p->sample == sample_timer ? "spin" : "halt",
				 p->sample == sample_timer_sleep
				     ? " ahead_ns=" COST_STR(TIMER_SLEEP_AHEAD_NS) " measures=late"
				 : p->sample == sample_timer_poll
				     ? " ahead_ns=" COST_STR(
					   TIMER_POLL_AHEAD_NS) " measures=late host_poll=allowed"
				     : "");
		else if (p->settle)
			snprintf(extra, sizeof(extra), "%s settle_ns=%lu", p->extra,
				 tsc_to_ns(p->setup == setup_halt_polled ? ex.poll_settle_cycles
									 : ex.settle_cycles));
		else
			snprintf(extra, sizeof(extra), "%s", p->extra);
		printk(
		    "@idlelab bench name=exits prim=%s ns_p50=%s ns_p90=%s n=%lu ops_per_sample=%u "
		    "empty_sample_ns=%s shadow_breaks=%lu%s%s",
		    p->name, ns3(a, sizeof(a), r->p50_ps), ns3(b, sizeof(b), r->p90_ps), r->n,
		    p->ops, ns3(c, sizeof(c), empty_ps), breaks, extra[0] ? " " : "", extra);
	}
	if (responder_up) {
		responder_mode(MODE_EXIT);
		join_wait(&ex.join);
	}
	/* A workload may run next in the same boot (its cost table measured there): the host
	 * is told again what the idle policy tells it, on this CPU as on the responder's. */
	idle_reconfigure_msr();

	printk("exits: ns per operation over %lu samples; an empty sample (two TSC reads) takes "
	       "%s ns",
	       iters, ns3(a, sizeof(a), empty_ps));
	printk("  %-14s %6s %14s %14s", "primitive", "ops", "p50 ns", "p90 ns");
	for (unsigned i = 0; i < NPRIMS; i++) {
		if (res[i].skipped)
			printk("  %-14s skipped: %s", prims[i].name, res[i].skipped);
		else
			printk("  %-14s %6u %14s %14s", prims[i].name, prims[i].ops,
			       ns3(a, sizeof(a), res[i].p50_ps), ns3(b, sizeof(b), res[i].p90_ps));
	}
}
