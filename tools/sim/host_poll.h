/*
 * KVM's host halt polling for one vCPU (docs/haltpoll-spec.md §2.1-2.7; docs/kvm-halt.md names
 * the kernels and what differs between them), as pure functions: the simulator's host model
 * and tools/replay's check of KVM's own traces run this one definition. One halt is:
 * hp_halt_begin (after the HLT exit found nothing pending) -> poll for the returned window or
 * not at all -> hp_halt_end with what happened, which returns the change kvm_halt_poll_ns
 * traces. Times are ns.
 */
#ifndef IDLELAB_SIM_HOST_POLL_H
#define IDLELAB_SIM_HOST_POLL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Which kvm_vcpu_halt: the forms differ in where the window meets max (the decisions of the
 * other steps are the same).
 */
enum hp_form {
	/* Linux >= 6.2 and the stable kernels with its Dec 2022 fixes (Debian's 6.1): the
	 * window is clamped to max as a halt begins, grow does not clamp */
	HP_FORM_2022 = 0,
	/* Linux 5.11 - 6.1.0: grow clamps to max, a halt polls with the window as stored (a
	 * max lowered by KVM_CAP_HALT_POLL is met at the next grow or shrink) */
	HP_FORM_2021,
};

/* The kvm module parameters (global) and the per-VM KVM_CAP_HALT_POLL override. */
struct hp_params {
	uint32_t halt_poll_ns;
	uint32_t grow;
	uint32_t grow_start;
	uint32_t shrink;
	bool vm_override; /* KVM_CAP_HALT_POLL was enabled: vm_max replaces halt_poll_ns */
	uint32_t vm_max;
	bool fixed; /* pre-dynamic KVM (Linux 4.0-4.2): every halt polls max, no grow/shrink */
	enum hp_form form; /* 0: the current one */
};

/* KVM's x86 defaults (spec §2.1), the shrink of Linux 6.11 and later. */
#define HP_X86_DEFAULTS                                                                            \
	((struct hp_params){.halt_poll_ns = 200000, .grow = 2, .grow_start = 10000, .shrink = 2})

/* Per-vCPU window and the stats of spec §2.6. */
struct hp_vcpu {
	uint32_t w;	   /* vcpu->halt_poll_ns (KVM's unsigned int): may exceed max until the
			    * next halt's clamp */
	bool poll_allowed; /* MSR_KVM_POLL_CONTROL bit 0 */
	uint64_t halt_exits;
	uint64_t attempted_poll;
	uint64_t successful_poll;
	uint64_t poll_invalid;
	uint64_t poll_success_ns;
	uint64_t poll_fail_ns;
	uint64_t wait_ns;
	uint64_t halt_wakeup;
	uint64_t grows;
	uint64_t shrinks;
};

void hp_vcpu_init(struct hp_vcpu *v, bool poll_allowed);
/* Spec §2.2: the VM's max if it used the capability, else the module parameter. */
uint32_t hp_max(const struct hp_params *p);
/* Step 1 of §2.3: every HLT exit counts, before anything else is decided. */
void hp_halt_exit(struct hp_vcpu *v);
/* Steps 2-3 under the parameters as the halt begins: returns the window to poll for, 0 for
 * no poll. */
uint32_t hp_halt_begin(const struct hp_params *p, struct hp_vcpu *v);

/* What one halt did, for steps 5-8. */
struct hp_halt {
	uint64_t window;  /* hp_halt_begin's answer: 0 = did not poll */
	uint64_t poll_ns; /* poll_end - start */
	bool success;	  /* the vCPU became runnable before the thread scheduled out */
	uint64_t wait_ns; /* time scheduled out (0 on success) */
	uint64_t halt_ns; /* total halted time, polling included */
	bool invalid;	  /* s390's invalid wakeup; never on x86 */
};

/* What the adjustment did to the window. grow and shrink are traced (kvm_halt_poll_ns, even
 * a grow that grow=0 leaves as it was); max 0 zeroes the window untraced. */
enum hp_change_kind {
	HP_KEEP,
	HP_GROW,
	HP_SHRINK,
	HP_ZERO
};
struct hp_change {
	enum hp_change_kind kind;
	uint32_t old, new;
};
static inline bool hp_change_traced(enum hp_change_kind k)
{
	return k == HP_GROW || k == HP_SHRINK;
}

/* Steps 5-8 under the parameters as the halt ends (KVM reads max again): stats (only if it
 * polled) and the window adjustment (only if allowed). */
struct hp_change hp_halt_end(const struct hp_params *p, struct hp_vcpu *v, const struct hp_halt *h);

#endif
