#ifndef IDLELAB_KERNEL_BENCH_H
#define IDLELAB_KERNEL_BENCH_H

/* bench=sched: cross-CPU wake-up round trip and timer lateness, as `@idlelab bench`. */
void bench_sched(void);

#endif
