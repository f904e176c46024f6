#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kernel/exit_codes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/timer.h"
#include "kernel/watchdog.h"

static struct timer wd;
static unsigned wd_cpu;
static uint64_t wd_ns;

static void expired(struct timer *t)
{
	printk("@idlelab watchdog cpu=%u what=\"%s\" limit_ns=%lu", this_cpu()->id,
	       (const char *)t->arg, wd_ns);
	kernel_exit(EXIT_WATCHDOG);
}

void watchdog_start(uint64_t ns, const char *what)
{
	uint64_t flags = irq_save();

	wd.fn = expired;
	wd.arg = (void *)what;
	wd_cpu = this_cpu()->id;
	wd_ns = ns;
	timer_arm(&wd, rdtsc() + ns_to_tsc(ns));
	irq_restore(flags);
}

void watchdog_stop(void)
{
	uint64_t flags = irq_save();

	if (this_cpu()->id != wd_cpu)
		panic("watchdog_stop on CPU %u, armed on CPU %u", this_cpu()->id, wd_cpu);
	timer_cancel(&wd);
	irq_restore(flags);
}
