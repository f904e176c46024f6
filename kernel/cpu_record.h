/*
 * The `@idlelab cpu` record, one line per CPU with what it did over a measurement window:
 * the one definition of its fields, in the order they are printed, each with its unit and
 * what it counts. kernel/stats.c prints the kernel's record from this table and
 * tools/sim/report.c the simulator's, each giving every field its value (a field named here
 * that a printer gives none does not compile), both through cpu_record_format(); the table in
 * docs/records.md is generated from it (tools/cpurecorddoc.c, `make records-doc`; `make
 * docs-check` fails when it is stale), and tests/tools/test_cpu_record.py holds the harness's
 * field names and identities to it.
 *
 * A field: an X(name, unit, meaning) line at the end (the tools read fields by name, people
 * by place), its value in both printers, then `make records-doc`. unit is "count", "ns" or ""
 * (an index); meaning is one line of the documentation's table, a backquoted `name` for
 * another field.
 */
#ifndef IDLELAB_KERNEL_CPU_RECORD_H
#define IDLELAB_KERNEL_CPU_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "lib/format.h"

// clang-format off
#define CPU_RECORD_FIELDS(X) \
	X(id, "", "the CPU: its dense index, 0 = the boot CPU") \
	X(ctx_switches, "count", "switches from one thread to another") \
	X(wakeups, "count", "thread_wake() calls this CPU issued: `wakeups_local` + " \
	  "`wakeups_remote`") \
	X(wakeups_local, "count", "of them, for a thread of this CPU") \
	X(wakeups_remote, "count", "of them, for another CPU's thread") \
	X(ipi_sent, "count", "reschedule IPIs this CPU sent to wake another") \
	X(ipi_avoided, "count", "wake-ups that sent no IPI because the target was polling " \
	  "(the POLL flag)") \
	X(ipi_received, "count", "reschedule IPIs this CPU handled") \
	X(timer_irqs, "count", "local APIC timer interrupts handled (ticks, sleeps' deadlines, " \
	  "a governor's timed halts)") \
	X(ticks, "count", "periodic ticks (`hz=`; 0 when tickless)") \
	X(idle_entries, "count", "idle states entered: `poll_entries` + `halts`") \
	X(idle_aborted, "count", "governed entries given up right after select because work " \
	  "had come (Linux's call_cpuidle() -EBUSY), not reflected; also the steal gate's " \
	  "entries that found work before they halted") \
	X(poll_entries, "count", "poll states entered: `poll_hits` + `poll_immediate` + " \
	  "`poll_expired`") \
	X(poll_hits, "count", "polls ended by work that arrived while polling") \
	X(poll_immediate, "count", "polls that found work at their first test, just after " \
	  "advertising POLLING (a wake in between skipped its IPI)") \
	X(poll_expired, "count", "polls ended by their window") \
	X(halts, "count", "halt states entered, abandoned ones included") \
	X(halts_aborted, "count", "halts given up before their HLT ran: work found by the " \
	  "re-test, or a broken shadow (`shadow_breaks`)") \
	X(hlt, "count", "HLT instructions executed: `halts` - `halts_aborted`; each is one of " \
	  "KVM's halt_exits") \
	X(grow, "count", "the governor's poll window grown") \
	X(shrink, "count", "the governor's poll window shrunk") \
	X(window_ns, "ns", "the governor's poll window at the window's close (0 without a " \
	  "governor)") \
	X(idle_ns, "ns", "time idle: `poll_ns` + `halt_ns`. With window_sync=1 a CPU the " \
	  "window's barrier caught idle spins in its handler until the host acknowledges; " \
	  "that wait is left out (kernel/idle.c idle_barrier_begin), though the idle state it " \
	  "interrupted still lasts that much longer for the governor, so a poll caught there " \
	  "ends expired and its overshoot, `poll_expired`, `grow` and `shrink` may carry one " \
	  "edge's wait") \
	X(poll_ns, "ns", "time in the poll state") \
	X(halt_ns, "ns", "time in the halt state, from HLT to the return of the interrupt " \
	  "that ended it") \
	X(poll_overshoot_ns, "ns", "time past their window of the polls that expired, summed") \
	X(poll_overshoot_max_ns, "ns", "the largest single overshoot since boot (not only the " \
	  "window's)") \
	X(steal_ns, "ns", "time KVM reports this vCPU runnable but not running " \
	  "(kvm-steal-time); always 0 where the `idle` record says steal_time=none (under TCG, " \
	  "in the simulator): not available, not zero") \
	X(polls_suspended, "count", "governed idle entries that halted, or found work, " \
	  "because `haltpoll.steal_threshold=` suspended polling; 0 without kvm-steal-time") \
	X(takeovers, "count", "times the governor set haltpoll's rule aside (predict's " \
	  "plateau entries); 0 under haltpoll") \
	X(shadow_breaks, "count", "interrupts taken on safe_halt()'s HLT before it ran: a " \
	  "host that drops STI's interrupt shadow across a VM exit delivers them there (the " \
	  "nested host's QEMU 7.2 does); the entry returns past the HLT, which would otherwise " \
	  "sleep with its wake already handled, and in the halt state that HLT counts in " \
	  "`halts_aborted`, not `hlt`, as the host saw no exit for it. 0 on a correct host " \
	  "(and in the simulator), but for the one selftest=sched makes on purpose; " \
	  "bench=exits' HLTs count too")
// clang-format on

enum cpu_record_field {
#define CPU_RECORD__ENUM(name, unit, meaning) CPU_REC_##name,
	CPU_RECORD_FIELDS(CPU_RECORD__ENUM) CPU_REC__COUNT
#undef CPU_RECORD__ENUM
};

/* A record with every field at its widest (20 digits) fits, with printk's newline: no record
 * is ever cut short (printk's own line is as long). */
#define CPU_RECORD_LINE_MAX			1024
#define CPU_RECORD__WIDEST(name, unit, meaning) +sizeof(" " #name "=") - 1 + 20
_Static_assert(sizeof("@idlelab cpu") - 1 CPU_RECORD_FIELDS(CPU_RECORD__WIDEST) + 1 <
		   CPU_RECORD_LINE_MAX,
	       "the cpu record outgrows its line");
#undef CPU_RECORD__WIDEST

/*
 * The record's line, "@idlelab cpu id=0 ctx_switches=..." (no newline), from each field's
 * value; returns its length. The one formatter, so the kernel's and the simulator's records
 * cannot differ in form.
 */
static inline size_t cpu_record_format(char *buf, size_t size, const uint64_t v[CPU_REC__COUNT])
{
#define CPU_RECORD__NAME(name, unit, meaning) #name,
	static const char *const names[CPU_REC__COUNT] = {CPU_RECORD_FIELDS(CPU_RECORD__NAME)};
#undef CPU_RECORD__NAME
	size_t n = (size_t)snprintf(buf, size, "@idlelab cpu");

	for (unsigned i = 0; i < CPU_REC__COUNT && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, " %s=%lu", names[i], (unsigned long)v[i]);
	return n < size ? n : size - 1;
}

#endif
