/* The GS base holds this CPU's struct cpu, whose first field points to itself. */
#ifndef IDLELAB_ARCH_PERCPU_H
#define IDLELAB_ARCH_PERCPU_H

#include "arch/x86/cpu.h"

struct cpu;

static inline struct cpu *arch_this_cpu(void)
{
	struct cpu *c;

	__asm__ volatile("mov %%gs:0, %0" : "=r"(c));
	return c;
}

static inline void arch_set_this_cpu(struct cpu *c)
{
	wrmsr(MSR_GS_BASE, (uint64_t)c);
}

#endif
