/*
 * The barrier behind quiesce_begin/end. Invariant: a CPU at the barrier reads the release
 * generation *before* it announces its arrival, and the initiator releases (bumps the
 * generation) only after every CPU has arrived, so no CPU can miss its release or be
 * released by an earlier one. on_release is written before the bump and read after it is
 * seen; the next round's write waits for every CPU to arrive again, which none can do before
 * it has left (and read) this one. At most one initiator at a time: the window markers run on
 * the run's controller thread only.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "kernel/idle.h"
#include "kernel/percpu.h"
#include "kernel/quiesce.h"

static struct {
	uint32_t generation; /* bumped once per release */
	uint32_t arrived;    /* CPUs at the barrier in this round */
	uint64_t saved_flags;
	void (*on_release)(void); /* written before the bump: each CPU runs it on its way out */
} barrier_state;

/* Runs with interrupts off (interrupt gate) and stays so until released: no HLT here. A
 * CPU caught in an idle state does not idle while it waits here (kernel/idle.c). */
static void quiesce_interrupt(struct trap_frame *f)
{
	uint32_t gen = __atomic_load_n(&barrier_state.generation, __ATOMIC_ACQUIRE);
	uint64_t t_in = rdtsc();
	bool was_idle = idle_barrier_begin(t_in);

	(void)f;
	apic_eoi();
	__atomic_fetch_add(&barrier_state.arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&barrier_state.generation, __ATOMIC_ACQUIRE) == gen)
		cpu_relax();
	if (barrier_state.on_release)
		barrier_state.on_release();
	if (was_idle)
		idle_barrier_end(t_in);
}

void quiesce_init(void)
{
	irq_register(VEC_QUIESCE, quiesce_interrupt);
}

bool quiesce_begin(uint64_t timeout_ns)
{
	unsigned me;
	uint64_t t0;

	barrier_state.saved_flags = irq_save();
	me = this_cpu()->id;
	__atomic_store_n(&barrier_state.arrived, 0, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < ncpus; i++)
		if (i != me)
			apic_send_ipi(cpus[i].apic_id, VEC_QUIESCE);
	t0 = rdtsc();
	while (__atomic_load_n(&barrier_state.arrived, __ATOMIC_ACQUIRE) < ncpus - 1) {
		if (tsc_to_ns(rdtsc() - t0) > timeout_ns)
			return false;
		cpu_relax();
	}
	return true;
}

void quiesce_end(void)
{
	quiesce_end_with(NULL);
}

void quiesce_end_with(void (*fn)(void))
{
	barrier_state.on_release = fn;
	__atomic_fetch_add(&barrier_state.generation, 1, __ATOMIC_ACQ_REL);
	if (fn)
		fn();
	irq_restore(barrier_state.saved_flags);
}
