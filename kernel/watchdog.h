#ifndef IDLELAB_KERNEL_WATCHDOG_H
#define IDLELAB_KERNEL_WATCHDOG_H

#include <stdint.h>

/*
 * Ends the run with EXIT_WATCHDOG unless watchdog_stop() comes within `ns`. Armed on the
 * calling CPU's timer queue, so it keeps working while other CPUs are stuck.
 */
void watchdog_start(uint64_t ns, const char *what);
void watchdog_stop(void);

/*
 * A run that counts its own progress (a counter other CPUs may bump, read relaxed) makes
 * the bound one on silence instead of on length: when `ns` has passed and the counter has
 * moved since the last look, the watchdog waits `ns` more. A long run on a slow machine
 * (the 10^7 stress under TCG: 43-60+ minutes here, depending on the day) then ends by its
 * own verdict, and a hang still ends within 2 x ns. NULL: back to a bound on length.
 */
void watchdog_progress(const uint64_t *counter);

#endif
