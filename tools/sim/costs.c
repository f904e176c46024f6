/*
 * Cost tables. A cost file is one `name = expression` a line (`#` starts a comment); every
 * cost of SIM_COSTS must be given exactly once. An expression is terms joined by + or -:
 * a time (`25us`, `688ns`, `1.5ms`; no unit: ns), or a primitive of the platform's measured
 * cost table (`alu`, `ipi_halt_rtt*0.5`: its median, ns), which costs=here reads from a
 * results folder's meta.json (`make bench` measures it with bench=exits) and any file can name
 * with a `results = PATH` line. Two more primitives come from the folder's runs rather than
 * from bench=exits, its pingpong runs' `@idlelab wakepath` records (mode=block):
 * `wakepath_run`, the median of their run_p50_ns (from the wake reaching the idle CPU to the
 * woken thread running), and `wakepath_notice`, the median of notice_p50_ns (from the wake to
 * the halted CPU noticing it: the IPI, KVM waking the vCPU thread, the entry, the handler)
 * over the runs with idle=halt and host polling off (per-VM halt_poll_ns 0), where every
 * wake is that whole chain. Alternatives joined by `|` are tried in turn, the first whose
 * primitives the folder has wins (`wakepath_run | alu*150`: measured if a pingpong ran, else
 * fitted). Five more are instruction counts, not times: `insns_user`, `insns_wake`,
 * `insns_block`, `insns_enter` and `insns_run`, the guest instructions per pingpong round
 * trip in each phase of the wake path (tools/idlelab/wakepath/insncount.py) of the kernel the bench
 * ran, counted under TCG when it measured its cost table (cost_table.path_insns). A term is
 * factors joined by * and /, so a fitted path cost can follow the kernel's own path:
 * `alu*80*insns_enter/50` is 80 alu where the enter phase had the fit's 50 instructions.
 * `max(A, B)` is a factor too: the larger of two such sums (`max(ipi_run_rtt - ipi_send, 0)`;
 * no `|` or `~` inside it).
 * The *_ppm costs are plain numbers, parts per million, at most 1000000.
 *
 * A time cost may have a spread: `name = MEDIAN ~ SPREAD`, SPREAD being the 90th percentile
 * less the median (`ipi_send = ipi_send ~ ipi_send_p90 - ipi_send`; every measured primitive
 * has its `_p90`, the stamps theirs from the records' p90 fields). The engine then draws the
 * cost at each use from a shifted exponential with that median and p90 (engine.c:
 * sim_cost(), cost_at()). Without one the cost is a constant, as in the hardware table. The
 * poll loops' steps, wake_cold_max, timer_sleep_*, the rates (preempt_per_s, other_per_s),
 * host_cpus and the *_ppm costs are read as constants: no spread.
 *
 * What each cost is (ns but the rates, counts and *_ppm, as each says):
 *   ipi_send        the sender's time for one reschedule IPI (the ICR write and its exit) to a
 *                   vCPU asleep in KVM, whose wake-up the sender's exit does (try_to_wake_up)
 *   ipi_send_awake  the same to a vCPU not asleep (running, polling, on its way): a kick
 *   ipi_latency     from the send to the target's LAPIC (KVM sees the target runnable)
 *   ipi_running     a reschedule IPI reaching a vCPU in guest code: arrival to its handler
 *   halt_exit       a HLT's VM exit, up to KVM's decision to poll or sleep
 *   halt_sleep      after a poll that caught nothing (or none), KVM's way to the thread
 *                   asleep (kvm_vcpu_block up to schedule(); charged): a wake meanwhile is
 *                   seen before it sleeps, as the poll's (KVM: not `waited`)
 *   vm_entry        from the vCPU thread running again to guest code running
 *   poll_entry      from KVM seeing the wake before the thread slept (its poll, or its way
 *                   to sleep) to guest code running
 *   wake_latency    a sleeping vCPU thread's wake-up: event to thread on a host CPU (idle time)
 *   wake_entry      a woken vCPU thread from running again to vm_entry (charged to it)
 *   timer_wake      wake_latency for a thread its guest's timer woke (KVM's hrtimer to running)
 *   timer_entry     wake_entry after a timer's wake (KVM handles the expiry on the way in)
 *   timer_slack     a guest timer of a halted vCPU: deadline to KVM's hrtimer waking it
 *   timer_poll_slack the same for a vCPU KVM is polling: deadline to the poll seeing it (the
 *                   hrtimer fires on the polling thread's busy CPU, not an idle one)
 *   timer_*_long    timer_wake, timer_entry and timer_slack after a long sleep ...
 *   timer_sleep_short ... the sleep the short ones were measured at, and timer_sleep_long the
 *                   long ones': a halt between the two is priced between them by how long it
 *                   slept, outside at the nearer (constants; long <= short: no long ones)
 *   timer_running   a guest timer of a vCPU in guest code: deadline to the interrupt
 *   host_poll_iter  one iteration of KVM's poll loop (how late it sees the event)
 *   guest_poll_iter one iteration of the guest's poll loop (clock checks, kernel/idle.c)
 *   poll_wake       a POLL-flag wake: the waker's store to the poller leaving its loop
 *   irq_entry       the guest's reschedule-IPI handler
 *   timer_irq       the guest's timer interrupt: entry, expired timers' callbacks, EOI
 *   timer_arm       the tick's re-arm (timer queue, TSC-deadline write)
 *   sleep_step      thread_sleep_ns's own work: TSC maths, arming and cancelling its timer
 *   sleep_cut       a sleep whose deadline is less than this after its call is due as the
 *                   host takes the deadline's write: its interrupt is taken as the arm
 *                   returns (timer_running after the call), and the thread never blocks
 *   wake_path       the guest's idle exit: schedule() and the switch to the woken thread
 *   idle_entry      the guest from a thread blocking to its idle state (schedule, governor)
 *   idle_reentry    one more turn of the idle loop after an entry that brought no work
 *   thread_step     the workload's own code between two blocks, after a VM exit (a HLT, an
 *                   ICR or deadline write, an EOI) since it last ran ...
 *   thread_step_polled ... and with none (the guest's poll loop caught the wake)
 *   block_charge_ppm host CPU charged to a vCPU thread per ns it sleeps in KVM (x 1e-6)
 *   wake_cold_ppm   extra busy time at a wake per ns the thread slept (x 1e-6) ...
 *   wake_cold_max   ... counting at most this much sleep
 *   preempt         the host's other tasks: how long one keeps a vCPU thread that wants its
 *                   CPU off it (a polling thread stops polling and sleeps: KVM's
 *                   single_task_running) ...
 *   preempt_per_s   ... and how often, per second the thread is on a CPU (a constant; 0:
 *                   the vCPU threads have their CPUs to themselves)
 *   other_run       the host's other tasks as a demand instead (where other_per_s is not 0,
 *                   preempt and preempt_per_s are not used): how long one holds a host CPU,
 *                   taking an idle one where there is one, else a vCPU thread's ...
 *   other_per_s     ... how many arrive a second on the whole host (a constant) ...
 *   host_cpus       ... and its CPUs (a constant, at least the vCPUs: vCPU i's thread on
 *                   CPU i)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/sim/sim.h"

#ifndef SIM_SRCDIR
#define SIM_SRCDIR "."
#endif

#define SIM__COST_NAME(n) #n,
const char *const sim_cost_names[COST__COUNT] = {SIM_COSTS(SIM__COST_NAME)};

/* The primitives of tools/idlelab/costtable/__init__.py's PRIMS that the tables use (named in its
 * order up to timer_halt; load, call and pushf are not used), then the stamps. */
static const char *const prim_names[] = {
    "alu", "pause", "rdtsc", "locked_rmw", "cli_sti", "cpuid", "wrmsr_pollctl", "ipi_send",
    "ipi_halt_rtt", "poll_wake_rtt", "timer", "ipi_run_rtt", "timer_halt", "wakepath_run",
    "wakepath_notice", "insns_user", "insns_wake", "insns_block", "insns_enter", "insns_run",
    /* the 90th percentiles of the first 15, in their order */
    "alu_p90", "pause_p90", "rdtsc_p90", "locked_rmw_p90", "cli_sti_p90", "cpuid_p90",
    "wrmsr_pollctl_p90", "ipi_send_p90", "ipi_halt_rtt_p90", "poll_wake_rtt_p90", "timer_p90",
    "ipi_run_rtt_p90", "timer_halt_p90", "wakepath_run_p90", "wakepath_notice_p90",
    /* the cost table boot's vCPU threads' halts split by the host's scheduler
     * (cost_table.threads, tools/idlelab/derive/threadtrace.py): those an IPI woke, those a
     * timer woke, then their p90s */
    "thread_halt", "thread_kick", "thread_wake", "thread_entry", "thread_halt_timer",
    "thread_wake_timer", "thread_entry_timer", "thread_timer_late", "thread_preempt",
    "thread_halt_p90", "thread_kick_p90", "thread_wake_p90", "thread_entry_p90",
    "thread_halt_timer_p90", "thread_wake_timer_p90", "thread_entry_timer_p90",
    "thread_timer_late_p90", "thread_preempt_p90",
    /* bench=exits' exits inside the guest's own paths (x2APIC EOI, TSC-deadline write), then
     * their p90s */
    "eoi", "tsc_deadline", "eoi_p90", "tsc_deadline_p90",
    /* the boot's vCPU threads' preemptions per second on a CPU (cost_table.threads) */
    "thread_preempt_per_s",
    /* its timer-woken halts after a long sleep, and the median sleep of each class, then
     * their p90s (threadtrace.py LONG_SLEEP_NS) */
    "thread_wake_timer_long", "thread_entry_timer_long", "thread_timer_late_long",
    "thread_timer_slept", "thread_timer_slept_long", "thread_wake_timer_long_p90",
    "thread_entry_timer_long_p90", "thread_timer_late_long_p90", "thread_timer_slept_p90",
    "thread_timer_slept_long_p90",
    /* bench=exits' round trip to a halted vCPU the host may poll, then its p90 */
    "ipi_poll_rtt", "ipi_poll_rtt_p90",
    /* bench=exits' sleep through the scheduler: to its timer armed, then to its halt; and
     * timer_sleep, how late a sleep's callback ran; then their p90s */
    "sleep_arm", "sleep_entry", "timer_sleep", "sleep_arm_p90", "sleep_entry_p90",
    "timer_sleep_p90",
    /* the 99th percentiles of the cost table boot's thread parts, in their order, then of
     * the long sleeps' three timer parts: the tails beyond the p90 */
    "thread_halt_p99", "thread_kick_p99", "thread_wake_p99", "thread_entry_p99",
    "thread_halt_timer_p99", "thread_wake_timer_p99", "thread_entry_timer_p99",
    "thread_timer_late_p99", "thread_preempt_p99", "thread_wake_timer_long_p99",
    "thread_entry_timer_long_p99", "thread_timer_late_long_p99",
    /* bench=exits' lead under which a sleep's deadline is due as its arm returns, then its
     * p90 */
    "sleep_cut", "sleep_cut_p90",
    /* the traced boot's other tasks: each stretch a host CPU ran them (its median, p90 and
     * p99), how many a second on all CPUs, and the host's CPUs (cost_table.threads) */
    "thread_other_run", "thread_other_run_p90", "thread_other_run_p99", "thread_other_per_s",
    "thread_host_cpus",
    /* bench=exits' timer that ends a host poll: how late its callback ran, then its p90 */
    "timer_poll", "timer_poll_p90",
    /* bench=exits' sleep's way back from the idle state's end to its thread (the guest's
     * run phase, as pingpong's wakepath_run times it in a run), then its p90 */
    "sleep_run", "sleep_run_p90"};
#define NPRIMS		     (sizeof(prim_names) / sizeof(prim_names[0]))
#define PRIM_WAKEPATH_RUN    13
#define PRIM_WAKEPATH_NOTICE 14
#define PRIM_INSNS	     15 /* insns_<phase>: cost_table.path_insns.<phase> */
#define PRIM_P90	     20 /* <prim>_p90: prim i's p90 is PRIM_P90 + i */
#define PRIM_THREADS	     35 /* thread_<part>, then their p90s */
#define NTHREAD_PARTS	     9
#define PRIM_EXITS	     53 /* eoi, tsc_deadline, then their p90s */
#define NEXIT_PRIMS	     2
#define PRIM_PREEMPT_RATE    57 /* thread_preempt_per_s */
#define PRIM_TIMER_SLEEPS    58 /* the long sleeps' timer parts and both sleeps, then p90s */
#define NTIMER_SLEEP_PARTS   5
#define PRIM_POLL_RTT	     68 /* ipi_poll_rtt, then its p90 */
#define PRIM_SLEEPS	     70 /* sleep_arm, sleep_entry, timer_sleep, then their p90s */
#define NSLEEP_PRIMS	     3
#define PRIM_P99S	     76 /* the thread parts' p99s, then the long timer parts' */
#define NLONG_TIMER_PARTS    3
#define PRIM_SLEEP_CUT	     88 /* sleep_cut, then its p90 */
#define PRIM_OTHER	     90 /* thread_other_run, its p90 and p99, other_per_s, host_cpus */
#define PRIM_TIMER_POLL	     95 /* timer_poll, then its p90 */
#define PRIM_SLEEP_RUN	     97 /* sleep_run, then its p90 */
_Static_assert(NPRIMS == SIM_NPRIMS, "sim.h's SIM_NPRIMS counts prim_names");
#define PPM_MAX 1000000.0

static char *read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f) {
		snprintf(err, errlen, "costs: cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		snprintf(err, errlen, "costs: cannot read %s", path);
		free(buf);
		fclose(f);
		return NULL;
	}
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* True if a raw record says the run was under KVM and the host did not poll: per-VM
 * halt_poll_ns of 0 (a TCG run of the same matrix row carries the setting too, meaning
 * nothing). */
static bool host_polling_off(const char *text)
{
	const char *p = strstr(text, "\"halt_poll\""), *end, *ns;

	if (!p || !strstr(text, "\"accel\": \"kvm\""))
		return false;
	end = strchr(p, '}');
	ns = strstr(p, "\"ns\"");
	if (!end || !ns || ns > end || !strstr(p, "\"vm\"") || strstr(p, "\"vm\"") > end)
		return false;
	ns = strchr(ns, ':');
	return ns && ns < end && strtod(ns + 1, NULL) == 0;
}

/*
 * A number after ` key=` within [p, end), or -1: also where the value is not a number (a
 * cross-CPU phase is `na` when the guest's TSCs disagree), which strtod would read as 0.
 */
static double field_in(const char *p, const char *end, const char *key)
{
	char k[64], *after;
	const char *v;
	double x;

	snprintf(k, sizeof(k), " %s=", key);
	v = strstr(p, k);
	if (!v || v >= end)
		return -1;
	x = strtod(v + strlen(k), &after);
	return after == v + strlen(k) ? -1 : x;
}

/* The stamps' fields read from the wakepath records, and which records each is read from. */
static const struct {
	const char *field;
	bool halt_only;
	size_t prim;
} stamp_fields[] = {
    {"run_p50_ns", false, PRIM_WAKEPATH_RUN},
    {"notice_p50_ns", true, PRIM_WAKEPATH_NOTICE},
    {"run_p90_ns", false, PRIM_P90 + PRIM_WAKEPATH_RUN},
    {"notice_p90_ns", true, PRIM_P90 + PRIM_WAKEPATH_NOTICE},
};
#define NSTAMPS	   (sizeof(stamp_fields) / sizeof(stamp_fields[0]))
#define STAMPS_MAX 4096 /* records per field */

static double median(double *v, size_t n)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * prims[] of each stamp field: the median over the JSON files of a results folder's raw/ of
 * the wakepath records' field (pingpong with mode=block; the spin floor has no idle and so
 * no such phase), or -1 if none; for a halt_only field, of the records with idle=halt from
 * runs where the host did not poll. A record sits in the JSON string of the guest's serial
 * output, one line ending at a `\n` escape. Each file is read once for all the fields.
 */
static void wakepath_medians(const char *folder, double *prims)
{
	static double found[NSTAMPS][STAMPS_MAX];
	char dir[4104], file[4400], err[256];
	size_t n[NSTAMPS] = {0};
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/raw", folder);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		bool no_host_poll;
		char *text, *p;

		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
		text = read_file(file, err, sizeof(err));
		if (!text)
			continue;
		no_host_poll = host_polling_off(text);
		for (p = strstr(text, "@idlelab wakepath "); p;
		     p = strstr(p + 1, "@idlelab wakepath ")) {
			char *end = strstr(p, "\\n"), *mode = strstr(p, " mode=block "),
			     *idle = strstr(p, " idle=halt ");
			bool halt = no_host_poll && idle && (!end || idle < end);

			if (!end)
				end = p + strlen(p);
			if (!mode || mode > end)
				continue;
			for (size_t f = 0; f < NSTAMPS; f++) {
				double v;

				if ((stamp_fields[f].halt_only && !halt) || n[f] == STAMPS_MAX)
					continue;
				v = field_in(p, end, stamp_fields[f].field);
				if (v >= 0)
					found[f][n[f]++] = v;
			}
		}
		free(text);
	}
	if (d)
		closedir(d);
	for (size_t f = 0; f < NSTAMPS; f++)
		prims[stamp_fields[f].prim] = median(found[f], n[f]);
}

/* The object `"name": {...}` after `from`: its ns_p50, ns_p90 and (where p99 is not NULL)
 * ns_p99, each -1 where missing. */
static void percentiles(const char *from, const char *name, double *p50, double *p90, double *p99)
{
	const char *q = NULL, *end = NULL, *v;
	char key[64];

	*p50 = *p90 = -1;
	if (p99)
		*p99 = -1;
	snprintf(key, sizeof(key), "\"%s\":", name);
	if (from)
		q = strstr(from, key);
	q = q ? strchr(q, '{') : NULL;
	end = q ? strchr(q, '}') : NULL;
	v = q ? strstr(q, "\"ns_p50\":") : NULL;
	if (v && v < end)
		*p50 = strtod(v + 9, NULL);
	v = q ? strstr(q, "\"ns_p90\":") : NULL;
	if (v && v < end)
		*p90 = strtod(v + 9, NULL);
	v = q && p99 ? strstr(q, "\"ns_p99\":") : NULL;
	if (v && v < end)
		*p99 = strtod(v + 9, NULL);
}

static void p50_p90(const char *from, const char *name, double *p50, double *p90)
{
	percentiles(from, name, p50, p90, NULL);
}

/* The end of the JSON object whose opening brace is the first at or after `p` (its closing
 * brace; strings skipped), or NULL where it does not close. */
static const char *object_end(const char *p)
{
	int depth = 0;
	bool in_string = false;

	p = p ? strchr(p, '{') : NULL;
	for (; p && *p; p++) {
		if (in_string) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '{') {
			depth++;
		} else if (*p == '}' && --depth == 0) {
			return p;
		}
	}
	return NULL;
}

/* The number after "key": inside cost_table.threads (from `p` up to `end`); -1 where none. */
static double threads_number(const char *p, const char *end, const char *key)
{
	char quoted[64];
	const char *at;

	snprintf(quoted, sizeof(quoted), "\"%s\":", key);
	at = p ? strstr(p, quoted) : NULL;
	return at && (!end || at < end) ? strtod(at + strlen(quoted), NULL) : -1;
}

/* cost_table.threads.thread_<part>, preempt_per_s and the other tasks' demand; -1 where the
 * boot was not traced. */
static void thread_parts(const char *text, double *prims)
{
	const char *p = strstr(text, "\"threads\""), *end = object_end(p);
	const char *other = p ? strstr(p, "\"thread_other_run\":") : NULL;

	for (size_t i = 0; i < NTHREAD_PARTS; i++)
		percentiles(p, prim_names[PRIM_THREADS + i], &prims[PRIM_THREADS + i],
			    &prims[PRIM_THREADS + NTHREAD_PARTS + i], &prims[PRIM_P99S + i]);
	prims[PRIM_PREEMPT_RATE] = threads_number(p, end, "preempt_per_s");
	percentiles(other && (!end || other < end) ? other : NULL, prim_names[PRIM_OTHER],
		    &prims[PRIM_OTHER], &prims[PRIM_OTHER + 1], &prims[PRIM_OTHER + 2]);
	prims[PRIM_OTHER + 3] = threads_number(p, end, "other_per_s");
	prims[PRIM_OTHER + 4] = threads_number(p, end, "host_cpus");
	for (size_t i = 0; i < NTIMER_SLEEP_PARTS; i++)
		percentiles(p, prim_names[PRIM_TIMER_SLEEPS + i], &prims[PRIM_TIMER_SLEEPS + i],
			    &prims[PRIM_TIMER_SLEEPS + NTIMER_SLEEP_PARTS + i],
			    i < NLONG_TIMER_PARTS ? &prims[PRIM_P99S + NTHREAD_PARTS + i] : NULL);
}

/*
 * meta.json's cost_table.prims.NAME.ns_p50 for every primitive; -1 where the table has no
 * figure (skipped). A targeted scan, not a JSON parser: the file is the harness's own output.
 */
static int read_prims(const char *path, double *prims, char *err, size_t errlen)
{
	char file[4096], folder[4096], *text, *p;
	size_t len = strlen(path);

	if (len >= 5 && !strcmp(path + len - 5, ".json")) {
		char *slash;

		snprintf(file, sizeof(file), "%s", path);
		snprintf(folder, sizeof(folder), "%s", path);
		slash = strrchr(folder, '/');
		if (slash)
			*slash = 0;
		else
			snprintf(folder, sizeof(folder), ".");
	} else {
		snprintf(file, sizeof(file), "%s/meta.json", path);
		snprintf(folder, sizeof(folder), "%s", path);
	}
	text = read_file(file, err, errlen);
	if (!text)
		return -1;
	/* the traced boot's own table and unscaled parts, the other pairs of boots pooled and
	 * those set aside (costtable/measuring.py measure_traced), kept for the record and never
	 * priced: the scan ends where the first of them begins */
	static const char *const unpriced[] = {"\"traced_boot\"", "\"pooled\"", "\"discarded\""};

	for (size_t i = 0; i < sizeof(unpriced) / sizeof(unpriced[0]); i++) {
		p = strstr(text, unpriced[i]);
		if (p)
			*p = 0;
	}
	p = strstr(text, "\"cost_table\"");
	p = p ? strstr(p, "\"prims\"") : NULL;
	if (!p) {
		snprintf(err, errlen, "costs: %s has no cost_table.prims (run make bench first)",
			 file);
		free(text);
		return -1;
	}
	for (size_t i = 0; i < PRIM_WAKEPATH_RUN; i++)
		p50_p90(p, prim_names[i], &prims[i], &prims[PRIM_P90 + i]);
	for (size_t i = 0; i < NEXIT_PRIMS; i++)
		p50_p90(p, prim_names[PRIM_EXITS + i], &prims[PRIM_EXITS + i],
			&prims[PRIM_EXITS + NEXIT_PRIMS + i]);
	p50_p90(p, prim_names[PRIM_POLL_RTT], &prims[PRIM_POLL_RTT], &prims[PRIM_POLL_RTT + 1]);
	for (size_t i = 0; i < NSLEEP_PRIMS; i++)
		p50_p90(p, prim_names[PRIM_SLEEPS + i], &prims[PRIM_SLEEPS + i],
			&prims[PRIM_SLEEPS + NSLEEP_PRIMS + i]);
	p50_p90(p, prim_names[PRIM_SLEEP_CUT], &prims[PRIM_SLEEP_CUT], &prims[PRIM_SLEEP_CUT + 1]);
	p50_p90(p, prim_names[PRIM_TIMER_POLL], &prims[PRIM_TIMER_POLL],
		&prims[PRIM_TIMER_POLL + 1]);
	p50_p90(p, prim_names[PRIM_SLEEP_RUN], &prims[PRIM_SLEEP_RUN], &prims[PRIM_SLEEP_RUN + 1]);
	for (size_t i = PRIM_INSNS; i < PRIM_P90; i++)
		prims[i] = -1;
	p = strstr(text, "\"path_insns\"");
	p = p ? strchr(p, '{') : NULL;
	if (p) {
		char *end = strchr(p, '}');

		for (size_t i = PRIM_INSNS; end && i < PRIM_P90; i++) {
			char key[64], *v;

			/* "insns_user" -> "user": */
			snprintf(key, sizeof(key), "\"%s\":", prim_names[i] + strlen("insns_"));
			v = strstr(p, key);
			if (v && v < end)
				prims[i] = strtod(v + strlen(key), NULL);
		}
	}
	thread_parts(text, prims);
	free(text);
	wakepath_medians(folder, prims);
	return 0;
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int sum_of_terms(const char *p, const double *prims, const char *field, double *out,
			char *err, size_t errlen);

/*
 * `max(A, B)`: the larger of two sums, e.g. a difference of two measured medians that only
 * holds where one includes the other, kept from going negative where it does not. A and B
 * are sums of terms (no `|` or `~` inside: those split the whole expression first). `p` is
 * past the `(`. Returns the end, NULL on an error; a primitive missing in A or B sets
 * *missing, and err names the first one missing, as factor() does.
 */
static const char *max_of(const char *p, const double *prims, double *out, const char *field,
			  bool *missing, char *err, size_t errlen)
{
	const char *arg = p, *comma = NULL;
	char text[2][512], why[512];
	double v[2];
	int depth = 0;

	for (; *p && !(*p == ')' && depth == 0); p++) {
		depth += (*p == '(') - (*p == ')');
		if (*p == ',' && depth == 0) {
			if (comma) {
				comma = NULL; /* a third argument */
				break;
			}
			comma = p;
		}
	}
	if (*p != ')' || !comma) {
		snprintf(err, errlen, "costs: %s: max needs two arguments: max(A, B)", field);
		return NULL;
	}
	if ((size_t)(comma - arg) >= sizeof(text[0]) || (size_t)(p - comma) > sizeof(text[1])) {
		snprintf(err, errlen, "costs: %s: max(): an argument too long", field);
		return NULL;
	}
	snprintf(text[0], sizeof(text[0]), "%.*s", (int)(comma - arg), arg);
	snprintf(text[1], sizeof(text[1]), "%.*s", (int)(p - comma - 1), comma + 1);
	for (int i = 0; i < 2; i++) {
		int rc = sum_of_terms(text[i], prims, field, &v[i], why, sizeof(why));

		if (rc == -1) {
			snprintf(err, errlen, "%s", why);
			return NULL;
		}
		if (rc == -2) {
			if (!*missing)
				snprintf(err, errlen, "%s", why);
			*missing = true;
			v[i] = 0;
		}
	}
	*out = v[0] > v[1] ? v[0] : v[1];
	return p + 1;
}

/*
 * Where a name in an expression is looked up (values[] in sim_costs_parse_text): the
 * primitives by their names, then the costs given on the lines above as the simulator's
 * record names them (cost.NAME its median, spread.NAME its spread, tail.NAME its tail: a
 * cost may say "as that one where the folder lacks mine"; ipi_send is both a primitive and
 * a cost), -1 where the folder has no figure or the line has not come yet.
 */
#define VAL_COSTS   NPRIMS
#define VAL_SPREADS (NPRIMS + COST__COUNT)
#define VAL_TAILS   (NPRIMS + 2 * COST__COUNT)
#define NVALUES	    (NPRIMS + 3 * COST__COUNT)

static size_t value_index(const char *p, size_t n)
{
	for (size_t i = 0; i < NPRIMS; i++)
		if (strlen(prim_names[i]) == n && !strncmp(p, prim_names[i], n))
			return i;
	for (size_t i = 0; i < COST__COUNT; i++) {
		size_t len = strlen(sim_cost_names[i]);

		if (n == len + 5 && !strncmp(p, "cost.", 5) &&
		    !strncmp(p + 5, sim_cost_names[i], len))
			return VAL_COSTS + i;
		if (n == len + 7 && !strncmp(p, "spread.", 7) &&
		    !strncmp(p + 7, sim_cost_names[i], len))
			return VAL_SPREADS + i;
		if (n == len + 5 && !strncmp(p, "tail.", 5) &&
		    !strncmp(p + 5, sim_cost_names[i], len))
			return VAL_TAILS + i;
	}
	return NVALUES;
}

/*
 * One factor: a time with an optional unit, a primitive, a cost given above, or max(A, B).
 * Returns the end, NULL on error; *missing is set when the error is only a primitive the
 * folder has no figure for.
 */
static const char *factor(const char *p, const double *prims, double *out, const char *field,
			  bool *missing, char *err, size_t errlen)
{
	char *end;

	if (!strncmp(p, "max", 3) && *skip_space(p + 3) == '(')
		return max_of(skip_space(p + 3) + 1, prims, out, field, missing, err, errlen);
	if (isalpha((unsigned char)*p)) {
		size_t n = 0, i;

		while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.')
			n++;
		i = value_index(p, n);
		if (i == NVALUES) {
			snprintf(err, errlen, "costs: %s: unknown primitive or cost '%.*s'", field,
				 (int)n, p);
			return NULL;
		}
		if (i >= VAL_COSTS && prims[i] < 0) {
			snprintf(err, errlen, "costs: %s: uses cost '%.*s' before its own line",
				 field, (int)n, p);
			return NULL;
		}
		if (prims[i] < 0) {
			/* parsing goes on, so that a later error in the same alternative is
			 * still an error, not a reason to fall back to the next one */
			if (!*missing)
				snprintf(
				    err, errlen,
				    "costs: %s: uses primitive '%s' but no measured cost table "
				    "has it (costs=here:RESULTS or a 'results = PATH' line)",
				    field, prim_names[i]);
			*missing = true;
			*out = 0;
			return p + n;
		}
		*out = prims[i];
		return p + n;
	}
	*out = strtod(p, &end);
	if (end == p) {
		snprintf(err, errlen, "costs: %s: expected a time or a primitive at '%s'", field,
			 p);
		return NULL;
	}
	p = end;
	if (!strncmp(p, "ns", 2)) {
		p += 2;
	} else if (!strncmp(p, "us", 2)) {
		*out *= 1e3;
		p += 2;
	} else if (!strncmp(p, "ms", 2)) {
		*out *= 1e6;
		p += 2;
	} else if (*p == 's' && !isalnum((unsigned char)p[1])) {
		*out *= 1e9;
		p += 1;
	}
	return p;
}

/*
 * One term: factors joined by * and / (`alu*80*insns_enter/50`: a fitted multiple of alu
 * scaled by how a path's instruction count changed since the fit). A primitive the folder
 * lacks does not stop the parse (factor()): a later error in the term is still an error.
 */
static const char *term(const char *p, const double *prims, double *out, const char *field,
			bool *missing, char *err, size_t errlen)
{
	p = factor(p, prims, out, field, missing, err, errlen);
	while (p) {
		double v;
		char op;

		p = skip_space(p);
		if (*p != '*' && *p != '/')
			return p;
		op = *p;
		p = skip_space(p + 1);
		if (!*p) {
			snprintf(err, errlen, "costs: %s: '%c' needs a number or a primitive",
				 field, op);
			return NULL;
		}
		p = factor(p, prims, &v, field, missing, err, errlen);
		if (!p)
			return NULL;
		if (op == '/' && v == 0 && !*missing) {
			snprintf(err, errlen, "costs: %s: division by zero", field);
			return NULL;
		}
		*out = op == '*' ? *out * v : v ? *out / v : 0;
	}
	return NULL;
}

/* One alternative: terms joined by + or -. Returns 0, -1 on an error, -2 if only a
 * primitive was missing. */
static int sum_of_terms(const char *p, const double *prims, const char *field, double *out,
			char *err, size_t errlen)
{
	double sum = 0, v;
	int sign = 1;
	bool missing = false;

	for (;;) {
		p = skip_space(p);
		p = term(p, prims, &v, field, &missing, err, errlen);
		if (!p)
			return -1;
		sum += sign * v;
		p = skip_space(p);
		if (!*p)
			break;
		if (*p != '+' && *p != '-') {
			snprintf(err, errlen, "costs: %s: unexpected '%s'", field, p);
			return -1;
		}
		sign = *p == '+' ? 1 : -1;
		p++;
	}
	if (missing)
		return -2; /* err names the first primitive missing */
	*out = sum;
	return 0;
}

/* Alternatives joined by `|`: the first whose primitives are all known. */
static int expression(const char *p, const double *prims, const char *field, double *out, char *err,
		      size_t errlen)
{
	double max = strstr(field, "_ppm") ? PPM_MAX : 1e15;
	char alt[1024];
	int rc = -2;

	if (!*skip_space(p)) {
		snprintf(err, errlen, "costs: %s: empty expression", field);
		return -1;
	}
	while (rc == -2 && *p) {
		size_t n = strcspn(p, "|");

		snprintf(alt, sizeof(alt), "%.*s", (int)n, p);
		p += n + (p[n] == '|');
		rc = sum_of_terms(alt, prims, field, out, err, errlen);
	}
	if (rc)
		return -1;
	if (!(*out >= 0) || *out > max) {
		snprintf(err, errlen, "costs: %s: %.1f is out of range (0 .. %g)", field, *out,
			 max);
		return -1;
	}
	return 0;
}

int sim_costs_parse_text(const char *text, const char *what, const double *prims,
			 struct sim_costs *c, char *err, size_t errlen)
{
	bool given[COST__COUNT] = {0};
	double own[NPRIMS], values[NVALUES];
	char line[1024];
	unsigned lineno = 0;

	for (size_t i = 0; i < NVALUES; i++)
		values[i] = i < NPRIMS && prims ? prims[i] : -1;

	while (*text) {
		size_t n = strcspn(text, "\n");
		char *eq, *name, *val, *hash, *tilde;
		double v;
		unsigned i;

		lineno++;
		snprintf(line, sizeof(line), "%.*s",
			 (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), text);
		text += n + (text[n] == '\n');
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		name = (char *)skip_space(line);
		if (!*name || strspn(name, " \t\r") == strlen(name))
			continue;
		eq = strchr(name, '=');
		if (!eq) {
			snprintf(err, errlen, "costs: %s line %u: expected name = value", what,
				 lineno);
			return -1;
		}
		*eq = 0;
		val = eq + 1;
		for (char *e = eq - 1; e >= name && (*e == ' ' || *e == '\t'); e--)
			*e = 0;
		for (char *e = val + strlen(val) - 1; e >= val && isspace((unsigned char)*e); e--)
			*e = 0;
		if (!strcmp(name, "results")) {
			if (read_prims(skip_space(val), own, err, errlen))
				return -1;
			memcpy(values, own, sizeof(own));
			continue;
		}
		for (i = 0; i < COST__COUNT; i++)
			if (!strcmp(name, sim_cost_names[i]))
				break;
		if (i == COST__COUNT) {
			snprintf(err, errlen, "costs: %s line %u: unknown field '%s'", what, lineno,
				 name);
			return -1;
		}
		if (given[i]) {
			snprintf(err, errlen, "costs: %s line %u: field '%s' given twice", what,
				 lineno, name);
			return -1;
		}
		c->spread[i] = c->tail[i] = 0;
		tilde = strchr(val, '~');
		if (tilde) {
			char field[96], *tail;
			double d;

			*tilde = 0;
			if (strstr(name, "_ppm") || i == COST_wake_cold_max ||
			    i == COST_preempt_per_s || i == COST_other_per_s ||
			    i == COST_host_cpus || i == COST_timer_sleep_short ||
			    i == COST_timer_sleep_long) {
				snprintf(err, errlen,
					 "costs: %s line %u: '%s' is not a drawn cost: no spread",
					 what, lineno, name);
				return -1;
			}
			/* the poll loops' steps set how often a flag is looked at: constants */
			if (i == COST_guest_poll_iter || i == COST_host_poll_iter) {
				snprintf(err, errlen,
					 "costs: %s line %u: '%s' is a poll loop's step: no spread",
					 what, lineno, name);
				return -1;
			}
			tail = strchr(tilde + 1, '~');
			if (tail)
				*tail = 0;
			snprintf(field, sizeof(field), "%s spread", name);
			if (expression(tilde + 1, values, field, &d, err, errlen))
				return -1;
			c->spread[i] = (uint64_t)(d + 0.5);
			if (tail) { /* beyond the p90: the p99 less the p90 (engine.c drawn_at) */
				snprintf(field, sizeof(field), "%s tail", name);
				if (expression(tail + 1, values, field, &d, err, errlen))
					return -1;
				c->tail[i] = c->spread[i] ? (uint64_t)(d + 0.5) : 0;
			}
		}
		if (expression(val, values, name, &v, err, errlen))
			return -1;
		c->v[i] = (uint64_t)(v + 0.5);
		given[i] = true;
		values[VAL_COSTS + i] = (double)c->v[i];
		values[VAL_SPREADS + i] = (double)c->spread[i];
		values[VAL_TAILS + i] = (double)c->tail[i];
	}
	for (unsigned i = 0; i < COST__COUNT; i++) {
		if (!given[i]) {
			snprintf(err, errlen, "costs: %s: missing field '%s'", what,
				 sim_cost_names[i]);
			return -1;
		}
	}
	return 0;
}

static int load_file(const char *path, const double *prims, struct sim_costs *c, char *err,
		     size_t errlen)
{
	char *text = read_file(path, err, errlen);
	int rc;

	if (!text)
		return -1;
	rc = sim_costs_parse_text(text, path, prims, c, err, errlen);
	free(text);
	return rc;
}

/* spec: hardware | here | here:RESULTS (a results folder or its meta.json) | FILE */
int sim_costs_load(const char *spec, struct sim_costs *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (!strcmp(spec, "hardware")) {
		snprintf(c->source, sizeof(c->source), "hardware");
		return load_file(SIM_SRCDIR "/tools/sim/costs/hardware.txt", NULL, c, err, errlen);
	}
	if (!strcmp(spec, "here") || !strncmp(spec, "here:", 5)) {
		const char *results = spec[4] ? spec + 5 : SIM_SRCDIR "/results/latest";
		double prims[NPRIMS];
		char path[4096];

		if (read_prims(results, prims, err, errlen))
			return -1;
		snprintf(c->source, sizeof(c->source), "here:%s", results);
		snprintf(path, sizeof(path), "%s", SIM_SRCDIR "/tools/sim/costs/here.txt");
		return load_file(path, prims, c, err, errlen);
	}
	snprintf(c->source, sizeof(c->source), "%s", spec);
	return load_file(spec, NULL, c, err, errlen);
}
