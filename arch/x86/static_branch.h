/*
 * A call that a hot path makes only when a run asks for it, and that costs the path one NOP
 * when it does not. Each site is a 5-byte NOP listed (with the label it would jump to) in
 * the section coldcall_sites; arch_cold_sites_enable() turns every site into a jump, once,
 * at boot. The call is made from asm to a function that keeps every register it changes
 * (ARCH_COLD_CALLEE), because with a plain C call anywhere in a function the compiler keeps
 * the values live across it in callee-saved registers, saved and restored at the function's
 * entry and exit on every path, call or no call. Measured on kernel/timeline.h's hooks
 * (tools/insncount, pingpong round trip under idle=haltpoll): as plain C calls behind a C
 * test of a bool, +66 instructions; as these calls behind a compare and branch, +30; behind
 * the NOP, +18.
 */
#ifndef IDLELAB_ARCH_COLDCALL_H
#define IDLELAB_ARCH_COLDCALL_H

#include <stdint.h>

/*
 * Falls through (a 5-byte NOP) until arch_cold_sites_enable(), then jumps to `label`, a label
 * of the enclosing function.
 */
#define arch_cold_branch(label)                                                                    \
	__asm__ goto("1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                                   \
		     ".pushsection coldcall_sites, \"a\"\n\t"                                      \
		     ".balign 8\n\t"                                                               \
		     ".quad 1b, %l[" #label "]\n\t"                                                \
		     ".popsection"                                                                 \
		     :                                                                             \
		     :                                                                             \
		     :                                                                             \
		     : label)

/*
 * Turns every arch_cold_branch() site into a jump. Code is patched while it may not run:
 * call it once, on the boot CPU, before any other CPU starts and before any site can run.
 */
void arch_cold_sites_enable(void);

/* The definition and declaration of a function called with arch_cold_call3(): it saves and
 * restores every register it changes, the callee-saved ones and the others alike. */
#define ARCH_COLD_CALLEE __attribute__((no_caller_saved_registers))

/*
 * Calls fn(a, b, c), an ARCH_COLD_CALLEE taking up to three integer arguments, telling the
 * compiler that no register changes. No "memory" clobber: the callee may only touch memory
 * its caller's code never reads (the caller's compiled view of memory stays valid), so
 * nothing needs reloading after it. Kernel code has no red zone (-mno-red-zone), so the
 * call's push cannot overwrite anything the caller keeps below its stack pointer. The call
 * is made at whatever alignment the caller's stack has, not the ABI's 16 bytes: a callee
 * must not need it (no over-aligned locals; -mgeneral-regs-only, so no SSE spills), which
 * GCC does not check.
 */
#define arch_cold_call3(fn, a, b, c)                                                               \
	__asm__ volatile("call %P0"                                                                \
			 :                                                                         \
			 : "i"(fn), "D"((uint64_t)(a)), "S"((uint64_t)(b)), "d"((uint64_t)(c))     \
			 : "cc")

/* arch_cold_call3() for a callee that writes memory its caller reads afterwards: the
 * "memory" clobber makes the caller reload what it had read before the call. */
#define arch_cold_call3_mem(fn, a, b, c)                                                           \
	__asm__ volatile("call %P0"                                                                \
			 :                                                                         \
			 : "i"(fn), "D"((uint64_t)(a)), "S"((uint64_t)(b)), "d"((uint64_t)(c))     \
			 : "cc", "memory")

#endif
