#include "arch/x86/apic.h"
#include "arch/x86/apic_timer.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "kernel/knobs.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/timer.h"

static const unsigned hz_values[] = {0, 100, 250, 1000}; /* order of KNOB_CHOICES_HZ */
_Static_assert(sizeof(hz_values) / sizeof(hz_values[0]) == KNOB_NCHOICES_hz,
	       "hz_values must list every hz= choice");

unsigned timer_hz(void)
{
	return hz_values[knob(KNOB_hz)];
}

static void program_next(struct cpu *c)
{
	struct tq_node *n = tq_peek(&c->timers);

	if (n)
		apic_timer_arm(n->expiry);
	else
		apic_timer_disarm();
}

void timer_arm(struct timer *t, uint64_t deadline_tsc)
{
	struct cpu *c = this_cpu();

	tq_remove(&c->timers, &t->node);
	tq_insert(&c->timers, &t->node, deadline_tsc);
	if (tq_peek(&c->timers) == &t->node)
		apic_timer_arm(deadline_tsc);
}

bool timer_cancel(struct timer *t)
{
	struct cpu *c = this_cpu();
	bool was_first = tq_peek(&c->timers) == &t->node;
	bool removed = tq_remove(&c->timers, &t->node);

	if (was_first)
		program_next(c);
	return removed;
}

static void fire(struct tq_node *n, void *ctx)
{
	struct timer *t = (struct timer *)n; /* node is the first member */

	(void)ctx;
	t->fn(t);
}

/*
 * The tick re-arms from its own previous deadline so it does not drift; after a long
 * stall it skips the missed ticks rather than firing a burst of them.
 */
static void tick(struct timer *t)
{
	struct cpu *c = this_cpu();
	uint64_t next = t->node.expiry + c->tick_period, now = rdtsc();

	c->stats.ticks++;
	if ((int64_t)(next - now) <= 0)
		next = now + c->tick_period;
	timer_arm(t, next);
	sched_tick();
}

static void timer_interrupt(struct trap_frame *f)
{
	struct cpu *c = this_cpu();

	(void)f;
	apic_eoi();
	c->stats.timer_irqs++;
	tq_collect_expired(&c->timers, rdtsc(), fire, 0);
	program_next(c);
	sched_irq_exit();
}

void timer_init_cpu(void)
{
	struct cpu *c = this_cpu();
	unsigned hz = timer_hz();

	irq_register(VEC_TIMER, timer_interrupt);
	apic_timer_init_cpu(VEC_TIMER);
	if (!hz)
		return;
	c->tick_period = tsc_hz / hz;
	c->tick.fn = tick;
	timer_arm(&c->tick, rdtsc() + c->tick_period);
}
