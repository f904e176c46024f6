#ifndef IDLELAB_ARCH_SMP_H
#define IDLELAB_ARCH_SMP_H

#include <stdint.h>

typedef void (*ap_entry_t)(uint64_t cpu);

/*
 * Sends INIT-SIPI-SIPI to `apic_id`; the AP enters long mode on the BSP's page tables and
 * calls entry(cpu) on `stack_top`. Returns without waiting for the AP to reach C: the
 * caller waits for its own "online" signal, and must not start another AP before then,
 * because the trampoline's parameter block is shared.
 */
void smp_start_ap(uint32_t apic_id, uint64_t cpu, void *stack_top, ap_entry_t entry);

#endif
