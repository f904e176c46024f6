#include "arch/x86/kvm.h"
#include "arch/x86/tsc.h"
#include "kernel/cpu_record.h"
#include "kernel/idle.h"
#include "lib/tsc_delta.h"
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

/* Each field's value from a to b on CPU i, by the table's name (kernel/cpu_record.h). */
#define VAL_id			   i
#define VAL_ctx_switches	   D(ctx_switches)
#define VAL_wakeups		   (D(wakeups_local) + D(wakeups_remote))
#define VAL_wakeups_local	   D(wakeups_local)
#define VAL_wakeups_remote	   D(wakeups_remote)
#define VAL_ipi_sent		   D(ipi_sent)
#define VAL_ipi_avoided		   D(ipi_avoided)
#define VAL_ipi_received	   D(ipi_received)
#define VAL_timer_irqs		   D(timer_irqs)
#define VAL_ticks		   D(ticks)
#define VAL_idle_entries	   D(idle_entries)
#define VAL_idle_aborted	   D(idle_aborted)
#define VAL_poll_entries	   D(poll_entries)
#define VAL_poll_hits		   D(poll_hits)
#define VAL_poll_immediate	   D(poll_immediate)
#define VAL_poll_expired	   D(poll_expired)
#define VAL_halts		   D(halts)
#define VAL_halts_aborted	   D(halts_aborted)
#define VAL_hlt			   D(hlt)
#define VAL_grow		   D(window_grows)
#define VAL_shrink		   D(window_shrinks)
#define VAL_window_ns		   b->window_ns[i]
#define VAL_idle_ns		   tsc_to_ns(poll + halt)
#define VAL_poll_ns		   tsc_to_ns(poll)
#define VAL_halt_ns		   tsc_to_ns(halt)
#define VAL_poll_overshoot_ns	   tsc_to_ns(D(poll_overshoot_cycles))
#define VAL_poll_overshoot_max_ns  tsc_to_ns(y->poll_overshoot_max_cycles)
#define VAL_steal_ns		   D(steal_ns)
#define VAL_polls_suspended	   D(polls_suspended)
#define VAL_takeovers		   (b->takeovers[i] - a->takeovers[i])
#define VAL_shadow_breaks	   D(shadow_breaks)
#define VALUE(name, unit, meaning) v[CPU_REC_##name] = VAL_##name;

/* CPU i's record from a to b: every field of the table, or this does not compile. */
static void record_values(const struct stats_snapshot *a, const struct stats_snapshot *b,
			  unsigned i, uint64_t v[CPU_REC__COUNT])
{
	const struct cpu_stats *x = &a->cpu[i], *y = &b->cpu[i];
	uint64_t poll, halt;

	stats_idle_cycles(a, b, i, &poll, &halt);
	CPU_RECORD_FIELDS(VALUE)
}

void stats_print_delta(const struct stats_snapshot *a, const struct stats_snapshot *b)
{
	for (unsigned i = 0; i < ncpus; i++) {
		uint64_t v[CPU_REC__COUNT];
		char line[CPU_RECORD_LINE_MAX];

		record_values(a, b, i, v);
		cpu_record_format(line, sizeof(line), v);
		printk("%s", line);
	}
}
