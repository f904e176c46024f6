/*
 * idlelab-linux: the Linux guest's program. The initramfs's /init (tools/linuxguest/init)
 * runs it once Linux is up. It reads idlelab's knobs from Linux's command line, prints the
 * records idlelab's kernel prints (docs/records.md: boot, idle, config, the window markers,
 * one cpu record per CPU from Linux's own cpuidle counters, result, exit), runs the
 * workload between the markers (windows= of them, each after a gap, the host switching
 * settings between them: docs/windows.md) and ends the run through isa-debug-exit, so the
 * harness measures this guest exactly as it measures idlelab's.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "tools/linuxguest/cpuidle.h"
#include "tools/linuxguest/knobpick.h"
#include "tools/linuxguest/out.h"
#include "tools/linuxguest/reconfigure.h"
#include "tools/linuxguest/switchable.h"
#include "tools/linuxguest/window.h"
#include "tools/linuxguest/workloads.h"

#define KVM_CPUID_SIGNATURE	 0x40000000u
#define KVM_CPUID_FEATURES	 0x40000001u
#define KVM_FEATURE_POLL_CONTROL 12
#define KVM_HINTS_REALTIME	 0

struct hv {
	bool kvm, pollctl, realtime;
};

static struct hv hypervisor(void)
{
	unsigned a, b, c, d;
	char sig[13];
	struct hv hv = {0};

	__cpuid(1, a, b, c, d);
	if (!(c >> 31 & 1))
		return hv;
	__cpuid(KVM_CPUID_SIGNATURE, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = '\0';
	if (strcmp(sig, "KVMKVMKVM") != 0 || a < KVM_CPUID_FEATURES)
		return hv;
	__cpuid(KVM_CPUID_FEATURES, a, b, c, d);
	hv.kvm = true;
	hv.pollctl = a >> KVM_FEATURE_POLL_CONTROL & 1;
	hv.realtime = d >> KVM_HINTS_REALTIME & 1;
	return hv;
}

static void print_config(const struct knob_values *k)
{
	char line[1024], val[48], path[128], text[32];
	int n = text_append(line, sizeof(line), 0, "@idlelab config");

	for (size_t i = 0; i < linuxguest_nknobs; i++) {
		enum knob_id id = linuxguest_knobs[i];

		knob_format_value(id, k->v[id], val, sizeof(val));
		n = text_append(line, sizeof(line), n, " %s=%s", knob_defs[id].name, val);
	}
	/* Linux's haltpoll governor parameters (present only where the kernel has that governor),
	 * under the idlelab knobs of the same meaning, whose printer gives their values */
	for (size_t i = 0; i < linuxguest_nhaltpoll_params; i++) {
		const struct lg_param *p = &linuxguest_haltpoll_params[i];
		long long v;

		snprintf(path, sizeof(path), "/sys/module/haltpoll/parameters/%s", p->param);
		if (!read_text(path, text, sizeof(text)))
			continue;
		v = text[0] == 'Y' ? 1 : text[0] == 'N' ? 0 : atoll(text);
		knob_format_value(p->knob, v, val, sizeof(val));
		n = text_append(line, sizeof(line), n, " %s=%s", knob_defs[p->knob].name, val);
	}
	out_line("%s", line);
}

static void print_idle(const struct idle_layout *l, const struct hv *hv, const char *cmdline)
{
	char states[LG_MAX_STATES * LG_NAME_MAX] = "", force[8], override[16];
	int n = 0;
	/* Linux writes MSR_KVM_POLL_CONTROL=0 on every CPU when cpuidle-haltpoll takes over
	 * (the guest polls, so the host must not), and leaves KVM's reset value 1 otherwise. */
	const char *msr = !hv->pollctl ? "none" : strcmp(l->driver, "haltpoll") == 0 ? "0" : "1";

	for (unsigned k = 0; k < l->nstates; k++) {
		int start = n;

		n = text_append(states, sizeof(states), n, "%s%s", k ? "," : "", l->name[k]);
		/* a record's values hold no spaces; Linux's names may ("haltpoll idle") */
		for (int i = start; i < n && states[i]; i++)
			if (states[i] == ' ')
				states[i] = '_';
	}
	linuxguest_idle_override(cmdline, override, sizeof(override));
	if (!read_text("/sys/module/cpuidle_haltpoll/parameters/force", force, sizeof(force)))
		snprintf(force, sizeof(force), "none");
	out_line("@idlelab idle policy=linux-%s governor=%s driver=%s states=%s "
		 "cpuidle_haltpoll.force=%s msr=%s override=%s",
		 l->driver, l->governor, l->driver, n ? states : "none",
		 force[0] == 'Y'   ? "1"
		 : force[0] == 'N' ? "0"
				   : force,
		 msr, override);
}

/* The idle fields of CPU c's record: entries and time by kind of state, the HLT state's
 * entries as `halts` and `hlt` alike (Linux counts an entry that found a wake-up already
 * pending and returned without halting, which idlelab calls an aborted halt, the same way),
 * and `other_entries` only where a state is neither polling nor HLT. */
static int idle_fields(char *buf, size_t len, const struct idle_layout *l,
		       const struct idle_snap *a, const struct idle_snap *b, unsigned c)
{
	uint64_t entries[3] = {0}, ns[3] = {0};
	char other[40] = "";

	for (unsigned k = 0; k < l->nstates; k++) {
		entries[l->kind[k]] += b->usage[c][k] - a->usage[c][k];
		ns[l->kind[k]] += (b->time_us[c][k] - a->time_us[c][k]) * 1000u;
	}
	for (unsigned k = 0; k < l->nstates; k++)
		if (l->kind[k] == STATE_OTHER)
			snprintf(other, sizeof(other), " other_entries=%lu",
				 (unsigned long)entries[STATE_OTHER]);
	return snprintf(buf, len,
			" idle_entries=%lu poll_entries=%lu halts=%lu hlt=%lu idle_ns=%lu "
			"poll_ns=%lu halt_ns=%lu%s",
			(unsigned long)(entries[0] + entries[1] + entries[2]),
			(unsigned long)entries[STATE_POLL], (unsigned long)entries[STATE_HALT],
			(unsigned long)entries[STATE_HALT], (unsigned long)(ns[0] + ns[1] + ns[2]),
			(unsigned long)ns[STATE_POLL], (unsigned long)ns[STATE_HALT], other);
}

static void print_cpus(const struct idle_layout *l, const struct idle_snap *a,
		       const struct idle_snap *b, const struct wl_state *st)
{
	for (unsigned c = 0; c < l->ncpus; c++) {
		char irqs[96] = "", idle[384] = "";

		if (a->have_irqs && b->have_irqs)
			snprintf(irqs, sizeof(irqs), " ipi_received=%lu timer_irqs=%lu",
				 (unsigned long)(b->ipi[c] - a->ipi[c]),
				 (unsigned long)(b->timer[c] - a->timer[c]));
		if (l->nstates > 0)
			idle_fields(idle, sizeof(idle), l, a, b, c);
		out_line("@idlelab cpu id=%u wakeups=%lu%s%s", c, (unsigned long)st->wakeups[c],
			 irqs, idle);
	}
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
		;
}

static __attribute__((noreturn)) void fail(const char *what, const char *msg, enum exit_code code)
{
	out_line("@idlelab error what=%s msg=\"%s\"", what, msg);
	out_exit(code);
}

/* One measured window: the workload's phase goes to WL_MEASURE between the markers and,
 * after a window that is not the last, back to WL_WARMUP so it runs on unmeasured through
 * the next gap. Returns the window's length. */
static uint64_t measure(const struct knob_values *k, struct wl_state *st, const char *what,
			unsigned w, bool last, const struct idle_layout *l, struct idle_snap *a,
			struct idle_snap *b)
{
	uint64_t t0, window_ns;

	window_edge("open", what, w, l, a, NULL);
	__atomic_store_n(&st->phase, WL_MEASURE, __ATOMIC_RELEASE);
	t0 = now_ns();
	sleep_ns((uint64_t)k->v[KNOB_duration]);
	__atomic_store_n(&st->phase, last ? WL_STOP : WL_WARMUP, __ATOMIC_RELEASE);
	window_ns = now_ns() - t0;
	window_edge("close", what, w, l, b,
		    last || !k->v[KNOB_window_sync] ? NULL : reconfigure_apply);
	return window_ns;
}

int main(void)
{
	static struct knob_values k;
	static struct idle_layout layout;
	static struct idle_snap a, b;
	static struct wl_state st;
	static char cmdline[4096];
	char err[KNOB_ERR_MAX], why[192];
	struct utsname u;
	struct sysinfo si;
	struct hv hv = hypervisor();
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned ncpus = online < 1 ? 1 : online > LG_MAX_CPUS ? LG_MAX_CPUS : (unsigned)online;
	const char *what;
	unsigned windows;
	bool ok = true, numbered;

	if (!read_text("/proc/cmdline", cmdline, sizeof(cmdline)))
		fail("boot", "cannot read /proc/cmdline (is /proc mounted?)", EXIT_BOOT_FAILED);
	if (linuxguest_parse(cmdline, &k, err, sizeof(err)) != KNOB_OK)
		fail("knob", err, EXIT_BAD_KNOB);
	if (!console_raw() && k.v[KNOB_window_sync])
		fail("window_sync", "the console is not a terminal: no acknowledgement can arrive",
		     EXIT_BOOT_FAILED);
	uname(&u);
	sysinfo(&si);
	out_line("@idlelab boot cpus=%u guest=linux kernel=%s ram_mb=%lu kvm=%d pollctl=%d "
		 "realtime=%d",
		 ncpus, u.release, (unsigned long)(si.totalram / 1048576u * si.mem_unit), hv.kvm,
		 hv.pollctl, hv.realtime);
	idle_layout_read(&layout, ncpus);
	print_idle(&layout, &hv, cmdline);
	print_config(&k);
	if (k.v[KNOB_workload] == WORKLOAD_NONE)
		out_exit(EXIT_SUCCESS);

	st.k = &k;
	st.ncpus = ncpus;
	windows = (unsigned)k.v[KNOB_windows];
	/* windows= given at all, even as 1: numbered windows, each after its gap */
	numbered = k.given[KNOB_windows];
	if (!wl_pick_cpus(&st, why, sizeof(why)))
		fail("workload", why, EXIT_BAD_KNOB);
	if (!window_init(ncpus, k.v[KNOB_window_sync], numbered,
			 (uint64_t)k.v[KNOB_window_sync_timeout], why, sizeof(why)) ||
	    !wl_start(&st, why, sizeof(why)))
		fail("workload", why, EXIT_TEST_FAILED);
	what = knob_defs[KNOB_workload].choices[k.v[KNOB_workload]];
	sleep_ns((uint64_t)k.v[KNOB_warmup]);
	for (unsigned w = 1; w <= windows; w++) {
		uint64_t window_ns;

		if (numbered) {
			if (w == 1 && k.v[KNOB_window_sync])
				window_edge("set", what, 1, &layout, NULL, reconfigure_apply);
			if (reconfigure_print(w))
				print_idle(&layout, &hv, cmdline);
			sleep_ns((uint64_t)k.v[KNOB_window_gap]);
			wl_reset(&st);
		}
		window_ns = measure(&k, &st, what, w, w == windows, &layout, &a, &b);
		if (w == windows)
			wl_join(&st);
		print_cpus(&layout, &a, &b, &st);
		ok &= wl_report(&st, window_ns);
	}
	out_exit(ok ? EXIT_SUCCESS : EXIT_TEST_FAILED);
}
