#ifndef IDLELAB_KERNEL_WATCHDOG_H
#define IDLELAB_KERNEL_WATCHDOG_H

#include <stdint.h>

/*
 * Ends the run with EXIT_WATCHDOG unless watchdog_stop() comes within `ns`. Armed on the
 * calling CPU's timer queue, so it keeps working while other CPUs are stuck.
 */
void watchdog_start(uint64_t ns, const char *what);
void watchdog_stop(void);

#endif
