/*
 * The idle loop's setup (kernel/idle.c runs the loop): the policy and its reason, the
 * governor and its tunables, the poll loop's calibration, the host's poll-control MSR and
 * steal time, each CPU's part of them, and the `@idlelab idle` record that tells a run
 * what was chosen.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/kvm.h"
#include "arch/x86/tsc.h"
#include "kernel/idle.h"
#include "kernel/idle_config.h"
#include "kernel/percpu.h"
#include "kernel/policy/governors.h"
#include "kernel/policy/haltpoll.h"
#include "kernel/policy/idle_policy.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/static_branch.h"
#include "kernel/timeline.h"
#include "kernel/timer.h"

#define POLL_CHECKS_PER_W 100 /* read the clock at least every 1 % of the window */
#define POLL_CALIBRATE_N  256

struct idle_config idle_config;

static const char *policy_reason;
static int msr_value;		    /* what every CPU writes; -1: the host offers no MSR */
static int msr_read_back[MAX_CPUS]; /* what each CPU read back after writing it */
static bool steal_time;		    /* kvm-steal-time offered and registered on every CPU */

/*
 * How many iterations between clock reads so that a window of limit_cyc is checked at
 * least POLL_CHECKS_PER_W times. Linux's fixed 201 assumes a PAUSE of tens of cycles; under
 * an emulating hypervisor one iteration can cost microseconds, and 201 of them would
 * overshoot a 200 us window several times over.
 */
unsigned idle_poll_check_every(uint64_t limit_cyc)
{
	uint64_t n, iter = idle_config.poll_iter_cycles;

	if (limit_cyc == UINT64_MAX)
		return IDLE_POLL_CHECK_MAX;
	n = limit_cyc / POLL_CHECKS_PER_W / (iter ? iter : 1);
	return n < 1 ? 1 : n > IDLE_POLL_CHECK_MAX ? IDLE_POLL_CHECK_MAX : (unsigned)n;
}

/* Times the poll loop's body (flag load, PAUSE, count) with the clock read taken out. */
static uint64_t calibrate_poll_iteration(void)
{
	struct cpu *c = this_cpu();
	unsigned n = 0;
	uint64_t t0 = rdtsc();

	while (!(__atomic_load_n(&c->flags, __ATOMIC_SEQ_CST) & CPU_NEED_RESCHED) &&
	       ++n < POLL_CALIBRATE_N)
		cpu_relax();
	return (rdtsc() - t0) / POLL_CALIBRATE_N;
}

static struct idle_env idle_env(void)
{
	const struct cpu_features *f = &cpu_features;

	return (struct idle_env){
	    .kvm = f->kvm,
	    .realtime_hint = f->kvm && (f->kvm_hints >> KVM_HINTS_REALTIME) & 1,
	    .force = knob(KNOB_haltpoll_force),
	    .pollctl = kvm_has(KVM_FEATURE_POLL_CONTROL),
	};
}

/* idle_config from the knobs that can switch between windows (kernel/knobs/switchable.c),
 * and the static branches that mirror it: at boot, and again with every other CPU parked. */
static void configure(void)
{
	struct idle_config *k = &idle_config;
	struct idle_env env = idle_env();

	k->policy = idle_policy_choose((int)knob(KNOB_idle), &env, &policy_reason);
	msr_value = hostpoll_msr_value((int)knob(KNOB_hostpoll), k->policy, &env);
	k->pollflag = knob(KNOB_pollflag);
	k->latency_req_zero = knob(KNOB_latency_req_zero);
	k->params = (struct gov_params){
	    .guest_halt_poll_ns = (uint32_t)knob(KNOB_guest_halt_poll_ns),
	    .grow = (uint32_t)knob(KNOB_guest_halt_poll_grow),
	    .shrink = (uint32_t)knob(KNOB_guest_halt_poll_shrink),
	    .grow_start = (uint32_t)knob(KNOB_guest_halt_poll_grow_start),
	    .allow_shrink = knob(KNOB_guest_halt_poll_allow_shrink),
	    .legacy_shrink = knob(KNOB_haltpoll_legacy_shrink),
	};
	k->gov = idle_governors[knob(KNOB_governor)];
	k->steal_threshold = (uint32_t)knob(KNOB_steal_threshold);
	/* The idle loop reads these on every entry: as branches patched now (static_branch.h). */
	static_branch_switch(BRANCH_IDLE_HALTPOLL, k->policy == IDLE_HALTPOLL);
	static_branch_switch(BRANCH_IDLE_POLL, k->policy == IDLE_POLL);
	static_branch_switch(BRANCH_GOV_PREDICT, k->gov == &gov_predict);
	static_branch_switch(BRANCH_POLLFLAG_OFF, !k->pollflag);
	static_branch_switch(BRANCH_STEAL_GATE, k->steal_threshold != 0);
}

void idle_setup(void)
{
	struct idle_config *k = &idle_config;

	configure();
	timeline_reflect_source(idle_window_ns);
	/* With hz=0 there is no tick length; the W=0 fallback then uses a 250 Hz tick. */
	k->tick_nsec = haltpoll_tick_nsec(timer_hz() ? timer_hz() : 250);
	k->poll_iter_cycles = calibrate_poll_iteration();
	steal_time = kvm_has(KVM_FEATURE_STEAL_TIME);
	if (k->steal_threshold && !steal_time)
		printk("idlelab: haltpoll.steal_threshold=%u has no effect: the host offers no "
		       "kvm-steal-time",
		       k->steal_threshold);
	if (msr_value < 0 && idle_policy_polls(k->policy))
		printk("idlelab: the host does not offer MSR_KVM_POLL_CONTROL; guest and host "
		       "may both poll");
	static_branch_set(BRANCH_RECONFIGURE, knob_given(KNOB_windows));
}

/*
 * Settings generation: bumped by idle_reconfigure(), followed by each CPU at its next idle
 * entry (idle_reconfigure_cpu), where its governor state is not in use. Written by the BSP
 * with every other CPU parked; the barrier's release orders it before their next read.
 */
static uint32_t config_generation;
static uint32_t cpu_generation[MAX_CPUS];
static bool governor_restart;

void idle_reconfigure(void)
{
	const struct idle_governor *gov = idle_config.gov;
	int policy = idle_config.policy;

	configure();
	governor_restart = gov != idle_config.gov || policy != idle_config.policy;
	__atomic_store_n(&config_generation, config_generation + 1, __ATOMIC_RELEASE);
}

/* Each CPU at the barrier's release: the MSR is per CPU, and safe to write at any point. */
void idle_reconfigure_msr(void)
{
	struct cpu *c = this_cpu();

	if (msr_value >= 0)
		msr_read_back[c->id] = kvm_poll_control_set(msr_value);
}

void idle_reconfigure_cpu(struct cpu *c)
{
	uint32_t gen = __atomic_load_n(&config_generation, __ATOMIC_ACQUIRE);

	if (cpu_generation[c->id] == gen)
		return;
	cpu_generation[c->id] = gen;
	/* A new policy or governor starts from its initial state, as Linux's does when it is
	 * enabled; a tunable written while it runs keeps the window (as a sysfs write does). */
	if (governor_restart)
		idle_config.gov->enable(&c->gov);
}

/* The value every CPU read back from MSR_KVM_POLL_CONTROL, not the one it meant to write. */
static const char *msr_record_value(void)
{
	static const char *const names[] = {"0", "1"};

	if (msr_value < 0)
		return "none";
	for (unsigned i = 1; i < ncpus; i++)
		if (msr_read_back[i] != msr_read_back[0])
			return "mixed";
	return names[msr_read_back[0] & 1];
}

/* kernel/idle.c has an entry for each governor, with its functions compiled in: haltpoll's,
 * and predict's behind BRANCH_GOV_PREDICT. A governor more needs an entry of its own there. */
_Static_assert(KNOB_NCHOICES_governor == 2, "kernel/idle.c's governed_entry() knows two governors");

/* How the idle loop reaches the governor: directly (its entry, kernel/idle.c) under
 * idle=haltpoll; none under idle=halt and idle=poll. */
static const char *loop_record_value(void)
{
	return idle_config.policy == IDLE_HALTPOLL ? "direct" : "none";
}

void idle_print_record(void)
{
	const struct idle_config *k = &idle_config;

	printk(
	    "@idlelab idle policy=%s governor=%s reason=%s pollflag=%d hostpoll=%s msr=%s "
	    "poll_iter_ns=%lu poll_check_every=%u tick_nsec=%lu steal_time=%s steal_threshold=%u "
	    "loop=%s",
	    knob_defs[KNOB_idle].choices[k->policy], k->gov->name, policy_reason, k->pollflag,
	    knob_defs[KNOB_hostpoll].choices[knob(KNOB_hostpoll)], msr_record_value(),
	    tsc_to_ns(k->poll_iter_cycles),
	    idle_poll_check_every(ns_to_tsc(k->params.guest_halt_poll_ns)), k->tick_nsec,
	    steal_time ? "kvm" : "none", k->steal_threshold, loop_record_value());
}

void idle_init_cpu(void)
{
	struct cpu *c = this_cpu();

	idle_config.gov->enable(&c->gov);
	if (steal_time)
		kvm_steal_time_enable(c->id);
	if (msr_value < 0)
		return;
	msr_read_back[c->id] = kvm_poll_control_set(msr_value);
	if (msr_read_back[c->id] != msr_value)
		panic("MSR_KVM_POLL_CONTROL did not keep the value %d", msr_value);
}

const char *idle_policy_name(void)
{
	return knob_defs[KNOB_idle].choices[idle_config.policy];
}

uint64_t idle_window_ns(const struct cpu *c)
{
	return idle_config.policy == IDLE_HALTPOLL ? idle_config.gov->window_ns(&c->gov) : 0;
}
