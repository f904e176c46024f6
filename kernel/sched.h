/*
 * Kernel threads pinned to a CPU, one FIFO run queue per CPU, cross-CPU wake-ups by IPI.
 * Every function here may be called with interrupts on or off unless it says otherwise.
 */
#ifndef IDLELAB_KERNEL_SCHED_H
#define IDLELAB_KERNEL_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#define MAX_THREADS  256
#define THREAD_STACK 16384

struct thread;

/* Starts fn(arg) on `cpu`; NULL if all MAX_THREADS slots are in use. */
struct thread *thread_create(void (*fn)(void *), void *arg, unsigned cpu, const char *name);
struct thread *thread_self(void);
unsigned thread_cpu(const struct thread *t);

/*
 * Blocks until some thread_wake(self). A wake that arrives before the block is remembered
 * (one pending wake, not a count), so the usual pattern is `while (!cond) thread_block();`.
 */
void thread_block(void);
/* Makes t runnable on its own CPU, sending that CPU a reschedule IPI if it is another. */
void thread_wake(struct thread *t);
/* Returns no earlier than `ns` after the call, as measured by the TSC. */
void thread_sleep_ns(uint64_t ns);
__attribute__((noreturn)) void thread_exit(void);
/*
 * For a thread that spins instead of blocking: lets a thread woken on this CPU run. Nothing
 * preempts a running thread but an interrupt, so with hz=0 a spinner would otherwise keep
 * such a thread off the CPU for as long as it spins.
 */
void sched_preempt_point(void);

/* Counts finishing threads; the waiter sleeps until all are done. */
struct join_counter {
	unsigned remaining;
	struct thread *waiter;
};
void join_init(struct join_counter *j, unsigned n);
void join_done(struct join_counter *j);
void join_wait(struct join_counter *j);

/*
 * Each CPU once, interrupts off, after timer_init_cpu(): the calling context becomes this
 * CPU's idle thread, and the tick starts unless hz=0.
 */
void sched_init_cpu(void);
/* Interrupts off. Switches to the next runnable thread; a blocked thread with none to
 * switch to idles in place until there is one (possibly itself). */
void schedule(void);
/* Each CPU's idle thread, after sched_init_cpu() and timer_init_cpu(). */
__attribute__((noreturn)) void sched_idle_loop(void);
/* The tail of every interrupt (the trap return hook): preempts the current thread if asked. */
void sched_irq_exit(void);
/* Sets NEED_RESCHED on c, and sends it an IPI unless it is this CPU or already asked. */
struct cpu;
void sched_resched_cpu(struct cpu *c);

#endif
