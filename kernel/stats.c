#include "arch/x86/kvm.h"
#include "arch/x86/tsc.h"
#include "kernel/idle.h"
#include "kernel/policy/tsc_delta.h"
#include "kernel/printk.h"
#include "kernel/stats.h"

/* Credits an idle state still in progress up to `now`, so an idle CPU's idle time is current,
 * and fills in the counters that are sums of others. `since` is the idle CPU's stamp and
 * `now` the reader's: tsc_delta, as the two TSCs may disagree. */
static void read_cpu(const struct cpu *c, uint64_t now, struct cpu_stats *out)
{
	const volatile struct cpu *v = c;
	uint32_t seq;
	uint64_t since, held, credit;
	bool polling;

	do {
		seq = v->idle_seq;
		barrier();
		*out = *(const volatile struct cpu_stats *)&c->stats;
		since = v->idle_since;
		held = v->barrier_since;
		polling = v->idle_polling;
		barrier();
	} while ((seq & 1) || seq != v->idle_seq);
	/* Sums of the counters the idle states keep, not kept themselves (two increments
	 * fewer on every idle entry). */
	out->poll_entries = out->poll_hits + out->poll_immediate + out->poll_expired;
	out->idle_entries = out->poll_entries + out->halts;
	/* the state in progress up to now, or up to the barrier that holds it (both stamps then
	 * the idle CPU's own); the barrier's waits inside idle states are not idle
	 * (kernel/idle.c idle_barrier_begin) */
	credit = !since ? 0 : held ? held - since : tsc_delta(now, since);
	if (polling)
		out->poll_cycles += credit;
	else
		out->halt_cycles += credit;
	out->poll_cycles -= out->barrier_poll_cycles;
	out->halt_cycles -= out->barrier_halt_cycles;
}

void stats_snapshot(struct stats_snapshot *s)
{
	s->t = rdtsc();
	s->reader = this_cpu()->id;
	for (unsigned i = 0; i < ncpus; i++) {
		read_cpu(&cpus[i], s->t, &s->cpu[i]);
		s->cpu[i].steal_ns = kvm_steal_ns(i);
		s->window_ns[i] = idle_window_ns(&cpus[i]);
		/* (one aligned word that only its CPU writes: a plain load is whole) */
		s->takeovers[i] = __atomic_load_n(&cpus[i].gov.takeovers, __ATOMIC_RELAXED);
	}
}

static uint64_t field(const struct cpu_stats *st, unsigned off)
{
	return *(const uint64_t *)((const char *)st + off);
}

uint64_t stats_sum(const struct stats_snapshot *s, unsigned field_offset)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < ncpus; i++)
		sum += field(&s->cpu[i], field_offset);
	return sum;
}

void stats_idle_cycles(const struct stats_snapshot *a, const struct stats_snapshot *b, unsigned cpu,
		       uint64_t *poll, uint64_t *halt)
{
	/* Two readers' stamps would make the span itself a cross-CPU difference. */
	uint64_t span = a->reader == b->reader ? tsc_delta(b->t, a->t) : UINT64_MAX;

	*poll = b->cpu[cpu].poll_cycles - a->cpu[cpu].poll_cycles;
	*halt = b->cpu[cpu].halt_cycles - a->cpu[cpu].halt_cycles;
	tsc_idle_clamp(poll, halt, span);
}

#define D(f) (y->f - x->f)

void stats_print_delta(const struct stats_snapshot *a, const struct stats_snapshot *b)
{
	for (unsigned i = 0; i < ncpus; i++) {
		const struct cpu_stats *x = &a->cpu[i], *y = &b->cpu[i];
		uint64_t poll, halt;

		stats_idle_cycles(a, b, i, &poll, &halt);
		printk(
		    "@idlelab cpu id=%u ctx_switches=%lu wakeups=%lu wakeups_local=%lu "
		    "wakeups_remote=%lu ipi_sent=%lu ipi_avoided=%lu ipi_received=%lu "
		    "timer_irqs=%lu ticks=%lu idle_entries=%lu idle_aborted=%lu poll_entries=%lu "
		    "poll_hits=%lu "
		    "poll_immediate=%lu poll_expired=%lu halts=%lu halts_aborted=%lu hlt=%lu "
		    "grow=%lu shrink=%lu "
		    "window_ns=%lu idle_ns=%lu poll_ns=%lu halt_ns=%lu poll_overshoot_ns=%lu "
		    "poll_overshoot_max_ns=%lu steal_ns=%lu polls_suspended=%lu takeovers=%lu "
		    "shadow_breaks=%lu",
		    i, D(ctx_switches), D(wakeups_local) + D(wakeups_remote), D(wakeups_local),
		    D(wakeups_remote), D(ipi_sent), D(ipi_avoided), D(ipi_received), D(timer_irqs),
		    D(ticks), D(idle_entries), D(idle_aborted), D(poll_entries), D(poll_hits),
		    D(poll_immediate), D(poll_expired), D(halts), D(halts_aborted), D(hlt),
		    D(window_grows), D(window_shrinks), b->window_ns[i], tsc_to_ns(poll + halt),
		    tsc_to_ns(poll), tsc_to_ns(halt), tsc_to_ns(D(poll_overshoot_cycles)),
		    tsc_to_ns(y->poll_overshoot_max_cycles), D(steal_ns), D(polls_suspended),
		    b->takeovers[i] - a->takeovers[i], D(shadow_breaks));
	}
}
