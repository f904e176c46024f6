#include "arch/x86/apic.h"
#include "arch/x86/apic_timer.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "kernel/knobs/knobs.h"
#include "kernel/percpu.h"
#include "kernel/timer.h"

static const unsigned hz_values[] = {0, 100, 250, 1000}; /* order of KNOB_CHOICES_HZ */
_Static_assert(sizeof(hz_values) / sizeof(hz_values[0]) == KNOB_NCHOICES_hz,
	       "hz_values must list every hz= choice");

/* Each CPU's pending timers, owned by that CPU alone; a line each, so no two CPUs share one. */
static struct timer_queue {
	struct tq q;
} __attribute__((aligned(CACHELINE))) queues[MAX_CPUS];

static struct tq *my_queue(void)
{
	return &queues[this_cpu()->id].q;
}

unsigned timer_hz(void)
{
	return hz_values[knob(KNOB_hz)];
}

static void program_next(struct tq *q)
{
	struct tq_node *n = tq_peek(q);

	if (n)
		apic_timer_arm(n->expiry);
	else
		apic_timer_disarm();
}

void timer_arm(struct timer *t, uint64_t deadline_tsc)
{
	struct tq *q = my_queue();

	tq_remove(q, &t->node);
	tq_insert(q, &t->node, deadline_tsc);
	if (tq_peek(q) == &t->node)
		apic_timer_arm(deadline_tsc);
}

bool timer_cancel(struct timer *t)
{
	struct tq *q = my_queue();
	bool was_first = tq_peek(q) == &t->node;
	bool removed = tq_remove(q, &t->node);

	if (was_first)
		program_next(q);
	return removed;
}

static void fire(struct tq_node *n, void *ctx)
{
	struct timer *t = (struct timer *)n; /* node is the first member */

	(void)ctx;
	t->fn(t);
}

static void timer_interrupt(struct trap_frame *f)
{
	struct tq *q = my_queue();

	(void)f;
	apic_eoi();
	this_cpu()->stats.timer_irqs++;
	tq_collect_expired(q, rdtsc(), fire, 0);
	program_next(q);
}

void timer_init_cpu(void)
{
	irq_register(VEC_TIMER, timer_interrupt);
	apic_timer_init_cpu(VEC_TIMER);
}
