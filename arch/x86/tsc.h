/* TSC frequency discovery and cycle/nanosecond conversion. */
#ifndef IDLELAB_ARCH_TSC_H
#define IDLELAB_ARCH_TSC_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"

extern uint64_t tsc_hz;
extern const char *tsc_source; /* which method produced tsc_hz, for the boot record */

/* Tries CPUID 0x15, KVM leaf 0x40000010, kvmclock, PIT, then CPUID 0x16. */
bool tsc_calibrate(void);

uint64_t tsc_to_ns(uint64_t cycles);
uint64_t ns_to_tsc(uint64_t ns);

/* Busy-waits; only for boot-time delays (INIT/SIPI spacing), never for workloads. */
void tsc_delay_ns(uint64_t ns);

#endif
