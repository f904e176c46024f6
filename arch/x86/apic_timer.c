#include "arch/x86/apic.h"
#include "arch/x86/apic_timer.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/tsc.h"

#define LVT_MASKED	 (1u << 16)
#define LVT_TSC_DEADLINE (2u << 17)
#define DIVIDE_BY_1	 0xb
#define CALIBRATE_NS	 (10 * 1000 * 1000ull)

bool apic_timer_deadline_mode;
uint64_t apic_timer_hz;
static uint64_t count_mult; /* APIC counts = TSC cycles * count_mult >> 32 */

/* Count mode: run the timer down from its maximum for 10 ms of TSC time. */
static bool calibrate(void)
{
	uint64_t t0, t1;
	uint32_t left;

	apic_reg_write(APIC_REG_LVT_TIMER, LVT_MASKED);
	apic_reg_write(APIC_REG_TIMER_DIV, DIVIDE_BY_1);
	apic_reg_write(APIC_REG_TIMER_INIT, 0xffffffffu);
	t0 = rdtsc();
	tsc_delay_ns(CALIBRATE_NS);
	left = apic_reg_read(APIC_REG_TIMER_CUR);
	t1 = rdtsc();
	apic_reg_write(APIC_REG_TIMER_INIT, 0);
	if (left == 0xffffffffu || t1 == t0)
		return false;
	apic_timer_hz = (uint64_t)(0xffffffffu - left) * tsc_hz / (t1 - t0);
	/* split to keep the shift from overflowing 64 bits */
	count_mult = ((apic_timer_hz / tsc_hz) << 32) + ((apic_timer_hz % tsc_hz) << 32) / tsc_hz;
	return apic_timer_hz != 0;
}

bool apic_timer_setup(void)
{
	apic_timer_deadline_mode = cpu_features.tsc_deadline;
	return apic_timer_deadline_mode || calibrate();
}

void apic_timer_init_cpu(uint8_t vector)
{
	if (apic_timer_deadline_mode) {
		apic_reg_write(APIC_REG_LVT_TIMER, LVT_TSC_DEADLINE | vector);
		/* SDM 10.5.4.1: the LVT write that selects TSC-deadline mode must be ordered
		 * before the first write of IA32_TSC_DEADLINE, or that write may be lost. */
		mb();
		wrmsr(MSR_TSC_DEADLINE, 0);
		return;
	}
	apic_reg_write(APIC_REG_TIMER_DIV, DIVIDE_BY_1);
	apic_reg_write(APIC_REG_LVT_TIMER, vector); /* one-shot */
	apic_reg_write(APIC_REG_TIMER_INIT, 0);
}

void apic_timer_arm(uint64_t deadline)
{
	uint64_t now, count;

	if (apic_timer_deadline_mode) {
		/* 0 would disarm; a deadline in the past fires immediately. */
		wrmsr(MSR_TSC_DEADLINE, deadline ? deadline : 1);
		return;
	}
	now = rdtsc();
	count = deadline > now
		    ? (uint64_t)(((unsigned __int128)(deadline - now) * count_mult) >> 32)
		    : 0;
	/* Too far ahead: fire at the limit and let the handler re-arm for the rest. */
	if (count > 0xffffffffu)
		count = 0xffffffffu;
	apic_reg_write(APIC_REG_TIMER_INIT, count ? (uint32_t)count : 1);
}

void apic_timer_disarm(void)
{
	if (apic_timer_deadline_mode)
		wrmsr(MSR_TSC_DEADLINE, 0);
	else
		apic_reg_write(APIC_REG_TIMER_INIT, 0);
}
