#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kernel/policy/knobs.h"
#include "kernel/printk.h"
#include "kernel/window.h"

static void hold(void)
{
	uint64_t ns = (uint64_t)knob(KNOB_window_hold), t0 = rdtsc();

	while (tsc_to_ns(rdtsc() - t0) < ns)
		cpu_relax();
}

void window_open(struct stats_snapshot *s, const char *what)
{
	printk("@idlelab window state=open what=%s t_ns=%lu", what, tsc_to_ns(rdtsc()));
	hold();
	stats_snapshot(s);
}

void window_close(struct stats_snapshot *s, const char *what)
{
	stats_snapshot(s);
	printk("@idlelab window state=close what=%s t_ns=%lu", what, tsc_to_ns(rdtsc()));
	hold();
}
