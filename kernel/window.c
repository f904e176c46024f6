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
#include "kernel/idle.h"
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

/*
 * Waits for the host's acknowledgement: a line, usually empty. After a marker that asks for
 * settings it holds the next window's (name=value ...); the line ends at '\n' (a lone byte
 * that is not one, an older host's, acknowledges too, with no settings). NULL, or what went
 * wrong.
 */
static const char *host_acknowledged(uint64_t timeout_ns, char *line, size_t size)
{
	uint64_t t0 = rdtsc();
	size_t n = 0;

	for (;;) {
		int ch;

		while ((ch = serial_try_read()) < 0)
			if (tsc_to_ns(rdtsc() - t0) > timeout_ns)
				return "no acknowledgement from the host";
		if (ch == '\n' || (n == 0 && ch != '\r' && ch < ' '))
			break;
		if (ch == '\r')
			continue;
		if (n + 1 >= size)
			return "a settings line from the host longer than WINDOW_SETTINGS_MAX";
		line[n++] = (char)ch;
	}
	line[n] = '\0';
	return NULL;
}

static void marker(const char *state, const char *what, unsigned window, int sync)
{
	if (knob_given(KNOB_windows))
		printk("@idlelab window state=%s what=%s t_ns=%lu sync=%d window=%u", state, what,
		       tsc_to_ns(rdtsc()), sync, window);
	else
		printk("@idlelab window state=%s what=%s t_ns=%lu sync=%d", state, what,
		       tsc_to_ns(rdtsc()), sync);
}

/* One edge; with window_sync=1 and settings != NULL, the host's line, applied (by apply)
 * before any CPU leaves the barrier. */
static void edge(struct stats_snapshot *s, const char *state, const char *what, unsigned window,
		 bool (*apply)(const char *line, unsigned window))
{
	uint64_t timeout = (uint64_t)knob(KNOB_window_sync_timeout);
	char line[WINDOW_SETTINGS_MAX];
	const char *why;
	bool changed = false;

	if (!knob(KNOB_window_sync)) {
		if (s && state[0] == 'c')
			stats_snapshot(s);
		marker(state, what, window, 0);
		hold();
		if (s && state[0] == 'o')
			stats_snapshot(s);
		return;
	}
	if (!quiesce_begin(timeout))
		sync_failed(state, "a CPU did not reach the barrier");
	if (s)
		stats_snapshot(s);
	marker(state, what, window, 1);
	why = host_acknowledged(timeout, line, sizeof(line));
	if (why)
		sync_failed(state, why);
	console_spool_rewind(); /* the host read every batch before it acknowledged */
	if (line[0] && !apply)
		sync_failed(state, "settings sent with a marker that takes none");
	if (line[0]) /* at a close, the settings are the next window's */
		changed = apply(line, state[0] == 'c' ? window + 1 : window);
	quiesce_end_with(changed ? idle_reconfigure_msr : NULL);
	hold();
}

void window_open(struct stats_snapshot *s, const char *what, unsigned window)
{
	edge(s, "open", what, window, NULL);
	probe_mark(PROBE_WINDOW_OPEN);
}

void window_close(struct stats_snapshot *s, const char *what, unsigned window,
		  bool (*apply)(const char *line, unsigned window))
{
	probe_mark(PROBE_WINDOW_CLOSE);
	edge(s, "close", what, window, apply);
}

void window_settings(const char *what, unsigned window,
		     bool (*apply)(const char *line, unsigned window))
{
	edge(NULL, "set", what, window, apply);
}
