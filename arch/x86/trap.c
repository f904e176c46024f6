/*
 * Trap dispatch. Exceptions (vectors 0-31) are always fatal here: the kernel has no demand
 * paging or user mode, so any exception is a bug or a deliberate panic_test, and the useful
 * thing is a complete register dump and a distinct exit code.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "kernel/exit_codes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"

static irq_handler_t handlers[256];

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

static __attribute__((noreturn)) void exception_dump(const struct trap_frame *f)
{
	unsigned cpu = this_cpu()->id;

	printk("@idlelab exception cpu=%u vector=%lu name=\"%s\" error=0x%lx rip=0x%lx rsp=0x%lx "
	       "cr2=0x%lx",
	       cpu, f->vector, exception_names[f->vector], f->error, f->rip, f->rsp, read_cr2());
	printk("  rax=%016lx rbx=%016lx rcx=%016lx rdx=%016lx", f->rax, f->rbx, f->rcx, f->rdx);
	printk("  rsi=%016lx rdi=%016lx rbp=%016lx rsp=%016lx", f->rsi, f->rdi, f->rbp, f->rsp);
	printk("  r8 =%016lx r9 =%016lx r10=%016lx r11=%016lx", f->r8, f->r9, f->r10, f->r11);
	printk("  r12=%016lx r13=%016lx r14=%016lx r15=%016lx", f->r12, f->r13, f->r14, f->r15);
	printk("  rip=%016lx rflags=%016lx cs=%04lx ss=%04lx cr3=%016lx", f->rip, f->rflags, f->cs,
	       f->ss, read_cr3());
	kernel_exit(EXIT_EXCEPTION);
}

void trap_dispatch(struct trap_frame *f);
void trap_dispatch(struct trap_frame *f)
{
	irq_handler_t fn;

	if (f->vector < 32)
		exception_dump(f);
	fn = handlers[f->vector];
	if (fn) {
		fn(f);
		return;
	}
	printk("@idlelab error cpu=%u what=unexpected_interrupt vector=%lu", this_cpu()->id,
	       f->vector);
	kernel_exit(EXIT_PANIC);
}
