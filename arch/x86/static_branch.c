/* The patching behind arch_static_branch() (arch/x86/static_branch.h). */
#include <stddef.h>

#include "arch/x86/static_branch.h"
#include "arch/x86/cpu.h"

/* One site, as arch_static_branch() lists it: the NOP's address, the label's, its key. */
struct static_branch_site {
	uint64_t at;
	uint64_t target;
	uint64_t key;
};

/* linker.ld brackets the section. */
extern const struct static_branch_site __start_static_branch_sites[], __stop_static_branch_sites[];

/* The 5-byte NOP arch_static_branch() emits (0f 1f 44 00 00). */
static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

void arch_static_branches_set(unsigned key, bool on)
{
	/* Counted from the addresses: the two symbols are, to C, different objects. */
	size_t n =
	    ((uintptr_t)__stop_static_branch_sites - (uintptr_t)__start_static_branch_sites) /
	    sizeof(struct static_branch_site);

	for (size_t i = 0; i < n; i++) {
		const struct static_branch_site *s = &__start_static_branch_sites[i];
		uint8_t *p = (uint8_t *)(uintptr_t)s->at;
		/* jmp rel32, from the end of the 5 bytes; the kernel lies within 2 GiB of itself */
		uint32_t rel = (uint32_t)(s->target - (s->at + 5));

		if (s->key != key) /* another switch's site */
			continue;
		if (!on) {
			for (int b = 0; b < 5; b++)
				p[b] = nop5[b];
			continue;
		}
		p[0] = 0xe9;
		for (int b = 0; b < 4; b++)
			p[1 + b] = (uint8_t)(rel >> (8 * b));
	}
	/* A serializing instruction: this CPU runs the patched bytes, not ones it fetched before.
	 * The others have not started, or are parked in the quiesce barrier's interrupt handler
	 * and serialize on its IRET before they can reach a site. */
	(void)cpuid(0, 0);
}
