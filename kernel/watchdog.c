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
static const uint64_t *wd_progress; /* watchdog_progress(): NULL, a bound on length */
static uint64_t wd_seen;
/* watchdog_progress() calls, each a sign of life: the switch back to a bound on length at a
 * run's end must not inherit a timer armed up to a whole bound earlier, or a report printed
 * just after it can be called a hang. Written anywhere, read by expired() alone on wd_cpu; a
 * count read late only re-arms once more. */
static uint64_t wd_marks;
static uint64_t wd_marks_seen;

/* Runs on wd_cpu, from its timer interrupt: re-arming here is safe (timer.c re-peeks). */
static void expired(struct timer *t)
{
	uint64_t marks = __atomic_load_n(&wd_marks, __ATOMIC_ACQUIRE);
	const uint64_t *progress = __atomic_load_n(&wd_progress, __ATOMIC_ACQUIRE);
	uint64_t now = progress ? __atomic_load_n(progress, __ATOMIC_RELAXED) : wd_seen;

	if (marks != wd_marks_seen || now != wd_seen) {
		wd_marks_seen = marks;
		wd_seen = now;
		timer_arm(t, rdtsc() + ns_to_tsc(wd_ns));
		return;
	}
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
	wd_progress = 0;
	wd_seen = 0; /* only expired() reads and writes it after this, on wd_cpu */
	wd_marks_seen = __atomic_load_n(&wd_marks, __ATOMIC_RELAXED);
	timer_arm(&wd, rdtsc() + ns_to_tsc(ns));
	irq_restore(flags);
}

void watchdog_progress(const uint64_t *counter)
{
	__atomic_store_n(&wd_progress, counter, __ATOMIC_RELEASE);
	__atomic_fetch_add(&wd_marks, 1, __ATOMIC_RELEASE);
}

void watchdog_stop(void)
{
	uint64_t flags = irq_save();

	if (this_cpu()->id != wd_cpu)
		panic("watchdog_stop on CPU %u, armed on CPU %u", this_cpu()->id, wd_cpu);
	timer_cancel(&wd);
	wd_progress = 0;
	irq_restore(flags);
}
