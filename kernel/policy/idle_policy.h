/*
 * Which idle policy a boot runs, and what MSR_KVM_POLL_CONTROL each CPU writes: pure
 * decisions from the knobs and what CPUID said, so they are unit-tested on the host.
 */
#ifndef IDLELAB_KERNEL_IDLE_POLICY_H
#define IDLELAB_KERNEL_IDLE_POLICY_H

#include <stdbool.h>

#include "kernel/knobs/knobs.h"

struct idle_env {
	bool kvm;	    /* KVM's paravirt CPUID leaves are present */
	bool realtime_hint; /* KVM_HINTS_REALTIME: vCPUs have dedicated pCPUs */
	bool force;	    /* cpuidle_haltpoll.force=1 */
	bool pollctl;	    /* KVM_FEATURE_POLL_CONTROL */
};

/*
 * Resolves idle=auto the way Linux loads cpuidle-haltpoll: only on KVM, and only with the
 * REALTIME hint or force. Returns one of IDLE_HALT, IDLE_POLL, IDLE_HALTPOLL and a short
 * reason for the boot record.
 */
int idle_policy_choose(int knob_idle, const struct idle_env *env, const char **reason);

/* True if a CPU running `policy` spins in the guest (so host polling would double it). */
bool idle_policy_polls(int policy);

/* The MSR value (1: host may poll, 0: it must not) a CPU writes, or -1: write nothing. */
int hostpoll_msr_value(int knob_hostpoll, int policy, const struct idle_env *env);

#endif
