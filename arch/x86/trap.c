/*
 * Trap dispatch. Exceptions (vectors 0-31) are always fatal here: the kernel has no demand
 * paging or user mode, so any exception is a bug or a deliberate panic_test. What to do
 * about a fatal trap (dump, exit code) is the kernel's business: it registers the hooks,
 * so this file knows nothing above arch/.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"

static irq_handler_t handlers[256];
static trap_fatal_fn fatal_hook;
static void (*irq_exit_hook)(void);
static void (*shadow_break_hook)(void);

static const char *const exception_names[32] = {
    "divide error",
    "debug",
    "NMI",
    "breakpoint",
    "overflow",
    "bound range exceeded",
    "invalid opcode",
    "device not available",
    "double fault",
    "coprocessor segment overrun",
    "invalid TSS",
    "segment not present",
    "stack-segment fault",
    "general protection",
    "page fault",
    "reserved (15)",
    "x87 FP error",
    "alignment check",
    "machine check",
    "SIMD FP error",
    "virtualization",
    "control protection",
    "reserved (22)",
    "reserved (23)",
    "reserved (24)",
    "reserved (25)",
    "reserved (26)",
    "reserved (27)",
    "hypervisor injection",
    "VMM communication",
    "security",
    "reserved (31)",
};

void irq_register(uint8_t vector, irq_handler_t fn)
{
	handlers[vector] = fn;
}

void trap_set_hooks(trap_fatal_fn fatal, void (*irq_exit)(void), void (*shadow_break)(void))
{
	fatal_hook = fatal;
	irq_exit_hook = irq_exit;
	shadow_break_hook = shadow_break;
}

const char *trap_exception_name(uint64_t vector)
{
	return vector < 32 ? exception_names[vector] : "interrupt";
}

/* With no hook yet (a fault before the kernel registered one) all we can do is stop. */
static __attribute__((noreturn)) void fatal(const struct trap_frame *f)
{
	if (fatal_hook)
		fatal_hook(f);
	halt_forever();
}

void trap_dispatch(struct trap_frame *f);
void trap_dispatch(struct trap_frame *f)
{
	irq_handler_t fn;

	fn = f->vector < 32 ? 0 : handlers[f->vector];
	if (!fn)
		fatal(f);
	/*
	 * An interrupt taken on safe_halt()'s HLT, before it ran: STI's shadow covers the HLT,
	 * so a correct CPU takes it only once the HLT has begun, and returns past it. A host that
	 * drops the shadow across a VM exit (QEMU 7.2's emulated SVM, docs/notebook/
	 * 2026-12-03-bar-noise-floor.md) delivers it here, and returning to the HLT would sleep
	 * with the wake already handled: return past the HLT instead, as if it had run and been
	 * woken. The HLT never ran, so the host counted no exit for it: the hook says so.
	 * The handler sees the stepped rip.
	 */
	if (f->rip == (uint64_t)arch_safe_halt_hlt) {
		f->rip++; /* HLT is one byte */
		if (shadow_break_hook)
			shadow_break_hook();
	}
	fn(f);
	/* The one interrupt return path: preemption is decided here, for every vector. */
	if (irq_exit_hook)
		irq_exit_hook();
}
