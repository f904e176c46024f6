/*
 * What the kernel does about a fatal trap: a complete register dump as an `exception`
 * record (or an `error` record for an interrupt nobody handles) and a distinct exit code.
 * arch/x86/trap.c calls these through the hooks registered here, so arch/ stays below the
 * kernel.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "kernel/exit_codes.h"
#include "kernel/idle.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/trap_report.h"

static __attribute__((noreturn)) void trap_fatal(const struct trap_frame *f)
{
	unsigned cpu = this_cpu()->id;

	if (f->vector >= 32) {
		printk("@idlelab error cpu=%u what=unexpected_interrupt vector=%lu", cpu,
		       f->vector);
		kernel_exit(EXIT_PANIC);
	}
	printk("@idlelab exception cpu=%u vector=%lu name=\"%s\" error=0x%lx rip=0x%lx rsp=0x%lx "
	       "cr2=0x%lx",
	       cpu, f->vector, trap_exception_name(f->vector), f->error, f->rip, f->rsp,
	       read_cr2());
	printk("  rax=%016lx rbx=%016lx rcx=%016lx rdx=%016lx", f->rax, f->rbx, f->rcx, f->rdx);
	printk("  rsi=%016lx rdi=%016lx rbp=%016lx rsp=%016lx", f->rsi, f->rdi, f->rbp, f->rsp);
	printk("  r8 =%016lx r9 =%016lx r10=%016lx r11=%016lx", f->r8, f->r9, f->r10, f->r11);
	printk("  r12=%016lx r13=%016lx r14=%016lx r15=%016lx", f->r12, f->r13, f->r14, f->r15);
	printk("  rip=%016lx rflags=%016lx cs=%04lx ss=%04lx cr3=%016lx", f->rip, f->rflags, f->cs,
	       f->ss, read_cr3());
	kernel_exit(EXIT_EXCEPTION);
}

void trap_report_init(void)
{
	trap_set_hooks(trap_fatal, sched_irq_exit, idle_shadow_break);
}
