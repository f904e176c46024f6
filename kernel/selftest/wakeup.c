/*
 * selftest=wakeup: cross-CPU wake-ups fired at random moments relative to the target's
 * poll window, so that wakes land while it polls, as its window expires, while it clears
 * POLLING, and while it halts. None may be lost (docs/haltpoll-spec.md §3.5 I1).
 *
 * Targets live on the lower half of the CPUs, wakers on the upper half; every waker picks
 * a target at random, so with several wakers two can race on one target's flag word. A
 * waker spins (it never halts, so only the target idles) for a delay drawn either across
 * [0, 2 * guest_halt_poll_ns] or within 2 us of the target's current window, then wakes it
 * and spins until the target acknowledges. A wake-up whose measured latency exceeds
 * selftest.wakeup_bound fails the run (late), and one not acknowledged within 50 bounds is
 * lost; both are reported with the target CPU's flags and state, and with what the host
 * needs to tell its own delays from the guest's (the host's verdict, tools/idlelab/
 * attribution.py, calls a late wake-up that the vCPUs' measured waits cover late_host).
 */
#include "arch/x86/cpu.h"
#include "arch/x86/kvm.h"
#include "arch/x86/tsc.h"
#include "lib/histogram.h"
#include "kernel/idle.h"
#include "kernel/knobs/knobs.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/selftest/selftest.h"
#include "kernel/stats.h"
#include "kernel/watchdog.h"
#include "kernel/window.h"
#include "lib/prng.h"

#define NEAR_WINDOW_NS 2000

struct target {
	struct thread *thread;
	unsigned cpu;
	uint64_t sent; /* wake tickets issued */
	uint64_t done; /* highest ticket the target has seen */
	bool stop;
} __attribute__((aligned(CACHELINE)));

static struct target targets[MAX_CPUS];
static unsigned ntargets, nwakers;
static struct hist latency[MAX_CPUS];
static uint64_t lost, late, fired;
static struct join_counter wakers_done, targets_done;
static struct stats_snapshot snap_a, snap_b;

static void target_thread(void *arg)
{
	struct target *t = arg;

	for (;;) {
		uint64_t s = __atomic_load_n(&t->sent, __ATOMIC_ACQUIRE);

		if (s != __atomic_load_n(&t->done, __ATOMIC_RELAXED)) {
			__atomic_store_n(&t->done, s, __ATOMIC_RELEASE);
			continue;
		}
		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
			break;
		thread_block();
	}
	join_done(&targets_done);
}

static void spin_ns(uint64_t ns)
{
	uint64_t t0 = rdtsc();

	while (tsc_to_ns(rdtsc() - t0) < ns)
		cpu_relax();
}

static uint64_t pick_delay(struct prng *rng, const struct target *t)
{
	uint64_t gmax = (uint64_t)knob(KNOB_guest_halt_poll_ns);
	uint64_t w = idle_window_ns(&cpus[t->cpu]);

	if (prng_next(rng) & 1)
		return prng_range(rng, 0, 2 * gmax);
	return prng_range(rng, w > NEAR_WINDOW_NS ? w - NEAR_WINDOW_NS : 0, w + NEAR_WINDOW_NS);
}

/*
 * What the target CPU is doing, for the report of a wake-up still unseen after the bound
 * (what=late_wakeup) or given up (what=lost_wakeup). t0_ns (the TSC clock of the window
 * markers) and the two CPUs let the host attribute the time to its own scheduling of the
 * vCPUs (tools/idlelab/derive/records.py).
 */
static void report_unseen(const char *what, const struct target *t, uint64_t ticket, uint64_t t0,
			  uint64_t waited_ns)
{
	const struct cpu *c = &cpus[t->cpu];

	printk("@idlelab error what=%s target_cpu=%u waker_cpu=%u ticket=%lu t0_ns=%lu "
	       "flags=0x%x waited_ns=%lu in_idle_state=%d polling=%d ipi_received=%lu hlt=%lu",
	       what, t->cpu, this_cpu()->id, ticket, tsc_to_ns(t0),
	       __atomic_load_n(&c->flags, __ATOMIC_RELAXED), waited_ns, c->idle_since != 0,
	       c->idle_polling, c->stats.ipi_received, c->stats.hlt);
}

/*
 * Fires one wake at t and waits for it to be seen. The verdict comes from the latency
 * measured at the end, from before thread_wake() to the moment the acknowledgement is seen,
 * wherever the time went: a waker stalled inside thread_wake (its vCPU descheduled by the
 * host while it held the target's run-queue lock) sees the acknowledgement at its first
 * look, yet the wake-up was late all the same. While waiting, the waker reports a wake-up
 * still unseen after the bound (with the target's state, for the diagnosis), and gives up
 * after LOST_AFTER_BOUNDS bounds. Returns false if it was never seen.
 */
#define LOST_AFTER_BOUNDS 50
static bool fire(struct target *t, struct hist *h, uint64_t bound_ns)
{
	unsigned me = this_cpu()->id;
	uint64_t steal0 = kvm_steal_ns(t->cpu), wsteal0 = kvm_steal_ns(me);
	uint64_t t0 = rdtsc(), my = __atomic_add_fetch(&t->sent, 1, __ATOMIC_ACQ_REL), lat;
	bool reported = false;

	thread_wake(t->thread);
	while (__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) < my) {
		uint64_t el = tsc_to_ns(rdtsc() - t0);

		if (el > bound_ns && !reported) {
			report_unseen("late_wakeup", t, my, t0, el);
			reported = true;
		}
		if (el > LOST_AFTER_BOUNDS * bound_ns) {
			report_unseen("lost_wakeup", t, my, t0, el);
			return false;
		}
		cpu_relax();
	}
	lat = tsc_to_ns(rdtsc() - t0);
	if (lat > bound_ns) {
		__atomic_fetch_add(&late, 1, __ATOMIC_RELAXED);
		/* steal: what KVM says each vCPU waited, runnable, over the wake (0 without
		 * kvm-steal-time); the host adds what it measured (attribution.py) */
		printk("@idlelab error what=late_wakeup_seen target_cpu=%u waker_cpu=%u "
		       "ticket=%lu t0_ns=%lu after_ns=%lu bound_ns=%lu steal_ns=%lu "
		       "waker_steal_ns=%lu",
		       t->cpu, me, my, tsc_to_ns(t0), lat, bound_ns, kvm_steal_ns(t->cpu) - steal0,
		       kvm_steal_ns(me) - wsteal0);
	}
	hist_record(h, lat);
	return true;
}

static void waker_thread(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t n = (uint64_t)knob(KNOB_iters) / nwakers + (me < knob(KNOB_iters) % nwakers);
	uint64_t bound = (uint64_t)knob(KNOB_wakeup_bound);
	struct hist *h = &latency[me];
	struct prng rng;

	prng_seed(&rng, 0xa11ce + me);
	hist_init(h);
	for (uint64_t i = 0; i < n; i++) {
		struct target *t = &targets[prng_next(&rng) % ntargets];

		spin_ns(pick_delay(&rng, t));
		__atomic_fetch_add(&fired, 1, __ATOMIC_RELAXED);
		if (!fire(t, h, bound)) {
			__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
			break; /* the target may be wedged: do not pile more on it */
		}
	}
	join_done(&wakers_done);
}

static void start_threads(void)
{
	join_init(&targets_done, ntargets);
	join_init(&wakers_done, nwakers);
	for (unsigned i = 0; i < ntargets; i++) {
		targets[i] = (struct target){.cpu = i};
		targets[i].thread = thread_create(target_thread, &targets[i], i, "target");
	}
	for (unsigned i = 0; i < nwakers; i++)
		if (!thread_create(waker_thread, (void *)(uintptr_t)i, ntargets + i, "waker"))
			panic("selftest: out of threads");
}

static void stop_targets(void)
{
	for (unsigned i = 0; i < ntargets; i++) {
		__atomic_store_n(&targets[i].stop, true, __ATOMIC_RELEASE);
		thread_wake(targets[i].thread);
	}
	join_wait(&targets_done);
}

bool selftest_wakeup(void)
{
	struct hist all;
	uint64_t sent, avoided, received, hits;
	bool ok;

	if (ncpus < 2) {
		printk("@idlelab selftest name=wakeup error=\"needs at least 2 CPUs\"");
		return false;
	}
	ntargets = ncpus / 2;
	nwakers = ncpus - ntargets;
	lost = late = fired = 0;
	watchdog_progress(&fired); /* watchdog= bounds a silence, not the run: 10^7 take an hour */
	window_open(&snap_a, "wakeup", 1);
	start_threads();
	join_wait(&wakers_done);
	if (!lost) /* a wedged target might never answer the stop request */
		stop_targets();
	window_close(&snap_b, "wakeup", 1, NULL);
	watchdog_progress(0);
	hist_init(&all);
	for (unsigned i = 0; i < nwakers; i++)
		hist_merge(&all, &latency[i]);
	sent =
	    stats_sum(&snap_b, STATS_FIELD(ipi_sent)) - stats_sum(&snap_a, STATS_FIELD(ipi_sent));
	avoided = stats_sum(&snap_b, STATS_FIELD(ipi_avoided)) -
		  stats_sum(&snap_a, STATS_FIELD(ipi_avoided));
	received = stats_sum(&snap_b, STATS_FIELD(ipi_received)) -
		   stats_sum(&snap_a, STATS_FIELD(ipi_received));
	hits =
	    stats_sum(&snap_b, STATS_FIELD(poll_hits)) - stats_sum(&snap_a, STATS_FIELD(poll_hits));
	ok = lost == 0 && late == 0 && fired == (uint64_t)knob(KNOB_iters);
	printk("@idlelab selftest name=wakeup ok=%d wakeups=%lu lost=%lu late=%lu targets=%u "
	       "wakers=%u "
	       "ipi_sent=%lu ipi_avoided=%lu ipi_received=%lu poll_hits=%lu lat_p50_ns=%lu "
	       "lat_p99_ns=%lu lat_max_ns=%lu bound_ns=%ld",
	       ok, fired, lost, late, ntargets, nwakers, sent, avoided, received, hits,
	       hist_percentile(&all, 5000), hist_percentile(&all, 9900), hist_max(&all),
	       knob(KNOB_wakeup_bound));
	stats_print_delta(&snap_a, &snap_b);
	return ok;
}
