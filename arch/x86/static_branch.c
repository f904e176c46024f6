/* The patching behind arch_cold_branch() (arch/x86/coldcall.h). */
#include <stddef.h>

#include "arch/x86/coldcall.h"
#include "arch/x86/cpu.h"

/* One site, as arch_cold_branch() lists it: the NOP's address and the label's. */
struct cold_site {
	uint64_t at;
	uint64_t target;
};

/* linker.ld brackets the section. */
extern const struct cold_site __start_coldcall_sites[], __stop_coldcall_sites[];

void arch_cold_sites_enable(void)
{
	/* Counted from the addresses: the two symbols are, to C, different objects. */
	size_t n = ((uintptr_t)__stop_coldcall_sites - (uintptr_t)__start_coldcall_sites) /
		   sizeof(struct cold_site);

	for (size_t i = 0; i < n; i++) {
		const struct cold_site *s = &__start_coldcall_sites[i];
		uint8_t *p = (uint8_t *)(uintptr_t)s->at;
		/* jmp rel32, from the end of the 5 bytes; the kernel lies within 2 GiB of itself */
		uint32_t rel = (uint32_t)(s->target - (s->at + 5));

		p[0] = 0xe9;
		for (int b = 0; b < 4; b++)
			p[1 + b] = (uint8_t)(rel >> (8 * b));
	}
	/* A serializing instruction: this CPU runs the patched bytes, not ones it fetched before
	 * (the other CPUs have not started). */
	(void)cpuid(0, 0);
}
