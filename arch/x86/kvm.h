/* KVM paravirt controls the guest writes. */
#ifndef IDLELAB_ARCH_KVM_H
#define IDLELAB_ARCH_KVM_H

#include <stdbool.h>

/*
 * MSR_KVM_POLL_CONTROL for the calling vCPU: false tells the host not to poll when this
 * vCPU halts. Only call it when CPUID offers KVM_FEATURE_POLL_CONTROL (else #GP on hosts
 * that enforce PV features). Reads back what the host holds.
 */
int kvm_poll_control_set(bool host_may_poll);

#endif
