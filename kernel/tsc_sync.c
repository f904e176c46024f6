#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kernel/percpu.h"
#include "lib/tsc_warp.h"
#include "kernel/printk.h"
#include "kernel/spinlock.h"
#include "kernel/tsc_sync.h"

/*
 * Each side reads for a share of TSC_SYNC_TOTAL_NS within [PAIR_MIN, PAIR_MAX] of its own TSC
 * time (Linux reads 2 ms per AP), then stops once each side has followed the other at least
 * ENOUGH times, or at HARD_FACTOR times its share: a vCPU whose host thread is descheduled
 * for milliseconds (a loaded host does that) can leave a share without a single comparison.
 * And at most MAX_READINGS times: under nested KVM a read of the TSC can be emulated at
 * microseconds each, and a TSC that did not advance would never end a loop bounded by time
 * alone. Fewer than EVIDENCE comparisons each way, each one a step of milliseconds on such a
 * host, prove nothing: the verdict is then 0, as for a warp.
 */
#define TSC_SYNC_TOTAL_NS     4000000ull
#define TSC_SYNC_PAIR_MIN_NS  250000ull
#define TSC_SYNC_PAIR_MAX_NS  2000000ull
#define TSC_SYNC_HARD_FACTOR  3u
#define TSC_SYNC_ENOUGH	      16u
#define TSC_SYNC_EVIDENCE     4u
#define TSC_SYNC_MAX_READINGS 20000u

struct tsc_sync_result tsc_sync = {.agree = true};
static unsigned checks, compared; /* checks run, and those with EVIDENCE */

/*
 * The sides alternate strictly (`next`), unlike Linux's free-for-all on the lock: there, a
 * side whose partner's vCPU is descheduled goes on reading after itself, comparing nothing.
 */
static struct {
	struct spinlock lock;
	struct tsc_warp w;
	uint64_t share; /* cycles each side reads for, if it has compared enough by then */
	unsigned turn;	/* the AP called for; 0: none */
	unsigned next;	/* the side whose reading is due */
	unsigned started, done;
} chk;

static bool past(uint64_t now, uint64_t end)
{
	return (int64_t)(now - end) > 0;
}

/* False once the other side has stopped, or at `end`. */
static bool wait_for_turn(unsigned side, uint64_t end)
{
	while (__atomic_load_n(&chk.next, __ATOMIC_ACQUIRE) != side) {
		if (__atomic_load_n(&chk.done, __ATOMIC_ACQUIRE) || past(rdtsc(), end))
			return false;
		cpu_relax();
	}
	return true;
}

/* The reading goes after the lock's acquisition (rdtsc_ordered), so the two sides' readings
 * are ordered as the lock orders them. */
static void read_turns(unsigned side)
{
	uint64_t now = rdtsc_ordered();
	uint64_t soft = now + chk.share, hard = now + TSC_SYNC_HARD_FACTOR * chk.share;
	bool enough = false;

	for (unsigned i = 0; i < TSC_SYNC_MAX_READINGS; i++) {
		if (past(now, hard) || (enough && past(now, soft)) || !wait_for_turn(side, hard))
			break;
		spin_lock(&chk.lock);
		now = rdtsc_ordered();
		tsc_warp_note(&chk.w, side, now);
		enough =
		    chk.w.crossings[0] >= TSC_SYNC_ENOUGH && chk.w.crossings[1] >= TSC_SYNC_ENOUGH;
		__atomic_store_n(&chk.next, !side, __ATOMIC_RELEASE);
		spin_unlock(&chk.lock);
	}
	__atomic_add_fetch(&chk.done, 1, __ATOMIC_ACQ_REL);
}

static uint64_t pair_share_ns(void)
{
	uint64_t ns = TSC_SYNC_TOTAL_NS / (ncpus > 1 ? ncpus - 1 : 1);

	if (ns < TSC_SYNC_PAIR_MIN_NS)
		return TSC_SYNC_PAIR_MIN_NS;
	return ns > TSC_SYNC_PAIR_MAX_NS ? TSC_SYNC_PAIR_MAX_NS : ns;
}

static void score(const struct tsc_warp *w)
{
	uint64_t skew = tsc_warp_ns(w->max_warp, tsc_hz);
	uint64_t res = tsc_warp_resolution(w);

	checks++;
	compared += w->crossings[0] >= TSC_SYNC_EVIDENCE && w->crossings[1] >= TSC_SYNC_EVIDENCE;
	tsc_sync.agree = tsc_sync.agree && tsc_warp_agree(w, TSC_SYNC_EVIDENCE);
	if (skew > tsc_sync.skew_ns)
		tsc_sync.skew_ns = skew;
	res = res == UINT64_MAX ? UINT64_MAX : tsc_warp_ns(res, tsc_hz);
	if (res > tsc_sync.resolution_ns)
		tsc_sync.resolution_ns = res;
	tsc_sync.readings += w->readings[0] + w->readings[1];
	tsc_sync.crossings += w->crossings[0] + w->crossings[1];
}

/* Interrupts off on both sides throughout, as in Linux: a handler between two readings could
 * not fake a warp, but it would lengthen that step, coarsening the check. */
bool tsc_sync_check(unsigned cpu, uint64_t timeout_ns)
{
	uint64_t flags = irq_save();
	uint64_t t0 = rdtsc_ordered(), deadline = t0 + ns_to_tsc(timeout_ns);

	tsc_warp_init(&chk.w);
	chk.share = ns_to_tsc(pair_share_ns());
	chk.next = 0;
	chk.started = chk.done = 0;
	__atomic_store_n(&chk.turn, cpu, __ATOMIC_RELEASE);
	__atomic_add_fetch(&chk.started, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&chk.started, __ATOMIC_ACQUIRE) < 2) {
		if ((int64_t)(rdtsc() - deadline) > 0) {
			irq_restore(flags);
			return false;
		}
		cpu_relax();
	}
	read_turns(0);
	/* The AP's loop is bounded like ours; its vCPU may only be running late. */
	while (__atomic_load_n(&chk.done, __ATOMIC_ACQUIRE) < 2)
		cpu_relax();
	__atomic_store_n(&chk.turn, 0, __ATOMIC_RELAXED);
	score(&chk.w);
	tsc_sync.took_ns += tsc_to_ns(rdtsc_ordered() - t0);
	irq_restore(flags);
	return true;
}

void tsc_sync_join(void)
{
	unsigned me = this_cpu()->id;
	uint64_t flags = irq_save();

	while (__atomic_load_n(&chk.turn, __ATOMIC_ACQUIRE) != me)
		cpu_relax();
	__atomic_add_fetch(&chk.started, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&chk.started, __ATOMIC_ACQUIRE) < 2)
		cpu_relax();
	read_turns(1);
	irq_restore(flags);
}

void tsc_sync_report(void)
{
	const char *verdict = "agree";

	if (!checks)
		return;
	if (!tsc_sync.agree)
		verdict = !tsc_sync.skew_ns && compared < checks
			      ? "UNVERIFIED (too few turns taken)"
			      : "DISAGREE";
	if (tsc_sync.resolution_ns == UINT64_MAX)
		printk("idlelab: TSC check: %s; %lu readings, %lu after the other CPU's, largest "
		       "warp %lu ns, took %lu us",
		       verdict, tsc_sync.readings, tsc_sync.crossings, tsc_sync.skew_ns,
		       tsc_sync.took_ns / 1000);
	else
		printk("idlelab: TSC check: %s; %lu readings, %lu after the other CPU's, largest "
		       "warp %lu ns, resolution %lu ns, took %lu us",
		       verdict, tsc_sync.readings, tsc_sync.crossings, tsc_sync.skew_ns,
		       tsc_sync.resolution_ns, tsc_sync.took_ns / 1000);
}
