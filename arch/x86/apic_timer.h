/*
 * The local APIC timer as a one-shot event source, in TSC-deadline mode when CPUID offers
 * it and in one-shot count mode (calibrated against the TSC at boot) otherwise.
 */
#ifndef IDLELAB_ARCH_APIC_TIMER_H
#define IDLELAB_ARCH_APIC_TIMER_H

#include <stdbool.h>
#include <stdint.h>

extern bool apic_timer_deadline_mode;
extern uint64_t apic_timer_hz; /* one-shot mode only: APIC timer ticks per second */

/* BSP, once, before any CPU arms its timer. Returns false if the timer does not count. */
bool apic_timer_setup(void);
/* Each CPU for itself: timer LVT in the chosen mode, delivering `vector`, disarmed. */
void apic_timer_init_cpu(uint8_t vector);
/* Fires once at (or, in count mode, at most one count before) TSC value `deadline`; a
 * deadline already past fires at once. Replaces any earlier arming. */
void apic_timer_arm(uint64_t deadline);
void apic_timer_disarm(void);

#endif
