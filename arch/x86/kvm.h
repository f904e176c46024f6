/* KVM paravirt controls the guest writes. */
#ifndef IDLELAB_ARCH_KVM_H
#define IDLELAB_ARCH_KVM_H

#include <stdbool.h>
#include <stdint.h>

/*
 * MSR_KVM_POLL_CONTROL for the calling vCPU: false tells the host not to poll when this
 * vCPU halts. Only call it when CPUID offers KVM_FEATURE_POLL_CONTROL (else #GP on hosts
 * that enforce PV features). Reads back what the host holds.
 */
int kvm_poll_control_set(bool host_may_poll);

/*
 * kvm-steal-time (KVM_FEATURE_STEAL_TIME): the host writes how long this vCPU was runnable
 * but not running (ns, since the area was registered) into a per-CPU area the guest names
 * with MSR_KVM_STEAL_TIME. kvm_steal_time_enable registers CPU `cpu`'s area (call it on that
 * CPU, only when CPUID offers the feature); kvm_steal_ns reads it with the version protocol
 * (odd version: being updated, retry). 0 for a CPU that never registered.
 */
#define KVM_STEAL_MAX_CPUS 64
void kvm_steal_time_enable(unsigned cpu);
uint64_t kvm_steal_ns(unsigned cpu);

#endif
