#ifndef IDLELAB_KERNEL_SELFTEST_H
#define IDLELAB_KERNEL_SELFTEST_H

#include <stdbool.h>

/* selftest=sched: returns true if every check passed; prints one record per check. */
bool selftest_sched(void);
/* selftest=wakeup: no cross-CPU wake-up is lost, whatever the target's idle state. */
bool selftest_wakeup(void);

#endif
