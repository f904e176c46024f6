/*
 * workload=pingpong: pairs of threads on two CPUs hand a token back and forth through the
 * scheduler's cross-CPU wake-up; a request/response, the shape seeds 000 and 002 measured.
 * The initiator times each round trip; think= makes it sleep between them.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/probe.h"
#include "arch/x86/tsc.h"
#include "kernel/idle.h"
#include "kernel/knobs/knobs.h"
#include "kernel/workloads/pingpong_iters.h"
#include "kernel/workloads/wake_phases.h"
#include "kernel/printk.h"
#include "kernel/tsc_sync.h"
#include "kernel/workloads/workload.h"
#include "lib/format.h"

/*
 * ping is set by the ping thread itself before its first hand-over, never by the creator:
 * thread_create() starts a thread at once, so ping can hand the token over, and pong hand it
 * back, before the creator's own store of ping's handle would land (a vCPU preempted there
 * by the host made pong wake a null thread and the pair hang). The release store of the
 * turn publishes ping to pong, whose acquire load of the turn comes before its read.
 */
struct pair {
	struct thread *ping, *pong;
	unsigned turn; /* 1: pong's move, 0: ping's */
	unsigned slot;
	uint64_t woke_at; /* TSC of the last hand-over's wake (by either side) */
} __attribute__((aligned(CACHELINE)));

static struct pair pairs[MAX_CPUS / 2];
static unsigned npairs;
static uint64_t iters; /* 0: run for duration= */
static bool spin_mode; /* pingpong.mode=spin: the floor, no scheduler at all */
static bool cross_cpu; /* the boot's TSC check: the two CPUs' stamps can be subtracted */

/*
 * The wake-up path, phase by phase, per pair. A hand-over starts at the waker's stamp and
 * ends when the woken thread runs; on the target CPU it splits into: going idle (the target
 * was still on its own way into the idle loop when the wake came: from the wake to its idle
 * entry; 0 if it was idle already), notice (the wake reaching the idle CPU: IPI and halt
 * exit, or the poll loop seeing the flag), and run (that CPU's own path back into the
 * thread: governor, schedule, switch). A target that never idled (it had not blocked yet)
 * has no notice; it counts in `busy`. kernel/workloads/wake_phases.h splits the stamps; the
 * phases that start at the waker's stamp are another CPU's time, recorded only where the
 * boot found the TSCs in agreement (cross_cpu).
 */
static struct wakepath {
	struct hist going_idle, to_notice, to_run, total;
	uint64_t sampled;
	uint64_t busy;
	uint64_t seen[2]; /* hand-overs in the window, sampled or not: to pong, to ping */
} wakepaths[MAX_CPUS / 2];

/*
 * One hand-over in WAKEPATH_SAMPLE_EVERY is broken down: recording four histograms on every
 * one would add their cost (about half the floor's instructions) to the path it measures.
 * Each direction (ping to pong, pong to ping) is counted and sampled on its own: the two
 * alternate, so one count of both would sample one direction only, and they differ (ping
 * also times the round trip).
 */
#define WAKEPATH_SAMPLE_EVERY 8

/* since: the woken thread's own stamp from when it last ran, on this CPU. */
static __attribute__((noinline)) void record_sample(struct wakepath *w, uint64_t woke,
						    uint64_t since, uint64_t running)
{
	const struct cpu *c = this_cpu();
	struct wake_stamps st = {.woke = woke,
				 .since = since,
				 .entered = c->idle_entered,
				 .notice = c->idle_notice,
				 .running = running};
	struct wake_phases ph;

	wake_phases_split(&st, cross_cpu, &ph);
	w->sampled++;
	if (cross_cpu)
		hist_record(&w->total, tsc_to_ns(ph.total));
	if (spin_mode)
		return;
	if (!ph.idled) {
		w->busy++;
		return;
	}
	if (cross_cpu) {
		hist_record(&w->going_idle, tsc_to_ns(ph.going_idle));
		hist_record(&w->to_notice, tsc_to_ns(ph.notice));
	}
	hist_record(&w->to_run, tsc_to_ns(ph.run));
}

/* The test is all that the hand-overs not sampled pay. */
static inline void record_hand_over(struct pair *p, unsigned to_ping, uint64_t woke, uint64_t since,
				    uint64_t running)
{
	struct wakepath *w = &wakepaths[p->slot];

	if (wl_phase() == WL_MEASURE && w->seen[to_ping]++ % WAKEPATH_SAMPLE_EVERY == 0)
		record_sample(w, woke, since, running);
}

/*
 * The threads' bodies take the mode (spin_mode) as the constant `spin`: each mode gets a
 * copy of its own with the tests folded away, so neither path pays for the other's.
 */
#define PINGPONG_BODY static inline __attribute__((always_inline))

/* Waits for `want` in p->turn: blocking (the path under test) or spinning (the floor). */
PINGPONG_BODY bool wait_turn(struct pair *p, unsigned want, bool spin)
{
	while (__atomic_load_n(&p->turn, __ATOMIC_ACQUIRE) != want) {
		if (wl_phase() == WL_STOP)
			return false;
		if (spin)
			sched_preempt_point(); /* the window's controller may be due here */
		else
			thread_block();
	}
	return true;
}

/* Passes the turn to the partner; the stamps bracket what the waker's side costs. */
PINGPONG_BODY void hand_over(struct pair *p, unsigned turn, struct thread *partner, uint64_t now,
			     bool spin)
{
	p->woke_at = now;
	probe_mark(PROBE_WAKE_BEGIN);
	__atomic_store_n(&p->turn, turn, __ATOMIC_RELEASE);
	if (!spin)
		thread_wake(partner);
	probe_mark(PROBE_WAKE_END);
}

PINGPONG_BODY void pong_body(struct pair *p, bool spin)
{
	uint64_t last = 0;

	while (wait_turn(p, 1, spin)) {
		uint64_t now = rdtsc();

		probe_mark(PROBE_RUNNING);
		record_hand_over(p, 0, p->woke_at, last, now);
		hand_over(p, 0, p->ping, now, spin);
		last = now;
	}
	join_done(&wl.threads);
}

PINGPONG_BODY void ping_body(struct pair *p, bool spin)
{
	uint64_t think = (uint64_t)knob(KNOB_think);
	bool counted_out = false;

	p->ping = thread_self();

	while (wl_phase() != WL_STOP) {
		uint64_t t0, t1;

		if (think)
			thread_sleep_ns(think);
		t0 = rdtsc();
		hand_over(p, 1, p->pong, t0, spin);
		if (!wait_turn(p, 0, spin))
			break;
		t1 = rdtsc();
		probe_mark(PROBE_RUNNING);
		record_hand_over(p, 1, p->woke_at, t0, t1);
		if (!wl_measured(t0) || counted_out)
			continue;
		hist_record(&wl.hist[p->slot], tsc_to_ns(t1 - t0));
		if (++wl.count[p->slot] == iters) {
			counted_out = true; /* enough: keep the partner busy until everyone is */
			join_done(&wl.measured);
		}
	}
	if (!spin)
		thread_wake(p->pong); /* it may be blocked waiting for a turn that will not come */
	join_done(&wl.threads);
}

static void pong_thread(void *arg)
{
	if (spin_mode)
		pong_body(arg, true);
	else
		pong_body(arg, false);
}

static void ping_thread(void *arg)
{
	if (spin_mode)
		ping_body(arg, true);
	else
		ping_body(arg, false);
}

static int pingpong_start(void)
{
	npairs = (unsigned)knob(KNOB_pairs);
	if (2 * npairs > wl.ncpus) {
		printk("@idlelab error what=workload msg=\"pingpong: pairs=%u needs %u CPUs, "
		       "cpus= gives %u\"",
		       npairs, 2 * npairs, wl.ncpus);
		return -1;
	}
	iters = pingpong_iters(knob_given(KNOB_iters), knob(KNOB_iters), knob(KNOB_bench));
	spin_mode = knob(KNOB_pingpong_mode) == PINGPONG_SPIN;
	cross_cpu = tsc_sync.agree;
	wl.by_count = iters != 0;
	join_init(&wl.threads, 2 * npairs);
	join_init(&wl.measured, npairs);
	for (unsigned k = 0; k < npairs; k++) {
		struct pair *p = &pairs[k];

		*p = (struct pair){.slot = k};
		wakepaths[k] = (struct wakepath){0};
		hist_init(&wakepaths[k].going_idle);
		hist_init(&wakepaths[k].to_notice);
		hist_init(&wakepaths[k].to_run);
		hist_init(&wakepaths[k].total);
		p->pong = thread_create(pong_thread, p, wl.cpu[2 * k + 1], "pong");
		if (!p->pong || !thread_create(ping_thread, p, wl.cpu[2 * k], "ping"))
			panic("pingpong: out of threads");
	}
	return (int)(2 * npairs);
}

static const uint32_t percentiles[] = {5000, 9000, 9900};

/* " NAME_pP_ns=V" for the first n of percentiles[]; V is `na` where the phase is not known. */
static void phase_fields(char *buf, size_t size, const char *name, const struct hist *h, unsigned n,
			 bool known)
{
	int len = 0;

	for (unsigned i = 0; i < n && len < (int)size; i++) {
		if (known)
			len += snprintf(buf + len, size - (size_t)len, " %s_p%u_ns=%lu", name,
					percentiles[i] / 100, hist_percentile(h, percentiles[i]));
		else
			len += snprintf(buf + len, size - (size_t)len, " %s_p%u_ns=na", name,
					percentiles[i] / 100);
	}
}

/* `@idlelab wakepath`: one hand-over (half a round trip), phase by phase, all pairs. */
static void print_wakepath(void)
{
	/* 7.7 KiB each: off the 16 KiB thread stack. */
	static struct hist going, notice, run, total;
	char phases[4][128];
	uint64_t busy = 0, sampled = 0;

	hist_init(&going);
	hist_init(&notice);
	hist_init(&run);
	hist_init(&total);
	for (unsigned k = 0; k < npairs; k++) {
		hist_merge(&going, &wakepaths[k].going_idle);
		hist_merge(&notice, &wakepaths[k].to_notice);
		hist_merge(&run, &wakepaths[k].to_run);
		hist_merge(&total, &wakepaths[k].total);
		busy += wakepaths[k].busy;
		sampled += wakepaths[k].sampled;
	}
	phase_fields(phases[0], sizeof(phases[0]), "total", &total, 3, cross_cpu);
	phase_fields(phases[1], sizeof(phases[1]), "going_idle", &going, 2, cross_cpu);
	phase_fields(phases[2], sizeof(phases[2]), "notice", &notice, 3, cross_cpu);
	phase_fields(phases[3], sizeof(phases[3]), "run", &run, 3, true);
	printk("@idlelab wakepath mode=%s idle=%s sampled=%lu every=%u busy=%lu%s%s%s%s",
	       knob_defs[KNOB_pingpong_mode].choices[knob(KNOB_pingpong_mode)], wl.idle_policy,
	       sampled, WAKEPATH_SAMPLE_EVERY, busy, phases[0], phases[1], phases[2], phases[3]);
}

static bool pingpong_report(uint64_t window_ns)
{
	struct hist rtt;
	uint64_t n = wl_total(npairs);
	bool ok = !iters || n == iters * npairs;

	wl_merge(&rtt, npairs);
	printk("@idlelab result workload=pingpong ok=%d pairs=%u iters=%lu window_ns=%lu "
	       "rtt_p50_ns=%lu rtt_p90_ns=%lu rtt_p99_ns=%lu rtt_max_ns=%lu rt_per_s=%lu "
	       "think_ns=%ld mode=%s",
	       ok, npairs, n, window_ns, hist_percentile(&rtt, 5000), hist_percentile(&rtt, 9000),
	       hist_percentile(&rtt, 9900), hist_max(&rtt),
	       window_ns ? n * (uint64_t)1000000000 / window_ns : 0, knob(KNOB_think),
	       knob_defs[KNOB_pingpong_mode].choices[knob(KNOB_pingpong_mode)]);
	print_wakepath();
	return ok;
}

static void pingpong_reset(void)
{
	for (unsigned k = 0; k < npairs; k++) {
		struct wakepath *w = &wakepaths[k];

		hist_init(&w->going_idle);
		hist_init(&w->to_notice);
		hist_init(&w->to_run);
		hist_init(&w->total);
		w->sampled = w->busy = w->seen[0] = w->seen[1] = 0;
	}
}

const struct workload_ops wl_pingpong = {
    .start = pingpong_start, .report = pingpong_report, .reset = pingpong_reset};
