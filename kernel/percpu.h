/*
 * Per-CPU state. CPUs are numbered densely from 0 (the BSP) in MADT order; the APIC ID is
 * kept separately because firmware may leave gaps. this_cpu() is one GS-relative load.
 */
#ifndef IDLELAB_KERNEL_PERCPU_H
#define IDLELAB_KERNEL_PERCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/desc.h"
#include "arch/x86/percpu.h"

#define MAX_CPUS 64

struct cpu {
	struct cpu *self; /* must stay first: arch_this_cpu() reads offset 0 */
	uint32_t id;
	uint32_t apic_id;
	bool online;
	struct arch_cpu arch;
};

extern struct cpu cpus[MAX_CPUS];
extern unsigned int ncpus;

static inline struct cpu *this_cpu(void)
{
	return arch_this_cpu();
}

/* Points this CPU's GS base at cpus[id]. */
void percpu_init(unsigned int id);

#endif
