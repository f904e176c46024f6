/* CPU and hypervisor features, read once on the BSP from CPUID. */
#ifndef IDLELAB_ARCH_CPUFEAT_H
#define IDLELAB_ARCH_CPUFEAT_H

#include <stdbool.h>
#include <stdint.h>

/* KVM paravirt CPUID leaf 0x40000001, EAX feature bits and EDX hint bits. */
#define KVM_FEATURE_CLOCKSOURCE2   3
#define KVM_FEATURE_STEAL_TIME	   5
#define KVM_FEATURE_PV_EOI	   6
#define KVM_FEATURE_PV_UNHALT	   7
#define KVM_FEATURE_PV_SEND_IPI	   11
#define KVM_FEATURE_POLL_CONTROL   12
#define KVM_FEATURE_PV_SCHED_YIELD 13
#define KVM_HINTS_REALTIME	   0

struct cpu_features {
	char vendor[13];
	bool x2apic;
	bool tsc_deadline;
	bool invariant_tsc;
	bool gbpages;
	bool hypervisor; /* CPUID.1:ECX[31] */
	char hv_sig[13]; /* signature at leaf 0x40000000, e.g. "KVMKVMKVM" */
	uint32_t hv_max_leaf;
	bool kvm;	       /* the signature is KVM's */
	uint32_t kvm_features; /* 0x40000001 EAX */
	uint32_t kvm_hints;    /* 0x40000001 EDX */
};

extern struct cpu_features cpu_features;

void cpufeat_detect(void);

static inline bool kvm_has(unsigned bit)
{
	return cpu_features.kvm && (cpu_features.kvm_features >> bit) & 1;
}

#endif
