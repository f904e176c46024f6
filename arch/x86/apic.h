/* Local APIC in x2APIC mode (MSRs) when CPUID offers it, else xAPIC (MMIO). */
#ifndef IDLELAB_ARCH_APIC_H
#define IDLELAB_ARCH_APIC_H

#include <stdbool.h>
#include <stdint.h>

extern bool apic_x2apic_mode;

/* Register offsets in the xAPIC page; the x2APIC MSR is 0x800 + offset / 16. */
#define APIC_REG_LVT_TIMER  0x320
#define APIC_REG_TIMER_INIT 0x380
#define APIC_REG_TIMER_CUR  0x390
#define APIC_REG_TIMER_DIV  0x3e0
#define APIC_REG_IRR	    0x200 /* 8 registers of 32 vectors, 0x10 apart */

uint32_t apic_reg_read(uint32_t reg);
void apic_reg_write(uint32_t reg, uint32_t v);

/* Every CPU calls this for itself: enables the APIC in the mode chosen on the BSP. */
void apic_init_cpu(void);
uint32_t apic_id(void);
void apic_eoi(void);
/* Whether `vector` is requested and not yet in service here (its IRR bit). */
bool apic_irr_pending(uint8_t vector);
void apic_send_ipi(uint32_t dest_apic_id, uint8_t vector);
void apic_send_init(uint32_t dest_apic_id);
void apic_send_sipi(uint32_t dest_apic_id, uint8_t page);

/* Remaps the 8259 PIC away from the exception vectors and masks every line. */
void pic_disable(void);

#endif
