/*
 * Per-CPU one-shot timers on the local APIC timer. Deadlines are in
 * TSC cycles, the unit the hardware compares against, so no conversion can make a timer
 * fire a cycle before its own deadline and loop.
 */
#ifndef IDLELAB_KERNEL_TIMER_H
#define IDLELAB_KERNEL_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/timerqueue.h"

struct timer {
	struct tq_node node;
	/* Runs in interrupt context on the timer's CPU, after the timer left the queue. */
	void (*fn)(struct timer *t);
	void *arg;
};

/* Ticks per second for a `hz=` knob value (0 = tickless). */
unsigned timer_hz(void);

/* Each CPU, interrupts off: sets up its APIC timer and the timer interrupt. */
void timer_init_cpu(void);

/* Interrupts off; the timer belongs to this CPU until it fires or is cancelled. */
void timer_arm(struct timer *t, uint64_t deadline_tsc);
bool timer_cancel(struct timer *t);

#endif
