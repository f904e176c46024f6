/* Local APIC in x2APIC mode (MSRs) when CPUID offers it, else xAPIC (MMIO). */
#ifndef IDLELAB_ARCH_APIC_H
#define IDLELAB_ARCH_APIC_H

#include <stdbool.h>
#include <stdint.h>

extern bool apic_x2apic_mode;

/* Every CPU calls this for itself: enables the APIC in the mode chosen on the BSP. */
void apic_init_cpu(void);
uint32_t apic_id(void);
void apic_eoi(void);
void apic_send_ipi(uint32_t dest_apic_id, uint8_t vector);
void apic_send_init(uint32_t dest_apic_id);
void apic_send_sipi(uint32_t dest_apic_id, uint8_t page);

/* Remaps the 8259 PIC away from the exception vectors and masks every line. */
void pic_disable(void);

#endif
