/*
 * The idle loop: halt until there is work. The NEED_RESCHED test and the HLT must not be
 * separable by an interrupt, or a wake-up IPI serviced in between would leave this CPU
 * halted with a runnable thread queued. So the test runs with interrupts off and
 * safe_halt() enables them with `sti; hlt`, whose interrupt shadow makes any IPI that is
 * already pending end the HLT rather than arrive before it.
 */
#include "arch/x86/cpu.h"
#include "kernel/idle.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"

/* x86 keeps stores in order, so a compiler barrier is all the sequence count needs. */
static void idle_begin(struct cpu *c, uint64_t t0)
{
	c->idle_seq++;
	barrier();
	c->idle_since = t0;
	barrier();
	c->idle_seq++;
}

static void idle_end(struct cpu *c, uint64_t cycles)
{
	c->idle_seq++;
	barrier();
	c->stats.idle_cycles += cycles;
	c->idle_since = 0;
	barrier();
	c->idle_seq++;
}

void idle_loop(void)
{
	struct cpu *c = this_cpu();

	for (;;) {
		uint64_t t0;

		irq_disable();
		if (__atomic_load_n(&c->flags, __ATOMIC_SEQ_CST) & CPU_NEED_RESCHED) {
			schedule();
			irq_enable();
			continue;
		}
		c->stats.hlt++;
		t0 = rdtsc();
		idle_begin(c, t0);
		safe_halt(); /* returns with interrupts on, after the waking handler ran */
		irq_disable();
		idle_end(c, rdtsc() - t0);
		irq_enable();
	}
}
