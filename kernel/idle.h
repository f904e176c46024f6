#ifndef IDLELAB_KERNEL_IDLE_H
#define IDLELAB_KERNEL_IDLE_H

#include <stdbool.h>
#include <stdint.h>

struct cpu;

/* BSP, once, after the knobs and CPUID are read and before any CPU idles: picks the
 * policy and calibrates the poll loop. */
void idle_setup(void);
/* BSP, once every CPU is online: the `@idlelab idle` record, with the MSR value read back. */
void idle_print_record(void);
/* Each CPU for itself, before its first idle entry: governor state, poll-control MSR. */
void idle_init_cpu(void);
/*
 * Interrupts off (on return too): enters idle states, each as the policy chooses, until
 * NEED_RESCHED is set on c (this CPU). The caller then schedules; kernel/sched.c calls
 * this from its idle thread and from a thread that blocks with nothing else to run.
 */
void idle_until_work(struct cpu *c);
/* trap.c's hook: an interrupt was taken on safe_halt()'s HLT before it ran (the host broke
 * STI's shadow) and the HLT is stepped past. Interrupts off. */
void idle_shadow_break(void);
/* kernel/quiesce.c's barrier interrupted this CPU (interrupts off): if inside an idle state,
 * its wait there, from t_in to its return, is not idle time. Returns whether it was. */
bool idle_barrier_begin(uint64_t t_in);
void idle_barrier_end(uint64_t t_in);
/*
 * Between windows, on the BSP with every other CPU parked at the quiesce barrier: idle_config
 * and its static branches from the knobs as they are now. Each CPU then writes its MSR at the
 * barrier's release (idle_reconfigure_msr) and, at its next idle entry, restarts its governor
 * if the policy or governor changed (idle_reconfigure_cpu, behind BRANCH_RECONFIGURE).
 */
void idle_reconfigure(void);
void idle_reconfigure_msr(void);
void idle_reconfigure_cpu(struct cpu *c);
/* The idle policy in force: "halt", "poll" or "haltpoll" (never "auto"). */
const char *idle_policy_name(void);
/* The CPU's current poll window (haltpoll's W), 0 under other policies. */
uint64_t idle_window_ns(const struct cpu *c);

#endif
