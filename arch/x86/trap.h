#ifndef IDLELAB_ARCH_TRAP_H
#define IDLELAB_ARCH_TRAP_H

#include <stdint.h>

/* Laid out by arch/x86/isr.asm: registers as pushed, then vector, error code, CPU frame. */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

typedef void (*irq_handler_t)(struct trap_frame *f);

/* Vectors 32..255; a handler acknowledges its own interrupt (EOI). */
void irq_register(uint8_t vector, irq_handler_t fn);

/*
 * The kernel's side of trap handling. fatal runs for every exception and for an interrupt
 * with no handler, and must not return; irq_exit runs after every handled interrupt, with
 * interrupts still off; shadow_break before the handler of an interrupt taken on
 * safe_halt()'s HLT before it ran (a host that dropped STI's shadow; trap_dispatch returns
 * past the HLT).
 */
typedef __attribute__((noreturn)) void (*trap_fatal_fn)(const struct trap_frame *f);
void trap_set_hooks(trap_fatal_fn fatal, void (*irq_exit)(void), void (*shadow_break)(void));

/* "page fault" and so on for vectors 0..31; "interrupt" above. */
const char *trap_exception_name(uint64_t vector);

#endif
