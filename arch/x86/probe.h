/*
 * Probe marks: a multi-byte NOP whose displacement carries an id, placed at the points of
 * the wake-up path that the instruction counter (tools/insncount, a QEMU TCG plugin)
 * divides into phases. Executed anywhere else it is just a NOP: no memory access, no exit.
 * The ids are listed once, here; tools/idlelab/wakepath/insncount.py reads this list.
 */
#ifndef IDLELAB_ARCH_PROBE_H
#define IDLELAB_ARCH_PROBE_H

/* The displacement's upper half marks the NOP as ours: `nopl 0x1d1eXXXX(%rax)`. */
#define PROBE_MAGIC 0x1d1e0000u

#define PROBE_LIST(X)                                                                              \
	X(WINDOW_OPEN, 1)  /* a measurement window opened (after the host's acknowledgement) */    \
	X(WINDOW_CLOSE, 2) /* it closed, or a workload's threads are told to stop (the first) */   \
	X(WAKE_BEGIN, 3)   /* a workload thread is about to wake its partner */                    \
	X(WAKE_END, 4)	   /* thread_wake() returned to it */                                      \
	X(IDLE_ENTER, 5)   /* the idle loop found nothing to run and enters a state */             \
	X(NOTICE, 6)	   /* the idle CPU noticed work: poll exit, or back from HLT */            \
	X(RUNNING, 7)	   /* the woken workload thread runs again */                              \
	X(IDLE_WAIT, 8)	   /* the state starts waiting: first poll iteration, or just before HLT */

enum probe_id {
#define X(name, id) PROBE_##name = id,
	PROBE_LIST(X)
#undef X
};

#define probe_mark(id) __asm__ volatile("nopl %c0(%%rax)" ::"i"(PROBE_MAGIC + (id)))

#endif
