/*
 * Measurement-window markers. With window_sync=1 each edge is exact: every CPU is brought to
 * a barrier where it cannot halt, the counters are snapshotted there, the marker is printed
 * and the guest waits for the host's acknowledgement (one byte on COM1) before any CPU
 * resumes. The host reads KVM's counters between the marker and its acknowledgement, so
 * both sides count the same HLTs. Without it (a plain boot) nothing waits; window_hold=
 * then keeps CPU 0 busy after the marker for a host that reads at the line.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/probe.h"
#include "arch/x86/tsc.h"
#include "drivers/serial.h"
#include "kernel/exit_codes.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/quiesce.h"
#include "kernel/window.h"

static void hold(void)
{
	uint64_t ns = (uint64_t)knob(KNOB_window_hold), t0 = rdtsc();

	while (tsc_to_ns(rdtsc() - t0) < ns)
		cpu_relax();
}

static __attribute__((noreturn)) void sync_failed(const char *what, const char *why)
{
	printk("@idlelab error what=window_sync msg=\"%s marker: %s within window_sync_timeout "
	       "(%lu ns)\"",
	       what, why, (uint64_t)knob(KNOB_window_sync_timeout));
	kernel_exit(EXIT_SYNC_TIMEOUT);
}

/* Waits for the host's byte; anything the host sends acknowledges. */
static bool host_acknowledged(uint64_t timeout_ns)
{
	uint64_t t0 = rdtsc();

	while (serial_try_read() < 0)
		if (tsc_to_ns(rdtsc() - t0) > timeout_ns)
			return false;
	return true;
}

static void marker(const char *state, const char *what, int sync)
{
	printk("@idlelab window state=%s what=%s t_ns=%lu sync=%d", state, what, tsc_to_ns(rdtsc()),
	       sync);
}

static void edge(struct stats_snapshot *s, const char *state, const char *what)
{
	uint64_t timeout = (uint64_t)knob(KNOB_window_sync_timeout);

	if (!knob(KNOB_window_sync)) {
		if (state[0] == 'c')
			stats_snapshot(s);
		marker(state, what, 0);
		hold();
		if (state[0] == 'o')
			stats_snapshot(s);
		return;
	}
	if (!quiesce_begin(timeout))
		sync_failed(state, "a CPU did not reach the barrier");
	stats_snapshot(s);
	marker(state, what, 1);
	if (!host_acknowledged(timeout))
		sync_failed(state, "no acknowledgement from the host");
	quiesce_end();
	hold();
}

void window_open(struct stats_snapshot *s, const char *what)
{
	edge(s, "open", what);
	probe_mark(PROBE_WINDOW_OPEN);
}

void window_close(struct stats_snapshot *s, const char *what)
{
	probe_mark(PROBE_WINDOW_CLOSE);
	edge(s, "close", what);
}
