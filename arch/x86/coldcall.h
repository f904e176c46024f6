/*
 * A call that a hot path makes only while a flag is set, and that costs the path nothing but
 * the flag's test while it is clear: one compare with memory and one branch not taken. The
 * branch is an asm goto, because GCC turns a C test of a bool into a load, a test and a
 * branch; and the call goes through a stub (coldcall.asm) that keeps every register, because
 * with a plain C call anywhere in a function the compiler keeps the values live across it in
 * callee-saved registers, saved and restored at the function's entry and exit on every path,
 * call or no call (measured: +66 instructions per pingpong round trip for kernel/timeline.h's
 * hooks as C calls, tools/insncount).
 */
#ifndef IDLELAB_ARCH_COLDCALL_H
#define IDLELAB_ARCH_COLDCALL_H

#include <stdbool.h>
#include <stdint.h>

/* Jumps to `label` (a label of the enclosing function) if the bool `flag` is true. */
#define arch_goto_if_set(flag, label)                                                              \
	__asm__ goto("cmpb $0, %0\n\tjne %l[" #label "]" : : "m"(flag) : "cc" : label)

/*
 * Calls fn(a, b, c) (a C function taking up to three integer arguments) through
 * arch_cold_call, which saves every caller-saved register and the flags around it. fn goes in
 * r11, which no instruction needs (rax would be taken from the cmpxchg loops these hooks sit
 * in). No "memory" clobber: the callee may only touch memory its caller's code never reads
 * (the caller's compiled view of memory stays valid), so nothing needs reloading after it.
 */
#define arch_cold_call3(fn, a, b, c)                                                               \
	do {                                                                                       \
		register void (*arch_cc_fn_)(unsigned, unsigned, uint64_t) __asm__("r11") = (fn);  \
		__asm__ volatile("call arch_cold_call"                                             \
				 :                                                                 \
				 : "r"(arch_cc_fn_), "D"((uint64_t)(a)), "S"((uint64_t)(b)),       \
				   "d"((uint64_t)(c))                                              \
				 : "cc");                                                          \
	} while (0)

#endif
