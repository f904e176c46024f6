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

/* Fixed-point factors set by tsc_calibrate(); the conversions are inline because the
 * wake-up path converts on every idle entry. */
extern uint64_t tsc_ns_mult, tsc_cyc_mult;

static inline uint64_t tsc_to_ns(uint64_t cycles)
{
	return (uint64_t)(((unsigned __int128)cycles * tsc_ns_mult) >> 32);
}

static inline uint64_t ns_to_tsc(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns * tsc_cyc_mult) >> 32);
}

/* Busy-waits; only for boot-time delays (INIT/SIPI spacing), never for workloads. */
void tsc_delay_ns(uint64_t ns);

#endif
