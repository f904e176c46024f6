/*
 * The records: the guest's own (`idle`, `config`, `cpu`, `result`, `exit`, exactly as the
 * kernel prints them, so tools/idlelab/derive/records.py reads both alike), one `sim` record saying
 * what was simulated with which costs, and one `host` record per vCPU with what KVM's
 * counters and the vCPU thread's CPU time would have shown over the window.
 */
#include "tools/sim/engine.h"

static void emit_line(const char *line, void *ctx)
{
	fprintf((FILE *)ctx, "%s\n", line);
}

void report_header(const struct sim *s)
{
	const struct sim_config *cfg = s->cfg;
	static const char *const msr_names[] = {"0", "1"};

	fprintf(s->out,
		"@idlelab sim simulated=1 smp=%u costs=\"%s\" halt_poll_ns=%u halt_poll_ns_grow=%u "
		"halt_poll_ns_grow_start=%u halt_poll_ns_shrink=%u halt_poll_fixed=%d "
		"kvm_cap_halt_poll=%s",
		cfg->smp, cfg->costs.source, cfg->host.halt_poll_ns, cfg->host.grow,
		cfg->host.grow_start, cfg->host.shrink, cfg->host.fixed,
		cfg->host.vm_override ? "" : "none");
	if (cfg->host.vm_override)
		fprintf(s->out, "%u", cfg->host.vm_max);
	for (unsigned i = 0; i < COST__COUNT; i++)
		fprintf(s->out, " cost.%s=%lu", sim_cost_names[i], cfg->costs.v[i]);
	for (unsigned i = 0; i < COST__COUNT; i++) /* only the costs drawn, not constants */
		if (cfg->costs.spread[i])
			fprintf(s->out, " spread.%s=%lu", sim_cost_names[i], cfg->costs.spread[i]);
	fprintf(s->out,
		"\n@idlelab idle policy=%s reason=%s pollflag=%d hostpoll=%s msr=%s "
		"poll_iter_ns=%lu tick_nsec=%lu\n",
		knob_defs[KNOB_idle].choices[s->policy], s->policy_reason, s->pollflag,
		knob_defs[KNOB_hostpoll].choices[cfg->knobs.v[KNOB_hostpoll]],
		msr_names[s->msr & 1], s->c[COST_guest_poll_iter], s->tick_nsec);
	knobs_print_values(&cfg->knobs, 900, emit_line, s->out);
}

#define D(f) (g->f - a->f)

static void cpu_record(const struct sim *s, unsigned i)
{
	const struct sim_gstats *g = &s->cpu[i].g, *a = &s->snap[i];

	fprintf(s->out,
		"@idlelab cpu id=%u ctx_switches=%lu wakeups=%lu wakeups_local=%lu "
		"wakeups_remote=%lu ipi_sent=%lu ipi_avoided=%lu ipi_received=%lu "
		"timer_irqs=%lu ticks=%lu idle_entries=%lu poll_entries=%lu poll_hits=%lu "
		"poll_immediate=%lu poll_expired=%lu halts=%lu halts_aborted=%lu hlt=%lu "
		"grow=%lu shrink=%lu window_ns=%lu idle_ns=%lu poll_ns=%lu halt_ns=%lu "
		"poll_overshoot_ns=%lu poll_overshoot_max_ns=%lu takeovers=%lu\n",
		i, D(ctx_switches), D(wakeups_local) + D(wakeups_remote), D(wakeups_local),
		D(wakeups_remote), D(ipi_sent), D(ipi_avoided), D(ipi_received), D(timer_irqs),
		D(ticks), D(idle_entries), D(poll_entries), D(poll_hits), D(poll_immediate),
		D(poll_expired), D(halts), D(halts_aborted), D(hlt), D(grow), D(shrink),
		s->policy == IDLE_HALTPOLL ? s->gov->window_ns(&s->cpu[i].gov) : 0,
		D(poll_ns) + D(halt_ns), D(poll_ns), D(halt_ns), D(poll_overshoot_ns),
		g->poll_overshoot_max_ns, s->cpu[i].gov.takeovers - s->takeovers_snap[i]);
}

#undef D
#define D(f) (h->f - a->f)

static void host_record(const struct sim *s, unsigned i, uint64_t window_ns)
{
	const struct hp_vcpu *h = &s->cpu[i].host, *a = &s->host_snap[i];
	uint64_t cpu_ns = s->cpu[i].g.host_cpu_ns - s->snap[i].host_cpu_ns;
	uint64_t pct100 = window_ns ? cpu_ns * 10000 / window_ns : 0;
	uint64_t poll_ns = D(poll_success_ns) + D(poll_fail_ns);
	uint64_t poll100 = window_ns ? poll_ns * 10000 / window_ns : 0;

	fprintf(s->out,
		"@idlelab host vcpu=%u simulated=1 halt_exits=%lu attempted_poll=%lu "
		"successful_poll=%lu poll_invalid=%lu halt_wakeup=%lu poll_success_ns=%lu "
		"poll_fail_ns=%lu wait_ns=%lu cpu_ns=%lu cpu_pct=%lu.%02lu poll_pct=%lu.%02lu "
		"halt_poll_ns_now=%lu preemptions=%lu\n",
		i, D(halt_exits), D(attempted_poll), D(successful_poll), D(poll_invalid),
		D(halt_wakeup), D(poll_success_ns), D(poll_fail_ns), D(wait_ns), cpu_ns,
		pct100 / 100, pct100 % 100, poll100 / 100, poll100 % 100, h->w,
		s->cpu[i].g.preemptions - s->snap[i].preemptions);
}

void report_window(const struct sim *s, uint64_t window_ns)
{
	for (unsigned i = 0; i < s->ncpus; i++)
		cpu_record(s, i);
	for (unsigned i = 0; i < s->ncpus; i++)
		host_record(s, i, window_ns);
	wl_report((struct sim *)s, window_ns);
	fprintf(s->out, "@idlelab exit code=0x10 name=SUCCESS cpu=0\n");
}
