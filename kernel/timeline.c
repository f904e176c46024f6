/*
 * The timeline's event log (kernel/timeline.h). Each CPU appends to its own slice of one
 * static pool, with interrupts off for the TSC read and the append, so a CPU's events are in
 * TSC order and an interrupt's event cannot land between a stamp and its slot. The pool is
 * shared out among the CPUs online, so its size, not MAX_CPUS, bounds the image.
 *
 * The dump is compact because every byte on the serial line is a VM exit: per event its
 * kind's letter, the TSC cycles since the CPU's previous event (the window's start for the
 * first) in hex, and ".arg" in hex when arg is not 0; events comma-separated, TL_PER_LINE a
 * line. tools/idlelab/timeline/records.py reads it.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kernel/percpu.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/timeline.h"
#include "lib/format.h"

/* Up to four CPUs get the knob's full range; more share the pool (events_per_cpu says). */
#define TL_POOL_EVENTS (4 * TIMELINE_MAX)
#define TL_PER_LINE    20

struct tl_event {
	uint64_t tsc;
	uint32_t arg; /* 32 bits: reflect's window in ns (the struct is 16 bytes either way) */
	uint8_t kind;
};

static struct tl_event pool[TL_POOL_EVENTS];

/* One CPU's slice: only that CPU appends (interrupts off); the dump reads it afterwards. */
static struct tl_cpu {
	struct tl_event *ev;
	uint32_t n;
} __attribute__((aligned(CACHELINE))) tl[MAX_CPUS];

bool timeline_on;
static uint32_t per_cpu; /* slots each CPU has in this run */
static uint64_t t0, t_end;
static uint64_t (*reflect_window)(const struct cpu *c); /* timeline_reflect_source() */

void timeline_reflect_source(uint64_t (*window_ns)(const struct cpu *c))
{
	reflect_window = window_ns;
}

static const struct {
	char letter;
	const char *name;
} kinds[TL_NKINDS] = {
#define TL_ROW(id, letter, name) [id] = {letter, name},
    TL_KINDS(TL_ROW)
#undef TL_ROW
};

static void append(unsigned kind, unsigned arg, uint64_t tsc)
{
	struct tl_cpu *t = &tl[this_cpu()->id];

	if (t->n < per_cpu) /* full: this CPU's stretch is over */
		t->ev[t->n++] = (struct tl_event){.tsc = tsc, .arg = (uint32_t)arg, .kind = kind};
}

/*
 * Interrupts off across the stamp and the append: see the top of the file. The flag is
 * tested again after the stamp, so an event whose hook saw it just before timeline_stop()
 * is kept only if stamped before the stop's own t_end.
 */
void timeline_record(unsigned kind, unsigned arg, uint64_t tsc)
{
	uint64_t flags = irq_save();
	uint64_t stamp = tsc ? tsc : rdtsc();

	/* After HLT, whether work came is one more load of the flag word: done here, so the
	 * hook in the halt state costs nothing when off. */
	if (kind == TL_IDLE_END && (arg & TL_END_HALT) &&
	    (__atomic_load_n(&this_cpu()->flags, __ATOMIC_RELAXED) & CPU_NEED_RESCHED))
		arg |= TL_END_WORK;
	/* Likewise the window a reflect left: read here, not at the hook on the entry path. */
	if (kind == TL_REFLECT)
		arg = reflect_window ? (unsigned)reflect_window(this_cpu()) : 0;
	if (__atomic_load_n(&timeline_on, __ATOMIC_SEQ_CST))
		append(kind, arg, stamp);
	irq_restore(flags);
}

void timeline_setup(void)
{
	static_branch_set(BRANCH_TIMELINE, knob(KNOB_timeline));
}

void timeline_start(void)
{
	uint32_t asked = (uint32_t)knob(KNOB_timeline);

	if (!asked)
		return;
	per_cpu = asked < TL_POOL_EVENTS / ncpus ? asked : TL_POOL_EVENTS / ncpus;
	for (unsigned i = 0; i < ncpus; i++)
		tl[i] = (struct tl_cpu){.ev = &pool[i * per_cpu]};
	t0 = rdtsc();
	__atomic_store_n(&timeline_on, true, __ATOMIC_SEQ_CST);
}

void timeline_stop(void)
{
	if (!__atomic_load_n(&timeline_on, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&timeline_on, false, __ATOMIC_SEQ_CST);
	t_end = rdtsc();
}

/* "k<dt>[.<arg>]": dt may be negative only for a CPU's first event, stamped (by an idle
 * state's entry) just before it saw the flag that timeline_start() set. */
static int encode(char *buf, size_t size, const struct tl_event *e, uint64_t prev)
{
	bool neg = e->tsc < prev;
	uint64_t dt = neg ? prev - e->tsc : e->tsc - prev;
	char kind = e->kind < TL_NKINDS ? kinds[e->kind].letter : '?';

	if (e->arg)
		return snprintf(buf, size, "%c%s%lx.%x", kind, neg ? "-" : "", dt, e->arg);
	return snprintf(buf, size, "%c%s%lx", kind, neg ? "-" : "", dt);
}

static void dump_cpu(unsigned cpu)
{
	const struct tl_cpu *t = &tl[cpu];
	uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
	uint64_t prev = t0;
	char line[TL_PER_LINE * 28 + 1];

	printk("@idlelab timeline_cpu cpu=%u events=%u full=%d", cpu, n, n == per_cpu);
	for (uint32_t i = 0, seq = 0; i < n; seq++) {
		size_t len = 0;

		for (uint32_t k = 0; k < TL_PER_LINE && i < n; k++, i++) {
			if (k)
				line[len++] = ',';
			len += (size_t)encode(line + len, sizeof(line) - len, &t->ev[i], prev);
			prev = t->ev[i].tsc;
		}
		line[len] = 0;
		printk("@idlelab timeline_ev cpu=%u seq=%u ev=%s", cpu, seq, line);
	}
}

/*
 * Runs after the window closed and the workload reported, when the recorders have long
 * stopped appending: one that saw timeline_on just before timeline_stop() finishes within a
 * few instructions, and the result records printed since take milliseconds.
 */
void timeline_dump(void)
{
	char legend[TL_NKINDS * 16];
	size_t len = 0;

	if (!per_cpu)
		return;
	for (unsigned k = 0; k < TL_NKINDS; k++)
		len += (size_t)snprintf(legend + len, sizeof(legend) - len, "%s%c:%s", k ? "," : "",
					kinds[k].letter, kinds[k].name);
	printk("@idlelab timeline cpus=%u tsc_hz=%lu t0=%lu t_end=%lu asked=%lu events_per_cpu=%u "
	       "per_line=%u kinds=%s",
	       ncpus, tsc_hz, t0, t_end, (uint64_t)knob(KNOB_timeline), per_cpu, TL_PER_LINE,
	       legend);
	for (unsigned i = 0; i < ncpus; i++)
		dump_cpu(i);
}
