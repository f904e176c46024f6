/*
 * What Linux's cpuidle core counts, read from sysfs: per CPU and idle state, the entries
 * (`usage`) and the time spent in it (`time`, µs), plus the interrupts /proc/interrupts
 * counts per CPU. The guest prints these as its `cpu` records (deltas over the window).
 */
#ifndef IDLELAB_LINUXGUEST_CPUIDLE_H
#define IDLELAB_LINUXGUEST_CPUIDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_MAX_CPUS   64
#define LG_MAX_STATES 10
#define LG_NAME_MAX   32

/* How a state idles: polling (Linux's "POLL"), HLT (cpuidle-haltpoll's "haltpoll" state,
 * ACPI's C1 by HLT), or anything else (MWAIT, deeper ACPI states). */
enum state_kind {
	STATE_POLL,
	STATE_HALT,
	STATE_OTHER,
};

struct idle_layout {
	unsigned ncpus;
	unsigned nstates; /* 0: no cpuidle driver (cpuidle.off=1, idle=poll or idle=halt, ...) */
	char name[LG_MAX_STATES][LG_NAME_MAX];
	enum state_kind kind[LG_MAX_STATES];
	char driver[LG_NAME_MAX];   /* current_driver, "none" without one */
	char governor[LG_NAME_MAX]; /* current_governor_ro */
};

struct idle_snap {
	uint64_t usage[LG_MAX_CPUS][LG_MAX_STATES];
	uint64_t time_us[LG_MAX_CPUS][LG_MAX_STATES];
	uint64_t ipi[LG_MAX_CPUS];   /* rescheduling + function-call interrupts (RES + CAL) */
	uint64_t timer[LG_MAX_CPUS]; /* local timer interrupts (LOC) */
	bool have_irqs;
};

/* Pure: a state's kind from its sysfs name and desc. */
enum state_kind idle_kind_of(const char *name, const char *desc);

/*
 * Pure: the counts of the /proc/interrupts row labelled `label` ("RES", "LOC", ...) for the
 * first ncpus CPUs, added into out[]. Returns false if the text has no such row or the row
 * has fewer than ncpus counts.
 */
bool irq_row_add(const char *text, const char *label, unsigned ncpus, uint64_t *out);

/* Reads the driver, governor and states (those of CPU 0: every CPU has the same). */
void idle_layout_read(struct idle_layout *l, unsigned ncpus);

/* Every counter at once; false (with why) if a file could not be read. */
bool idle_snapshot(const struct idle_layout *l, struct idle_snap *s, char *why, size_t whylen);

/* Reads a small sysfs/procfs file into buf without its trailing newline; false if absent. */
bool read_text(const char *path, char *buf, size_t len);

#endif
