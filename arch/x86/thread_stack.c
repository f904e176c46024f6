#include "arch/x86/switch.h"

extern char arch_thread_entry[];

/* Matches arch_switch's pop order: r15 r14 r13 r12 rbx rbp, then the return address. */
uint64_t arch_thread_stack_init(void *stack_top, void *arg)
{
	uint64_t *sp = (uint64_t *)((uintptr_t)stack_top & ~15ull);

	*--sp = 0; /* never used: arch_thread_entry does not return */
	*--sp = (uint64_t)(uintptr_t)arch_thread_entry;
	*--sp = 0;			  /* rbp */
	*--sp = 0;			  /* rbx */
	*--sp = (uint64_t)(uintptr_t)arg; /* r12 */
	*--sp = 0;			  /* r13 */
	*--sp = 0;			  /* r14 */
	*--sp = 0;			  /* r15 */
	return (uint64_t)(uintptr_t)sp;
}
