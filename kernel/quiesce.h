/*
 * Quiescing the machine: every other CPU stops at a barrier and spins there, interrupts
 * off, so no CPU halts (and no VM exit of the halt kind happens) until the caller lets them
 * go. The window markers use it to make the guest's and the host's counts meet exactly.
 */
#ifndef IDLELAB_KERNEL_QUIESCE_H
#define IDLELAB_KERNEL_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

/* Once, on the BSP, before any CPU can be asked to stop. */
void quiesce_init(void);

/*
 * Turns interrupts off on this CPU and brings every other online CPU to the barrier (an IPI
 * ends a HLT or a poll). Returns false if some CPU had not arrived within timeout_ns; the
 * CPUs that did arrive stay at the barrier either way, until quiesce_end().
 */
bool quiesce_begin(uint64_t timeout_ns);
/* Releases the barrier and restores this CPU's interrupt flag. */
void quiesce_end(void);
/* The same, and every CPU (this one too) runs fn as it leaves, before any other code:
 * for per-CPU state that must change while no CPU uses it (the poll-control MSR). */
void quiesce_end_with(void (*fn)(void));

#endif
