#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "lib/string.h"

#define TRAMPOLINE_PHYS 0x8000 /* SIPI vector 0x08; boot/ap_trampoline.asm is linked here */
#define PARAMS_OFFSET	8

/* Mirrors the parameter block at the top of boot/ap_trampoline.asm. */
struct ap_boot_params {
	uint64_t cr3, entry, stack, cpu;
	volatile uint64_t alive;
};

extern const uint8_t ap_trampoline_start[], ap_trampoline_end[];

void smp_start_ap(uint32_t apic_id, uint64_t cpu, void *stack_top, ap_entry_t entry)
{
	uint8_t *tramp = (uint8_t *)TRAMPOLINE_PHYS;
	struct ap_boot_params *p = (struct ap_boot_params *)(tramp + PARAMS_OFFSET);

	memcpy(tramp, ap_trampoline_start,
	       (size_t)((uintptr_t)ap_trampoline_end - (uintptr_t)ap_trampoline_start));
	p->cr3 = read_cr3();
	p->entry = (uint64_t)(uintptr_t)entry;
	p->stack = (uint64_t)(uintptr_t)stack_top;
	p->cpu = cpu;
	p->alive = 0;

	/* The MP spec sequence: INIT, 10 ms, SIPI, 200 us, SIPI. A running CPU ignores a
	 * SIPI, so the second one is only for a CPU that missed the first; skip it otherwise. */
	apic_send_init(apic_id);
	tsc_delay_ns(10 * 1000 * 1000);
	apic_send_sipi(apic_id, TRAMPOLINE_PHYS >> 12);
	tsc_delay_ns(200 * 1000);
	if (!p->alive)
		apic_send_sipi(apic_id, TRAMPOLINE_PHYS >> 12);
}
