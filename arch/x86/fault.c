#include <stdint.h>

#include "arch/x86/fault.h"

/* A canonical address that no page table maps (PML4 slot 224). */
#define UNMAPPED_ADDR	  0x0000700000000000ull
#define NONCANONICAL_ADDR 0x8000000000000000ull

void fault_invalid_opcode(void)
{
	__asm__ volatile("ud2");
}

void fault_divide_error(void)
{
	volatile uint64_t zero = 0;

	/* In asm: gcc folds 1 / x for unsigned x into (x == 1), which never traps. */
	__asm__ volatile("xor %%edx, %%edx; mov $1, %%eax; divq %0" ::"r"((uint64_t)zero)
			 : "rax", "rdx");
}

void fault_page_fault(void)
{
	(void)*(volatile uint64_t *)UNMAPPED_ADDR;
}

void fault_null_dereference(void)
{
	volatile uint64_t *null = 0;

	__asm__ volatile("" : "+r"(null)); /* hide the null from the compiler, which may trap */
	(void)null[FAULT_NULL_OFFSET / sizeof(*null)];
}

void fault_general_protection(void)
{
	(void)*(volatile uint64_t *)NONCANONICAL_ADDR;
}
