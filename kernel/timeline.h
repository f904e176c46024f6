/*
 * timeline=N: a per-CPU event log of a short stretch of the measured window, to look at
 * (tools/timeline turns it into a Chrome trace and a picture). From the window's opening each
 * CPU records its state changes (a thread runs, poll begins, HLT begins, the idle state ends),
 * the wakes it issues and the IPIs it sends, skips or takes, until its N slots are full or
 * the window closes; after the workload's result the log is printed as `timeline` records.
 *
 * Without the knob (the default) a hook is a NOP: the hot path is counted in instructions
 * (tests/wakepath/insns-baseline.txt), so nothing else may run there.
 */
#ifndef IDLELAB_KERNEL_TIMELINE_H
#define IDLELAB_KERNEL_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/static_branch.h"

/*
 * The event kinds, defined once: the enum, and the letter and name each is printed with (the
 * `timeline` record carries the letter:name legend, so the host reads them from the record).
 * arg: run: the thread's slot, TL_IDLE_THREAD for the CPU's idle thread; idle_end: TL_END_*
 * bits; wake and the three IPI kinds of the sender: the target CPU; reflect: the governor's
 * window after it, ns (what tests/boot/test_sim_trace.py holds the simulator to); sleep:
 * the sleep asked, ns, at most TL_SLEEP_MAX (tools/idlelab/timeline/sleeps.py sets each
 * against whether its CPU idled and how late its thread ran); the others: 0.
 */
#define TL_KINDS(X)                                                                                \
	X(TL_RUN, 'r', "run")			/* a thread starts running on this CPU */          \
	X(TL_POLL, 'p', "poll")			/* the poll state begins */                        \
	X(TL_HALT, 'h', "halt")			/* HLT is about to execute */                      \
	X(TL_IDLE_END, 'e', "idle_end")		/* poll exit or back from HLT */                   \
	X(TL_WAKE, 'w', "wake")			/* thread_wake() issued for a thread of arg */     \
	X(TL_IPI_SENT, 'i', "ipi_sent")		/* reschedule IPI sent to arg */                   \
	X(TL_IPI_AVOIDED, 'a', "ipi_avoided")	/* arg was polling: no IPI needed */               \
	X(TL_IPI_PENDING, 'q', "ipi_pending")	/* arg had an IPI in flight already: none sent */  \
	X(TL_IPI_RECEIVED, 'x', "ipi_received") /* this CPU took a reschedule IPI */               \
	X(TL_REFLECT, 'g', "reflect")		/* the governor reflected an entry */              \
	X(TL_SLEEP, 's', "sleep")		/* a thread calls thread_sleep_ns */

#define TL_ENUM(id, letter, name) id,
enum tl_kind {
	TL_KINDS(TL_ENUM) TL_NKINDS
};
#undef TL_ENUM

#define TL_SLEEP_MAX   0xffffffffu /* sleep: a longer sleep is recorded as this (4.29 s) */
#define TL_IDLE_THREAD 0xffffu /* run: the idle loop (idle thread, or a thread idling in place) */
#define TL_END_WORK    1u      /* idle_end: NEED_RESCHED was set (work noticed) */
/* idle_end: the state was HLT (else the poll state); the recorder adds TL_END_WORK itself */
#define TL_END_HALT 2u

/* Recording: set at the window's opening, cleared at its end or close; read by the
 * recorder. */
extern bool timeline_on;

/* The recorder, called only through the hooks below. tsc 0: now. */
void timeline_record(unsigned kind, unsigned arg, uint64_t tsc);

/* Where `reflect` events read the governor's window (kernel/idle.c gives idle_window_ns at
 * setup; timeline does not include idle, which includes it). */
struct cpu;
void timeline_reflect_source(uint64_t (*window_ns)(const struct cpu *c));

/* True where the run asked for a timeline (timeline=N, N > 0): the sites are patched at boot
 * (timeline_setup); otherwise a NOP, which the caller's `if` becomes once this is inlined. */
static inline __attribute__((always_inline)) bool timeline_active(void)
{
	return static_branch_on(BRANCH_TIMELINE);
}

/*
 * The hooks. Without timeline=, each is a 5-byte NOP that falls through
 * (arch/x86/static_branch.h); with it, each calls the recorder, which records only while
 * timeline_on. They are macros so that the arguments are evaluated only then. timeline_rec_at() takes a TSC value the caller read with interrupts off and has not
 * enabled them since, so nothing recorded on this CPU can come between.
 */
#define timeline_rec_at(kind, arg, tsc)                                                            \
	do {                                                                                       \
		if (__builtin_expect(timeline_active(), 0))                                        \
			timeline_record((kind), (arg), (tsc));                                     \
	} while (0)
#define timeline_rec(kind, arg) timeline_rec_at((kind), (arg), 0)

/* The boot CPU, once the knobs are read and before any other CPU starts: with timeline=N,
 * N > 0, turns the hooks on (they record only between timeline_start and timeline_stop). */
void timeline_setup(void);
/* The workload controller, just after the window's open marker: starts recording. */
void timeline_start(void);
/* The workload controller, just before the window's close marker: stops recording. */
void timeline_stop(void);
/* After the workload's result: prints the `timeline` records (nothing if timeline=0). */
void timeline_dump(void);

#endif
