#include "arch/x86/tsc.h"
#include "kernel/printk.h"
#include "kernel/stats.h"

/* Credits a halt still in progress, so an idle CPU's idle time is current. */
static void read_cpu(const struct cpu *c, struct cpu_stats *out)
{
	const volatile struct cpu *v = c;
	uint32_t seq;
	uint64_t since;

	do {
		seq = v->idle_seq;
		barrier();
		*out = *(const volatile struct cpu_stats *)&c->stats;
		since = v->idle_since;
		barrier();
	} while ((seq & 1) || seq != v->idle_seq);
	if (since)
		out->idle_cycles += rdtsc() - since;
}

void stats_snapshot(struct stats_snapshot *s)
{
	for (unsigned i = 0; i < ncpus; i++)
		read_cpu(&cpus[i], &s->cpu[i]);
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

void stats_print_delta(const struct stats_snapshot *a, const struct stats_snapshot *b)
{
	for (unsigned i = 0; i < ncpus; i++) {
		const struct cpu_stats *x = &a->cpu[i], *y = &b->cpu[i];

		printk("@idlelab cpu id=%u ctx_switches=%lu wakeups_local=%lu wakeups_remote=%lu "
		       "ipi_sent=%lu ipi_received=%lu timer_irqs=%lu ticks=%lu hlt=%lu idle_ns=%lu",
		       i, y->ctx_switches - x->ctx_switches, y->wakeups_local - x->wakeups_local,
		       y->wakeups_remote - x->wakeups_remote, y->ipi_sent - x->ipi_sent,
		       y->ipi_received - x->ipi_received, y->timer_irqs - x->timer_irqs,
		       y->ticks - x->ticks, y->hlt - x->hlt,
		       tsc_to_ns(y->idle_cycles - x->idle_cycles));
	}
}
