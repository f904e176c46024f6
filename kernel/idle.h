#ifndef IDLELAB_KERNEL_IDLE_H
#define IDLELAB_KERNEL_IDLE_H

/* Each CPU's idle thread, after sched_init_cpu() and timer_init_cpu(). */
__attribute__((noreturn)) void idle_loop(void);

#endif
