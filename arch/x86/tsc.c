/*
 * The kernel's only clock is the TSC: reading it never leaves the guest, unlike the PIT,
 * HPET or ACPI PM timer, each of which costs a VM exit per read. Those devices are touched
 * once, here, only when CPUID and KVM cannot tell us the frequency.
 */
#include "arch/x86/cpufeat.h"
#include "arch/x86/tsc.h"

uint64_t tsc_hz;
const char *tsc_source = "none";
uint64_t tsc_ns_mult;  /* ns = cycles * tsc_ns_mult >> 32 */
uint64_t tsc_cyc_mult; /* cycles = ns * tsc_cyc_mult >> 32 */

#define NSEC_PER_SEC 1000000000ull

static uint64_t from_cpuid15(void)
{
	struct cpuid_regs r;

	if (cpuid(0, 0).eax < 0x15)
		return 0;
	r = cpuid(0x15, 0);
	if (!r.eax || !r.ebx || !r.ecx)
		return 0;
	return (uint64_t)r.ecx * r.ebx / r.eax;
}

static uint64_t from_cpuid16(void)
{
	if (cpuid(0, 0).eax < 0x16)
		return 0;
	return (uint64_t)(cpuid(0x16, 0).eax & 0xffff) * 1000000;
}

static uint64_t from_kvm_leaf(void)
{
	if (!cpu_features.kvm || cpu_features.hv_max_leaf < 0x40000010)
		return 0;
	return (uint64_t)cpuid(0x40000010, 0).eax * 1000;
}

struct pvclock_time_info {
	uint32_t version;
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
} __attribute__((packed, aligned(32)));

static struct pvclock_time_info pvclock;

/* kvmclock converts TSC to ns with (tsc << shift) * mul >> 32; invert that. */
static uint64_t from_kvmclock(void)
{
	uint32_t version, mul;
	int8_t shift;
	uint64_t hz;

	if (!kvm_has(KVM_FEATURE_CLOCKSOURCE2))
		return 0;
	wrmsr(MSR_KVM_SYSTEM_TIME, (uint64_t)(uintptr_t)&pvclock | 1);
	do {
		version = __atomic_load_n(&pvclock.version, __ATOMIC_ACQUIRE);
		mul = pvclock.tsc_to_system_mul;
		shift = pvclock.tsc_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((version & 1) || version != __atomic_load_n(&pvclock.version, __ATOMIC_ACQUIRE));
	wrmsr(MSR_KVM_SYSTEM_TIME, 0); /* we only wanted the ratio */
	if (!mul)
		return 0;
	hz = (NSEC_PER_SEC << 32) / mul;
	return shift >= 0 ? hz >> shift : hz << -shift;
}

#define PIT_HZ	  1193182ull
#define PIT_CH0	  0x40
#define PIT_CMD	  0x43
#define PIT_TICKS (PIT_HZ / 20) /* 50 ms: long enough that read cost is noise */

static uint16_t pit_read(void)
{
	uint8_t lo, hi;

	outb(PIT_CMD, 0x00); /* latch channel 0 */
	lo = inb(PIT_CH0);
	hi = inb(PIT_CH0);
	return (uint16_t)(hi << 8 | lo);
}

/*
 * Channel 0 in rate-generator mode counts down from 65535 and wraps every 55 ms; we sum the
 * decrements between reads. Channel 2 (gated through port 0x61) is the usual choice, but
 * microvm has no port 0x61.
 */
static uint64_t from_pit(void)
{
	uint64_t t0, t1, elapsed = 0;
	uint16_t prev;
	unsigned stuck = 0;

	outb(PIT_CMD, 0x34); /* ch0, lo/hi byte, mode 2 */
	outb(PIT_CH0, 0xff);
	outb(PIT_CH0, 0xff);
	prev = pit_read();
	t0 = rdtsc();
	while (elapsed < PIT_TICKS) {
		uint16_t now = pit_read();

		if (now != prev)
			stuck = 0;
		else if (++stuck > 1000000)
			return 0; /* no PIT behind these ports, or it is not counting */
		elapsed += (uint16_t)(prev - now);
		prev = now;
	}
	t1 = rdtsc();
	outb(PIT_CMD, 0x30); /* one-shot mode: stop the periodic IRQ 0 */
	outb(PIT_CH0, 0x00);
	outb(PIT_CH0, 0x00);
	return (t1 - t0) * PIT_HZ / elapsed;
}

bool tsc_calibrate(void)
{
	static const struct {
		const char *name;
		uint64_t (*fn)(void);
	} methods[] = {
	    {"cpuid15", from_cpuid15}, {"kvm_leaf", from_kvm_leaf}, {"kvmclock", from_kvmclock},
	    {"pit", from_pit},	       {"cpuid16", from_cpuid16},
	};

	for (unsigned i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		uint64_t hz = methods[i].fn();

		if (hz) {
			tsc_hz = hz;
			tsc_source = methods[i].name;
			tsc_ns_mult = (NSEC_PER_SEC << 32) / hz;
			/* split so a TSC above 4.29 GHz cannot overflow 64 bits */
			tsc_cyc_mult = ((hz / NSEC_PER_SEC) << 32) +
				       ((hz % NSEC_PER_SEC) << 32) / NSEC_PER_SEC;
			return true;
		}
	}
	return false;
}

void tsc_delay_ns(uint64_t ns)
{
	uint64_t end = rdtsc() + ns_to_tsc(ns);

	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
}
