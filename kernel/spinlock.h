/*
 * Ticket spinlock: FIFO, so no CPU starves while others print or enqueue. The _irqsave
 * variants keep an interrupt handler on the same CPU from spinning on a lock its own CPU
 * holds.
 */
#ifndef IDLELAB_KERNEL_SPINLOCK_H
#define IDLELAB_KERNEL_SPINLOCK_H

#include <stdint.h>

#include "arch/x86/cpu.h"

struct spinlock {
	uint32_t next;
	uint32_t serving;
};

static inline void spin_lock(struct spinlock *l)
{
	uint32_t me = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);

	while (__atomic_load_n(&l->serving, __ATOMIC_ACQUIRE) != me)
		cpu_relax();
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->serving, l->serving + 1, __ATOMIC_RELEASE);
}

static inline uint64_t spin_lock_irqsave(struct spinlock *l)
{
	uint64_t flags = irq_save();

	spin_lock(l);
	return flags;
}

static inline void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
	spin_unlock(l);
	irq_restore(flags);
}

#endif
