/*
 * The records: the guest's own (`idle`, `config`, `cpu`, `result`, `exit`, exactly as the
 * kernel prints them, so tools/idlelab/derive/guestrun.py reads both alike), one `sim` record saying
 * what was simulated with which costs, and one `host` record per vCPU with what KVM's
 * counters and the vCPU thread's CPU time would have shown over the window.
 */
#include "kernel/cpu_record.h"
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
	for (unsigned i = 0; i < COST__COUNT; i++)
		if (cfg->costs.tail[i])
			fprintf(s->out, " tail.%s=%lu", sim_cost_names[i], cfg->costs.tail[i]);
	fprintf(s->out,
		"\n@idlelab idle policy=%s reason=%s pollflag=%d hostpoll=%s msr=%s "
		"poll_iter_ns=%lu tick_nsec=%lu steal_time=none\n",
		knob_defs[KNOB_idle].choices[s->policy], s->policy_reason, s->pollflag,
		knob_defs[KNOB_hostpoll].choices[cfg->knobs.v[KNOB_hostpoll]],
		msr_names[s->msr & 1], s->c[COST_guest_poll_iter], s->tick_nsec);
	knobs_print_values(&cfg->knobs, 900, emit_line, s->out);
}

#define D(f) (g->f - a->f)

/*
 * Each field's value over the window, by the table's name (kernel/cpu_record.h). Four are
 * what the model makes them, 0: idle_aborted, as select and the state's entry are one
 * instant here (engine.c idle_decide), so no work comes between them; steal_ns, as the
 * simulated guest has no kvm-steal-time (the idle record says steal_time=none; the host's
 * other tasks are the host record's preemptions); polls_suspended, as without steal time
 * haltpoll.steal_threshold= never suspends polling (the kernel's steal gate alike); and
 * shadow_breaks, as the modelled host keeps STI's shadow.
 */
#define VAL_id			   i
#define VAL_ctx_switches	   D(ctx_switches)
#define VAL_wakeups		   (D(wakeups_local) + D(wakeups_remote))
#define VAL_wakeups_local	   D(wakeups_local)
#define VAL_wakeups_remote	   D(wakeups_remote)
#define VAL_ipi_sent		   D(ipi_sent)
#define VAL_ipi_avoided		   D(ipi_avoided)
#define VAL_ipi_received	   D(ipi_received)
#define VAL_timer_irqs		   D(timer_irqs)
#define VAL_ticks		   D(ticks)
#define VAL_idle_entries	   D(idle_entries)
#define VAL_idle_aborted	   0
#define VAL_poll_entries	   D(poll_entries)
#define VAL_poll_hits		   D(poll_hits)
#define VAL_poll_immediate	   D(poll_immediate)
#define VAL_poll_expired	   D(poll_expired)
#define VAL_halts		   D(halts)
#define VAL_halts_aborted	   D(halts_aborted)
#define VAL_hlt			   D(hlt)
#define VAL_grow		   D(grow)
#define VAL_shrink		   D(shrink)
#define VAL_window_ns		   (s->policy == IDLE_HALTPOLL ? s->gov->window_ns(&s->cpu[i].gov) : 0)
#define VAL_idle_ns		   (D(poll_ns) + D(halt_ns))
#define VAL_poll_ns		   D(poll_ns)
#define VAL_halt_ns		   D(halt_ns)
#define VAL_poll_overshoot_ns	   D(poll_overshoot_ns)
#define VAL_poll_overshoot_max_ns  g->poll_overshoot_max_ns
#define VAL_steal_ns		   0
#define VAL_polls_suspended	   0
#define VAL_takeovers		   (s->cpu[i].gov.takeovers - s->takeovers_snap[i])
#define VAL_shadow_breaks	   0
#define VALUE(name, unit, meaning) v[CPU_REC_##name] = VAL_##name;

static void cpu_record(const struct sim *s, unsigned i)
{
	const struct sim_gstats *g = &s->cpu[i].g, *a = &s->snap[i];
	uint64_t v[CPU_REC__COUNT];
	char line[CPU_RECORD_LINE_MAX];

	CPU_RECORD_FIELDS(VALUE)
	cpu_record_format(line, sizeof(line), v);
	fprintf(s->out, "%s\n", line);
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
		pct100 / 100, pct100 % 100, poll100 / 100, poll100 % 100, (uint64_t)h->w,
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
