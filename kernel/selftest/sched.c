/*
 * selftest=sched: functional checks of the scheduler and timers, run on however many CPUs
 * the VM has. Each check prints `@idlelab selftest name=sched check=NAME ok=0|1 ...`; the
 * last record sums them up. Timing is reported, never judged, except the sleep floor
 * (a timer must never fire before its deadline, nor twice) and the tickless property (zero
 * interrupts).
 */
#include <stdarg.h>

#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "lib/histogram.h"
#include "kernel/knobs/knobs.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/selftest/selftest.h"
#include "kernel/stats.h"
#include "kernel/timer.h"
#include "lib/format.h"
#include "lib/prng.h"

#define RING_ROUNDS	 100
#define SLEEPS_PER_CPU	 25
#define SLEEP_MIN_NS	 20000
#define SLEEP_MAX_NS	 3000000
#define TICK_WINDOW_NS	 1000000000ull
#define QUIET_TIMEOUT_NS 200000000ull
#define PENDING_WAIT_NS	 20000000 /* for an already-due timer's interrupt to be requested */
#define RESCUE_NS	 50000000
#define SHADOW_TRIES	 3

static unsigned checks, failures;
/* Snapshots are a few KiB each: kept off the 16 KiB thread stacks. */
static struct stats_snapshot snap_a, snap_b, snap_start;

static void report(const char *check, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(const char *check, bool ok, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printk("@idlelab selftest name=sched check=%s ok=%d %s", check, ok, detail);
	checks++;
	if (!ok)
		failures++;
}

/* A token travels a ring of threads placed round-robin over the CPUs: with more than one
 * CPU every hand-over is a cross-CPU wake-up. */
static struct {
	struct thread *th[2 * MAX_CPUS];
	unsigned n;
	unsigned token;
	unsigned passes;
	struct join_counter join;
} ring;

static void ring_thread(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;

	for (unsigned r = 0; r < RING_ROUNDS; r++) {
		unsigned next = (me + 1) % ring.n;

		while (__atomic_load_n(&ring.token, __ATOMIC_ACQUIRE) != me)
			thread_block();
		__atomic_fetch_add(&ring.passes, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&ring.token, next, __ATOMIC_RELEASE);
		thread_wake(ring.th[next]);
	}
	join_done(&ring.join);
}

static void check_ring(void)
{
	struct stats_snapshot *before = &snap_a, *after = &snap_b;
	unsigned expect;

	ring.n = ncpus > 1 ? 2 * ncpus : 3;
	ring.token = ring.n; /* nobody's turn until every thread exists */
	ring.passes = 0;
	join_init(&ring.join, ring.n);
	stats_snapshot(before);
	for (unsigned i = 0; i < ring.n; i++) {
		ring.th[i] = thread_create(ring_thread, (void *)(uintptr_t)i, i % ncpus, "ring");
		if (!ring.th[i])
			panic("selftest: out of threads");
	}
	__atomic_store_n(&ring.token, 0, __ATOMIC_RELEASE);
	thread_wake(ring.th[0]);
	join_wait(&ring.join);
	stats_snapshot(after);
	expect = ring.n * RING_ROUNDS;
	uint64_t remote = stats_sum(after, STATS_FIELD(wakeups_remote)) -
			  stats_sum(before, STATS_FIELD(wakeups_remote));
	report("ring", ring.passes == expect && (ncpus == 1 || remote >= expect),
	       "threads=%u passes=%u expected=%u remote_wakeups=%lu", ring.n, ring.passes, expect,
	       remote);
}

/*
 * The sleep floor, checked where it could break: at the timer itself. thread_sleep_ns()
 * re-blocks until its own clock says the time is up, so timing a sleep from outside could
 * never see it return early. Instead each sleeper arms a timer directly and its callback
 * stamps the TSC: a callback before its deadline (the queue or the APIC timer firing early)
 * or a callback that runs twice for one arming (a duplicate) fails the check.
 */
struct sleep_probe {
	struct timer t; /* first member: the callback gets the probe back */
	struct thread *sleeper;
	uint64_t deadline;
	uint64_t fired_at;
	unsigned fires;
};

static struct hist late_hist[MAX_CPUS];
static struct {
	unsigned early;	     /* callbacks that ran before their deadline: must stay 0 */
	unsigned duplicates; /* callbacks that ran more than once for one arming: must stay 0 */
	uint64_t worst_early_ns;
	struct join_counter join;
} sleeps;

static void probe_fired(struct timer *t)
{
	struct sleep_probe *p = (struct sleep_probe *)t;

	p->fired_at = rdtsc();
	__atomic_fetch_add(&p->fires, 1, __ATOMIC_RELEASE);
	thread_wake(p->sleeper);
}

static void sleep_thread(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;
	struct sleep_probe p = {.t = {.fn = probe_fired}, .sleeper = thread_self()};
	struct prng rng;

	prng_seed(&rng, 0x51eef00d + cpu);
	for (int i = 0; i < SLEEPS_PER_CPU; i++) {
		uint64_t want = prng_range(&rng, SLEEP_MIN_NS, SLEEP_MAX_NS), flags;

		p.fires = 0;
		p.deadline = rdtsc() + ns_to_tsc(want);
		flags = irq_save();
		timer_arm(&p.t, p.deadline);
		irq_restore(flags);
		while (!__atomic_load_n(&p.fires, __ATOMIC_ACQUIRE))
			thread_block();
		if ((int64_t)(p.fired_at - p.deadline) < 0) {
			__atomic_fetch_add(&sleeps.early, 1, __ATOMIC_RELAXED);
			sleeps.worst_early_ns = tsc_to_ns(p.deadline - p.fired_at);
		} else {
			hist_record(&late_hist[cpu], tsc_to_ns(p.fired_at - p.deadline));
		}
	}
	/* A duplicate of the last arming would come within the longest sleep, if at all. */
	thread_sleep_ns(SLEEP_MAX_NS);
	if (__atomic_load_n(&p.fires, __ATOMIC_ACQUIRE) != 1)
		__atomic_fetch_add(&sleeps.duplicates, 1, __ATOMIC_RELAXED);
	join_done(&sleeps.join);
}

static void check_sleeps(void)
{
	struct hist all;

	join_init(&sleeps.join, ncpus);
	for (unsigned c = 0; c < ncpus; c++) {
		hist_init(&late_hist[c]);
		if (!thread_create(sleep_thread, (void *)(uintptr_t)c, c, "sleeper"))
			panic("selftest: out of threads");
	}
	join_wait(&sleeps.join);
	hist_init(&all);
	for (unsigned c = 0; c < ncpus; c++)
		hist_merge(&all, &late_hist[c]);
	report("sleep_floor", sleeps.early == 0 && sleeps.duplicates == 0,
	       "sleeps=%lu early=%u duplicates=%u worst_early_ns=%lu late_p50_ns=%lu "
	       "late_p99_ns=%lu late_max_ns=%lu",
	       hist_count(&all) + sleeps.early, sleeps.early, sleeps.duplicates,
	       sleeps.worst_early_ns, hist_percentile(&all, 5000), hist_percentile(&all, 9900),
	       hist_max(&all));
}

/* With hz=0 an idle CPU must take no timer interrupt at all; CPU 0 takes the one that ends
 * this thread's own sleep. With a tick, each CPU must at least be ticking. */
static void check_ticks(void)
{
	struct stats_snapshot *a = &snap_a, *b = &snap_b;
	unsigned hz = timer_hz();
	bool ok = true;
	char line[512];
	int len = 0;

	stats_snapshot(a);
	thread_sleep_ns(TICK_WINDOW_NS);
	stats_snapshot(b);
	for (unsigned c = 0; c < ncpus; c++) {
		uint64_t irqs = b->cpu[c].timer_irqs - a->cpu[c].timer_irqs;

		if (hz == 0)
			ok &= irqs <= (c == 0 ? 2u : 0u);
		else
			ok &= irqs >= hz / 4;
		if (len < (int)sizeof(line) - 32)
			len += snprintf(line + len, sizeof(line) - len, "%scpu%u=%lu", c ? "," : "",
					c, irqs);
	}
	report(hz ? "tick" : "tickless_idle", ok, "hz=%u window_ns=%llu timer_irqs=%s", hz,
	       TICK_WINDOW_NS, line);
}

static struct timer shadow_timer, rescue_timer;
static volatile bool shadow_fired;

static void shadow_timer_fired(struct timer *t)
{
	(void)t;
	shadow_fired = true;
}

static void rescue_timer_fired(struct timer *t)
{
	(void)t;
}

/* This CPU's counters an interrupt handler moves: read afresh each time. */
static uint64_t breaks_now(const struct cpu *c)
{
	return __atomic_load_n(&c->stats.shadow_breaks, __ATOMIC_RELAXED);
}

static uint64_t irqs_now(const struct cpu *c)
{
	return __atomic_load_n(&c->stats.timer_irqs, __ATOMIC_RELAXED) +
	       __atomic_load_n(&c->stats.ipi_received, __ATOMIC_RELAXED);
}

/*
 * An interrupt taken on safe_halt()'s HLT before the HLT ran, as a host that drops STI's
 * shadow delivers it (arch_safe_halt_shadowless gets there by an IRET with the interrupt
 * pending; a CPU takes it there, as TCG does; a host that injects only at its next VM entry
 * lets the HLT exit and wakes it at once): the interrupt entry must return past the HLT and
 * count it. A HLT that ran with its wake already handled sleeps until another interrupt (a
 * tick, an IPI, or the rescue timer, so it cannot hang), so a try passes where the CPU took
 * the due timer's interrupt and no other one before it went on. A tick may land in a try by
 * chance: a few tries, where a HLT that slept fails every one.
 */
static bool shadow_try(struct cpu *c, bool *pending, uint64_t *breaks, uint64_t *irqs)
{
	uint64_t b0 = breaks_now(c), i0 = irqs_now(c), t0;

	shadow_fired = false;
	irq_disable();
	timer_arm(&rescue_timer, rdtsc() + ns_to_tsc(RESCUE_NS));
	timer_arm(&shadow_timer, rdtsc());
	t0 = rdtsc();
	while (!(*pending = apic_irr_pending(VEC_TIMER)) &&
	       tsc_to_ns(rdtsc() - t0) < PENDING_WAIT_NS)
		cpu_relax();
	arch_safe_halt_shadowless();
	irq_disable();
	timer_cancel(&rescue_timer);
	*breaks = breaks_now(c) - b0;
	*irqs = irqs_now(c) - i0;
	irq_enable();
	return *pending && shadow_fired && *breaks <= 1 && *irqs == 1;
}

static void check_shadow_break(void)
{
	struct cpu *c = this_cpu();
	uint64_t breaks = 0, irqs = 0;
	bool pending = false, ok = false;
	unsigned tries = 0;

	shadow_timer.fn = shadow_timer_fired;
	rescue_timer.fn = rescue_timer_fired;
	while (!ok && tries < SHADOW_TRIES) {
		tries++;
		ok = shadow_try(c, &pending, &breaks, &irqs);
	}
	report("shadow_break", ok, "tries=%u pending=%d fired=%d shadow_breaks=%lu irqs=%lu", tries,
	       pending, shadow_fired, breaks, irqs);
}

/* Every reschedule IPI sent is received once the system is quiet. */
static void check_ipi_accounting(const struct stats_snapshot *start)
{
	struct stats_snapshot *now = &snap_b;
	uint64_t t0 = rdtsc(), sent, received, avoided;

	for (;;) {
		stats_snapshot(now);
		sent =
		    stats_sum(now, STATS_FIELD(ipi_sent)) - stats_sum(start, STATS_FIELD(ipi_sent));
		received = stats_sum(now, STATS_FIELD(ipi_received)) -
			   stats_sum(start, STATS_FIELD(ipi_received));
		if (sent == received || tsc_to_ns(rdtsc() - t0) > QUIET_TIMEOUT_NS)
			break;
		thread_sleep_ns(1000000);
	}
	/* The cross-CPU wake path must have run: by IPI, or (idle=poll) by the POLL flag. */
	avoided =
	    stats_sum(now, STATS_FIELD(ipi_avoided)) - stats_sum(start, STATS_FIELD(ipi_avoided));
	report("ipi_accounting", sent == received && (ncpus == 1 || sent + avoided > 0),
	       "ipi_sent=%lu ipi_received=%lu ipi_avoided=%lu", sent, received, avoided);
	stats_print_delta(start, now);
}

bool selftest_sched(void)
{
	checks = failures = 0;
	stats_snapshot(&snap_start);
	check_ring();
	check_sleeps();
	check_ticks();
	check_shadow_break();
	check_ipi_accounting(&snap_start);
	printk("@idlelab selftest name=sched cpus=%u checks=%u failed=%u", ncpus, checks, failures);
	return failures == 0;
}
