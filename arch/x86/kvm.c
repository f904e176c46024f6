#include "arch/x86/cpu.h"
#include "arch/x86/kvm.h"

int kvm_poll_control_set(bool host_may_poll)
{
	wrmsr(MSR_KVM_POLL_CONTROL, host_may_poll ? 1 : 0);
	return (int)(rdmsr(MSR_KVM_POLL_CONTROL) & 1);
}

/* The layout KVM writes (Linux's struct kvm_steal_time, 64 bytes). */
struct kvm_steal_time {
	uint64_t steal;
	uint32_t version;
	uint32_t flags;
	uint8_t preempted;
	uint8_t u8_pad[3];
	uint32_t pad[11];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct kvm_steal_time) == 64, "kvm_steal_time is 64 bytes");

static struct kvm_steal_time steal_area[KVM_STEAL_MAX_CPUS];
static bool steal_on[KVM_STEAL_MAX_CPUS];

void kvm_steal_time_enable(unsigned cpu)
{
	if (cpu >= KVM_STEAL_MAX_CPUS)
		return;
	/* RAM is identity-mapped (boot/entry.asm), so the area's address is its GPA. */
	wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&steal_area[cpu] | 1);
	steal_on[cpu] = true;
}

uint64_t kvm_steal_ns(unsigned cpu)
{
	const volatile struct kvm_steal_time *st = &steal_area[cpu];
	uint32_t v;
	uint64_t steal;

	if (cpu >= KVM_STEAL_MAX_CPUS || !steal_on[cpu])
		return 0;
	do {
		v = st->version;
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* rmb */
		steal = st->steal;
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* rmb */
	} while ((v & 1) || v != st->version);
	return steal;
}
