/*
 * Per-CPU state. CPUs are numbered densely from 0 (the BSP) in MADT order; the APIC ID is
 * kept separately because firmware may leave gaps. this_cpu() is one GS-relative load.
 *
 * Layout: what only the owning CPU writes (counters, timers, current thread) shares cache
 * lines; what other CPUs write on the wake-up path (the flag word; the run queue and its
 * lock) sits on lines of its own, so a remote wake-up never bounces the counters' line.
 */
#ifndef IDLELAB_KERNEL_PERCPU_H
#define IDLELAB_KERNEL_PERCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/desc.h"
#include "arch/x86/percpu.h"
#include "kernel/policy/governors.h"
#include "kernel/policy/idle_entry.h"
#include "lib/runqueue.h"
#include "kernel/policy/steal_gate.h"

#define MAX_CPUS  64
#define CACHELINE 64

/* Bits of struct cpu.flags; see kernel/sched.c for the protocol. */
#define CPU_NEED_RESCHED (1u << 0) /* run schedule() soon: work was queued here */
#define CPU_POLLING	 (1u << 1) /* idle and polling NEED_RESCHED: no IPI needed (idle.c) */
#define CPU_IPI_PENDING	 (1u << 2) /* a reschedule IPI is on its way and not yet handled */

/* Counters owned by one CPU; read by others only when a run is quiet. */
struct cpu_stats {
	uint64_t ctx_switches;
	uint64_t wakeups_local;	 /* thread_wake() calls from this CPU for its own threads */
	uint64_t wakeups_remote; /* thread_wake() calls from this CPU for other CPUs' threads */
	uint64_t ipi_sent;
	uint64_t ipi_avoided; /* wake-ups whose IPI was skipped: the target was polling */
	uint64_t ipi_received;
	uint64_t timer_irqs;
	uint64_t ticks;
	uint64_t idle_entries;	 /* polls + halts, summed by the snapshot (kernel/stats.c) */
	uint64_t idle_aborted;	 /* governed entries given up after select: work had come */
	uint64_t poll_entries;	 /* hits + immediate + expired, summed by the snapshot */
	uint64_t poll_hits;	 /* polls ended by work (NEED_RESCHED) that arrived while polling */
	uint64_t poll_immediate; /* polls that found work at their first test, just after
				  * setting POLLING (a wake in between skipped its IPI) */
	uint64_t poll_expired;	 /* polls ended by the window */
	uint64_t halts;		 /* halt states entered, including abandoned ones */
	uint64_t halts_aborted;	 /* halts abandoned before their HLT ran: the NEED_RESCHED
				  * re-test found work, or the host broke STI's shadow */
	uint64_t hlt;		 /* HLT instructions executed (= halts - halts_aborted) */
	uint64_t window_grows;
	uint64_t window_shrinks;
	uint64_t poll_cycles;		    /* TSC cycles in the poll state */
	uint64_t halt_cycles;		    /* TSC cycles in HLT */
	uint64_t barrier_poll_cycles;	    /* the quiesce barrier's wait inside a poll ... */
	uint64_t barrier_halt_cycles;	    /* ... and inside a halt: not idle (kernel/stats.c) */
	uint64_t poll_overshoot_cycles;	    /* polls that expired: time past the window, summed */
	uint64_t poll_overshoot_max_cycles; /* the largest single overshoot, ever */
	uint64_t polls_suspended; /* governed idle entries halted: steal above the threshold */
	uint64_t steal_ns;	  /* kvm-steal-time's total (filled in by stats_snapshot) */
	uint64_t shadow_breaks;	  /* interrupts taken on safe_halt()'s HLT before it ran */
};

struct thread;

struct cpu {
	struct cpu *self; /* must stay first: arch_this_cpu() reads offset 0 */
	uint32_t id;
	uint32_t apic_id;
	bool online;
	struct thread *current;
	struct thread *idle;
	struct thread *switch_prev; /* the thread just switched away from, until it is settled */
	struct cpu_stats stats;
	struct gov_cpu gov;	      /* the idle governor's state (kernel/policy/governors.h) */
	struct steal_gate steal_gate; /* haltpoll.steal_threshold= (kernel/policy/steal_gate.h) */
	/* The idle state in progress (kernel/idle.c): TSC at its start, 0 if none. */
	uint64_t idle_since;
	/* TSC when this CPU last noticed work while idle (poll exit, or back from HLT): the
	 * wake-up path's middle stamp, read by the thread that then runs here. */
	uint64_t idle_notice;
	uint64_t idle_entered; /* TSC when this CPU last entered an idle state */
	/* TSC at which the quiesce barrier's interrupt held this CPU inside its idle state, 0 if
	 * it does not: the idle time in progress stops there (kernel/stats.c). */
	uint64_t barrier_since;
	bool idle_polling;
	uint32_t idle_seq;
	/* The poll state's limit plan for the window last used (kernel/idle.c:poll_replan). */
	uint64_t poll_plan_ns, poll_plan_cycles;
	unsigned poll_plan_every;
	/* The governed entry's own state: an entry the governor has yet to hear about
	 * (kernel/policy/idle_entry.h). */
	struct idle_entry_cpu idle_entry;

	/* Written by any CPU (atomic RMW only): wake-up requests. A waker touches this one
	 * line: it pushes onto wake_list, then updates flags (kernel/sched.c). */
	uint32_t flags __attribute__((aligned(CACHELINE)));
	struct thread *wake_list;

	/* Owned by this CPU alone: only its schedule() (interrupts off) moves threads here. */
	struct runqueue rq __attribute__((aligned(CACHELINE)));

	struct arch_cpu arch __attribute__((aligned(CACHELINE)));
} __attribute__((aligned(CACHELINE)));

extern struct cpu cpus[MAX_CPUS];
extern unsigned int ncpus;

static inline struct cpu *this_cpu(void)
{
	return arch_this_cpu();
}

/* Points this CPU's GS base at cpus[id]. */
void percpu_init(unsigned int id);

#endif
