/*
 * A call that a hot path makes only while a flag is set, and that costs the path nothing but
 * the flag's test while it is clear: one compare with memory and one branch not taken. The
 * branch is an asm goto, because GCC turns a C test of a bool into a load, a test and a
 * branch; and the call is made from asm to a function that keeps every register it changes
 * (ARCH_COLD_CALLEE), because with a plain C call anywhere in a function the compiler keeps
 * the values live across it in callee-saved registers, saved and restored at the function's
 * entry and exit on every path, call or no call (measured: +66 instructions per pingpong
 * round trip for kernel/timeline.h's hooks as C calls, tools/insncount).
 */
#ifndef IDLELAB_ARCH_COLDCALL_H
#define IDLELAB_ARCH_COLDCALL_H

#include <stdbool.h>
#include <stdint.h>

/* Jumps to `label` (a label of the enclosing function) if the bool `flag` is true. */
#define arch_goto_if_set(flag, label)                                                              \
	__asm__ goto("cmpb $0, %0\n\tjne %l[" #label "]" : : "m"(flag) : "cc" : label)

/* The definition and declaration of a function called with arch_cold_call3(): it saves and
 * restores every register it changes, the callee-saved ones and the others alike. */
#define ARCH_COLD_CALLEE __attribute__((no_caller_saved_registers))

/*
 * Calls fn(a, b, c), an ARCH_COLD_CALLEE taking up to three integer arguments, telling the
 * compiler that no register changes. No "memory" clobber: the callee may only touch memory
 * its caller's code never reads (the caller's compiled view of memory stays valid), so
 * nothing needs reloading after it. Kernel code has no red zone (-mno-red-zone), so the
 * call's push cannot overwrite anything the caller keeps below its stack pointer.
 */
#define arch_cold_call3(fn, a, b, c)                                                               \
	__asm__ volatile("call %P0"                                                                \
			 :                                                                         \
			 : "i"(fn), "D"((uint64_t)(a)), "S"((uint64_t)(b)), "d"((uint64_t)(c))     \
			 : "cc")

#endif
