#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "lib/string.h"

struct cpu_features cpu_features;

static void copy_sig(char *dst, uint32_t a, uint32_t b, uint32_t c)
{
	memcpy(dst, &a, 4);
	memcpy(dst + 4, &b, 4);
	memcpy(dst + 8, &c, 4);
	dst[12] = '\0';
}

static void detect_hypervisor(struct cpu_features *f)
{
	struct cpuid_regs r = cpuid(0x40000000, 0);

	copy_sig(f->hv_sig, r.ebx, r.ecx, r.edx);
	f->hv_max_leaf = r.eax;
	/* KVM pads its signature with NULs: "KVMKVMKVM\0\0\0". */
	f->kvm = memcmp(f->hv_sig, "KVMKVMKVM", 9) == 0;
	if (!f->kvm)
		return;
	r = cpuid(0x40000001, 0);
	f->kvm_features = r.eax;
	f->kvm_hints = r.edx;
}

void cpufeat_detect(void)
{
	struct cpu_features *f = &cpu_features;
	struct cpuid_regs r = cpuid(0, 0);
	uint32_t max_ext;

	copy_sig(f->vendor, r.ebx, r.edx, r.ecx);
	r = cpuid(1, 0);
	f->x2apic = (r.ecx >> 21) & 1;
	f->tsc_deadline = (r.ecx >> 24) & 1;
	f->hypervisor = (r.ecx >> 31) & 1;
	max_ext = cpuid(0x80000000, 0).eax;
	if (max_ext >= 0x80000001)
		f->gbpages = (cpuid(0x80000001, 0).edx >> 26) & 1;
	if (max_ext >= 0x80000007)
		f->invariant_tsc = (cpuid(0x80000007, 0).edx >> 8) & 1;
	if (f->hypervisor)
		detect_hypervisor(f);
}
