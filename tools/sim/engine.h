/*
 * The engine's internals shared by engine.c (the vCPU state machine: guest idle loop, POLL
 * flag, IPIs, timers, KVM's halt handling), workloads.c (the threads) and report.c.
 */
#ifndef IDLELAB_SIM_ENGINE_H
#define IDLELAB_SIM_ENGINE_H

#include "kernel/policy/governors.h"
#include "kernel/workloads/window_rule.h"
#include "lib/prng.h"
#include "tools/sim/events.h"
#include "tools/sim/sim.h"

/*
 * Where a vCPU is. Guest states run guest code; the six host states are one HLT from the
 * exit to the guest's return. Host CPU time is charged in every state but BLOCKED (charged
 * block_charge_ppm) and WAKING (the host scheduler's latency before the thread runs).
 */
enum vstate {
	V_RUN,	      /* a workload thread runs (thread_step, ipi_send) */
	V_WAKE_PATH,  /* idle loop -> schedule -> the woken thread (wake_path) */
	V_IDLE_ENTRY, /* thread blocked -> idle loop -> governor (idle_entry / idle_reentry) */
	V_GPOLL,      /* the guest's poll state */
	V_HEXIT,      /* the HLT exit, before KVM decides (halt_exit) */
	V_HPOLL,      /* KVM polls for the vCPU */
	V_HSLEEP,     /* nothing caught: KVM's way to the thread asleep (halt_sleep) */
	V_BLOCKED,    /* the vCPU thread sleeps in KVM */
	V_WAKING,     /* woken, waiting for the host to run it (wake_latency, timer_wake) */
	V_ENTRY,      /* VM entry after the halt (vm_entry) */
	V_HANDLER,    /* the guest's interrupt handlers after the HLT (irq_entry, timer_irq) */
};

enum ev_kind {
	EV_STATE_END, /* the current state's time is up */
	EV_TIMER,     /* the earliest of this CPU's timer deadlines */
	EV_IRQ,	      /* pending interrupts reach the running guest */
	EV_IPI,	      /* a reschedule IPI reaches the target's LAPIC */
	EV_HOST_WAKE, /* KVM sees the halted vCPU runnable */
	EV_WINDOW,    /* the measurement window opens or closes */
	EV_PREEMPT,   /* another host task wants the vCPU thread's CPU */
	EV_OTHER,     /* another host task wants a host CPU (other_per_s: any CPU) */
};

#define IRQ_RESCHED 1u
#define IRQ_TIMER   2u

/* The flag word of kernel/sched.c. */
#define F_NEED_RESCHED 1u
#define F_POLLING      2u
#define F_IPI_PENDING  4u

enum tstate {
	T_BLOCKED,
	T_RUNNABLE,
	T_RUNNING
};

struct sim;
struct sim_thread;

/* What a thread does when it next runs: work, maybe wake one thread, then block or sleep. */
struct thread_action {
	uint64_t work;
	struct sim_thread *wake;
	bool sleep;	   /* false: block until woken */
	uint64_t deadline; /* sleep: absolute ns */
	bool armed;	   /* sleep: the timer is armed (timer_arm paid) */
};

typedef void thread_run_fn(struct sim *s, struct sim_thread *t, uint64_t now,
			   struct thread_action *a);

struct sim_thread {
	unsigned cpu;
	enum tstate state;
	bool wake_pending;
	thread_run_fn *run;
	struct thread_action next; /* what the current run segment ends with */
	/* workload state */
	unsigned slot, phase;
	uint64_t t0, next_deadline, last_step;
	struct sim_thread *peer;
	struct prng rng;
};

struct vcpu {
	unsigned id;
	enum vstate state;
	uint64_t state_end;
	uint32_t state_gen, timer_gen, irq_gen;
	/* HLT exits so far: a host wake raised in an earlier halt is stale */
	uint32_t halt_gen;
	uint64_t t_acct; /* accounted up to here */
	uint32_t flags;
	unsigned irq_pending;
	/* of those, the ones KVM sees (an IPI in the LAPIC at once; a timer once the host's
	 * hrtimer for it fired: EV_HOST_WAKE for a halted vCPU, at its deadline for a running
	 * one), which alone keep a HLT from blocking or wake a halted vCPU
	 * (apic_has_pending_timer) */
	unsigned irq_seen;
	uint64_t irq_at; /* when the pending interrupts reach the running guest; 0: none */
	struct sim_thread *thread;
	/* timers */
	uint64_t sleep_deadline; /* 0: none */
	uint64_t tick_deadline;	 /* 0: no tick */
	uint64_t idle_deadline;	 /* the governor's timed halt (halt_limit); 0: none */
	/* the idle entry in progress */
	uint64_t t_entry, poll_limit, t_hlt;
	bool poll_immediate;
	bool timer_fired; /* EV_TIMER went off; re-armed once the handler ran */
	/* it took a VM exit since its thread's code last ran (a HLT, an ICR or TSC-deadline
	 * write, a handler's EOI): that code runs after the exit, at thread_step's price, else
	 * (the guest's poll loop caught the wake, the POLL flag spared the IPI) at
	 * thread_step_polled's; consumed by workloads.c step_cost */
	bool exited;
	/* a sleep armed inside its cut: when its timer's interrupt is taken, as the arm returns
	 * (0: none; engine.c thread_segment_done) */
	uint64_t due_at_arm;
	/* KVM's view of the halt in progress */
	uint64_t t_halt_start, hp_window, t_poll_end;
	bool hp_success;
	bool timer_woken;     /* the sleep in progress was ended by the guest's timer alone */
	uint64_t timer_slept; /* the halt's start to its timer's expiry (timer_cost()) */
	/* another host task has the thread's CPU: frozen from..until (charged nothing, its
	 * state's end and interrupts wait); cpu_taken_until: its CPU is taken while it sleeps
	 * (a poll it gave up, or another task that found the CPU idle: other_per_s), so a wake
	 * waits for that too */
	uint64_t preempt_from, preempt_until, cpu_taken_until;
	struct gov_cpu gov; /* the guest governor's own per-CPU state (kernel/policy) */
	struct hp_vcpu host;
	struct sim_gstats g;
};

#define SIM_MAX_HOST_CPUS 1024

struct sim {
	const struct sim_config *cfg;
	const uint64_t *c;	/* cfg->costs.v: the medians; use sim_cost() */
	const uint64_t *spread; /* cfg->costs.spread */
	const uint64_t *tail;	/* cfg->costs.tail */
	struct prng cost_rng;	/* the draws of costs with a spread, seeded by seed= */
	/* the host's other tasks: their own draws, so that none (preempt_per_s = 0) leaves
	 * every other draw as it was */
	struct prng preempt_rng;
	/* other_per_s: the host's CPUs (vCPU i's thread on CPU i, as pin=0+1+... puts it) and
	 * until when another task holds each */
	unsigned host_cpus;
	uint64_t other_until[SIM_MAX_HOST_CPUS];
	FILE *out;
	unsigned ncpus;
	struct vcpu cpu[SIM_MAX_CPUS];
	struct sim_thread threads[SIM_MAX_CPUS];
	unsigned nthreads;
	struct event_heap ev;
	uint64_t now;
	int policy;
	const char *policy_reason;
	int msr;
	bool pollflag, latency_req_zero;
	uint64_t tick_nsec, tick_period, check_ns;
	struct gov_params gp;
	const struct idle_governor *gov; /* cpuidle.governor=, the kernel's own code */
	/* the workload */
	unsigned wl_cpu[SIM_MAX_CPUS], wl_ncpus;
	int phase; /* 0 warm-up, 1 measuring, 2 stopped */
	uint64_t t_open, t_close, iters_target;
	unsigned pairs_done;
	struct hist hist[SIM_MAX_CPUS];
	uint64_t count[SIM_MAX_CPUS], interval_sum[SIM_MAX_CPUS];
	struct sim_gstats snap[SIM_MAX_CPUS];
	struct hp_vcpu host_snap[SIM_MAX_CPUS];
	uint64_t takeovers_snap[SIM_MAX_CPUS]; /* the governor's own count at the window's open */
	uint64_t script_pos;
	struct sim_thread *ring[SIM_MAX_CPUS];
	unsigned token;
	uint64_t lap_start;
};

/* An event that began at `since` is the window's: as the kernel's wl_measured(). */
static inline bool sim_measured(const struct sim *s, uint64_t since)
{
	return s->phase == 1 && began_inside(since, s->t_open);
}

/* engine.c services for the workloads */
void sim_thread_init(struct sim *s, struct sim_thread *t, unsigned cpu, thread_run_fn *run);
void sim_thread_start(struct sim *s, struct sim_thread *t); /* runnable at time 0 */
void sim_close_window(struct sim *s);
uint64_t sim_knob(const struct sim *s, enum knob_id id);
uint64_t sim_cost(struct sim *s, enum sim_cost_id id); /* one use's draw of a time cost */

/* workloads.c */
int wl_start(struct sim *s, FILE *err); /* creates threads; <0: refused (message printed) */
void wl_report(struct sim *s, uint64_t window_ns);

/* report.c */
void report_header(const struct sim *s);
void report_window(const struct sim *s, uint64_t window_ns);

#endif
