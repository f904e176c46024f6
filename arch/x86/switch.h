#ifndef IDLELAB_ARCH_SWITCH_H
#define IDLELAB_ARCH_SWITCH_H

#include <stdint.h>

/* Saves the current context's stack pointer in *save_rsp and resumes the one at next_rsp. */
void arch_switch(uint64_t *save_rsp, uint64_t next_rsp);

/*
 * Lays out a new thread's stack so that the first arch_switch to it enters
 * sched_thread_start(arg) on that stack. Returns the initial saved stack pointer.
 */
uint64_t arch_thread_stack_init(void *stack_top, void *arg);

#endif
