#ifndef IDLELAB_KERNEL_BENCH_H
#define IDLELAB_KERNEL_BENCH_H

/* bench=sched: cross-CPU wake-up round trip and timer lateness, as `@idlelab bench`. */
void bench_sched(void);

/* bench=exits: ns per operation of instructions, VM exits, IPIs, wakes and the timer. */
void bench_exits(void);

#endif
