/*
 * idlelab-sim: a discrete-event model of N vCPUs idling under KVM. The guest side runs the
 * kernel's own code (kernel/policy/haltpoll.h, idle_policy.c, kernel/knobs, lib/histogram.c);
 * the host side is tools/sim/host_poll.c; every other cost comes from a cost table
 * (tools/sim/costs.c). All times are integer ns of simulated time.
 */
#ifndef IDLELAB_SIM_H
#define IDLELAB_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kernel/policy/haltpoll.h"
#include "lib/histogram.h"
#include "kernel/knobs/knobs.h"
#include "tools/sim/host_poll.h"

#define SIM_MAX_CPUS   64
#define SIM_SCRIPT_MAX 65536 /* periods a script= file may hold */
#define SIM_EXIT_BAD   2     /* a bad configuration or cost table */

/*
 * What each step of the idle and wake-up paths costs. Names are the cost file's keys
 * (tools/sim/costs/README in costs.c's header comment says what each one covers).
 */
#define SIM_COSTS(X)                                                                               \
	X(ipi_send)                                                                                \
	X(ipi_send_awake)                                                                          \
	X(ipi_latency)                                                                             \
	X(ipi_running)                                                                             \
	X(halt_exit)                                                                               \
	X(halt_sleep)                                                                              \
	X(vm_entry)                                                                                \
	X(poll_entry)                                                                              \
	X(wake_latency)                                                                            \
	X(wake_entry)                                                                              \
	X(timer_wake)                                                                              \
	X(timer_entry)                                                                             \
	X(timer_slack)                                                                             \
	X(timer_wake_long)                                                                         \
	X(timer_entry_long)                                                                        \
	X(timer_slack_long)                                                                        \
	X(timer_poll_slack)                                                                        \
	X(timer_sleep_short)                                                                       \
	X(timer_sleep_long)                                                                        \
	X(timer_running)                                                                           \
	X(host_poll_iter)                                                                          \
	X(guest_poll_iter)                                                                         \
	X(poll_wake)                                                                               \
	X(irq_entry)                                                                               \
	X(timer_irq)                                                                               \
	X(timer_arm)                                                                               \
	X(sleep_step)                                                                              \
	X(sleep_cut)                                                                               \
	X(wake_path)                                                                               \
	X(idle_entry)                                                                              \
	X(idle_reentry)                                                                            \
	X(thread_step)                                                                             \
	X(thread_step_polled)                                                                      \
	X(block_charge_ppm)                                                                        \
	X(wake_cold_ppm)                                                                           \
	X(wake_cold_max)                                                                           \
	X(preempt)                                                                                 \
	X(preempt_per_s)                                                                           \
	X(other_run)                                                                               \
	X(other_per_s)                                                                             \
	X(host_cpus)

#define SIM__COST_ENUM(n) COST_##n,
enum sim_cost_id {
	SIM_COSTS(SIM__COST_ENUM) COST__COUNT
};

struct sim_costs {
	uint64_t v[COST__COUNT];
	/* each cost's 90th percentile less its median, 0 for a constant (costs.c: `~`) */
	uint64_t spread[COST__COUNT];
	/* each cost's 99th percentile less its 90th, 0 for none (costs.c: a second `~`) */
	uint64_t tail[COST__COUNT];
	char source[256]; /* what the table was read from, for the sim record */
};

extern const char *const sim_cost_names[COST__COUNT];

/* Everything a run is: the guest's knobs (parsed by the kernel's parser) and the host's. */
struct sim_config {
	struct knob_values knobs;
	unsigned smp;
	struct hp_params host;
	struct sim_costs costs;
	unsigned trace; /* 1: an @idlelab trace line per guest idle entry; 2: and a kvm_halt line
			 * per halt as KVM timed it */
	/* A replayed idle sequence (script=FILE; tests): CPU 0 sleeps these lengths in turn
	 * instead of running a workload. Where script_halt[i] is not 0 and period i halts, the
	 * wake comes that long after the halt begins instead (a recorded halt's residency).
	 * script_window: haltpoll's window on CPU 0 at the start, its last state a halt. */
	const uint64_t *script;
	const uint64_t *script_halt;
	unsigned script_len;
	bool script_window_set;
	uint64_t script_window;
};

/* Guest counters of one CPU, which report.c makes the `cpu` record's fields of
 * (kernel/cpu_record.h). */
struct sim_gstats {
	uint64_t ctx_switches, wakeups_local, wakeups_remote, ipi_sent, ipi_avoided, ipi_received,
	    timer_irqs, ticks, idle_entries, poll_entries, poll_hits, poll_immediate, poll_expired,
	    halts, halts_aborted, hlt, grow, shrink, poll_ns, halt_ns, poll_overshoot_ns,
	    poll_overshoot_max_ns;
	uint64_t host_cpu_ns; /* the vCPU thread's CPU time, as the host measures it */
	uint64_t preemptions; /* the host's other tasks took its CPU (costs: preempt_per_s) */
};

struct sim_result; /* opaque to the workloads */

/* args.c: argv -> config. Returns 0, or SIM_EXIT_BAD having printed one line to err. */
int sim_parse_args(int argc, char **argv, struct sim_config *cfg, FILE *err);

/* costs.c. `prims` (sim_costs_parse_text) holds SIM_NPRIMS figures, -1 where the results
 * folder has none: bench=exits's primitives and the wake-path stamps (medians, ns), then the
 * wake path's instructions per round trip by phase (user, wake, block, enter, run), then the
 * 90th percentiles of the first 15, then the cost table boot's vCPU threads' halts by part
 * (thread_halt, thread_kick, thread_wake, thread_entry after an IPI's wake; thread_halt_timer,
 * thread_wake_timer, thread_entry_timer, thread_timer_late after a timer's; thread_preempt, a
 * vCPU thread switched out runnable until it ran again) and their p90s, then bench=exits' eoi
 * and tsc_deadline and their p90s, then thread_preempt_per_s (how often, per second on a CPU),
 * then the timer-woken halts after a long sleep (thread_wake_timer_long,
 * thread_entry_timer_long, thread_timer_late_long) and each class's sleep (thread_timer_slept,
 * thread_timer_slept_long), then those five's p90s, then bench=exits' ipi_poll_rtt and its
 * p90, then bench=exits' sleeps (sleep_arm, sleep_entry, timer_sleep, then their p90s), then
 * the thread parts' p99s, then bench=exits' sleep_cut and its p90, then the traced boot's other
 * tasks (thread_other_run, its p90 and p99, thread_other_per_s, thread_host_cpus), then
 * bench=exits' timer_poll and its p90, then bench=exits' sleep_run and its p90. */
#define SIM_NPRIMS 99
int sim_costs_load(const char *spec, struct sim_costs *c, char *err, size_t errlen);
int sim_costs_parse_text(const char *text, const char *what, const double *prims,
			 struct sim_costs *c, char *err, size_t errlen);

/* engine.c: runs the configuration and prints every record to out. */
int sim_run(const struct sim_config *cfg, FILE *out);

#endif
