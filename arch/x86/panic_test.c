/*
 * Deliberate exceptions for testing the dump path. Not int3/int $n: this project's
 * emulated KVM stops the VM on those in ring 0 instead of delivering them.
 */
#include <stdint.h>

#include "kernel/knobs.h"
#include "kernel/panic_test.h"

/* A canonical address that no page table maps (PML4 slot 224). */
#define UNMAPPED_ADDR	  0x0000700000000000ull
#define NONCANONICAL_ADDR 0x8000000000000000ull

void panic_test_run(int which)
{
	volatile uint64_t zero = 0;

	switch (which) {
	case PANIC_TEST_UD:
		__asm__ volatile("ud2");
		break;
	case PANIC_TEST_DE:
		/* In asm: gcc folds 1 / x for unsigned x into (x == 1), which never traps. */
		__asm__ volatile("xor %%edx, %%edx; mov $1, %%eax; divq %0" ::"r"((uint64_t)zero)
				 : "rax", "rdx");
		break;
	case PANIC_TEST_PF:
		(void)*(volatile uint64_t *)UNMAPPED_ADDR;
		break;
	case PANIC_TEST_GP:
		(void)*(volatile uint64_t *)NONCANONICAL_ADDR;
		break;
	}
}
