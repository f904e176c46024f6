#include "arch/x86/cpu.h"
#include "arch/x86/kvm.h"

int kvm_poll_control_set(bool host_may_poll)
{
	wrmsr(MSR_KVM_POLL_CONTROL, host_may_poll ? 1 : 0);
	return (int)(rdmsr(MSR_KVM_POLL_CONTROL) & 1);
}
