/*
 * The vCPU state machine. Each vCPU is in one state of enum vstate at a time; a state ends
 * at a time (EV_STATE_END) or when an event arrives (an IPI, a timer, KVM waking it). The
 * guest half mirrors kernel/idle.c and kernel/sched.c step for step (idle loop, poll state
 * with the POLLING bit, halt state, thread_wake's CAS with IPI_PENDING), calling the
 * kernel's own governor (kernel/policy/governors.c) where idle.c calls it; the host half is
 * KVM's halt handling (spec §2.3) through tools/sim/host_poll.c. What each step costs is the
 * cost table's business (tools/sim/costs.c), never a constant here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/policy/idle_policy.h"
#include "tools/sim/engine.h"

#define NEVER UINT64_MAX

/* Linux's PAUSE count between clock reads, and ours per window (kernel/idle.c). */
#define POLL_CHECK_MAX	  200
#define POLL_CHECKS_PER_W 100

static bool in_halt(enum vstate st)
{
	return st >= V_HEXIT && st <= V_ENTRY;
}

uint64_t sim_knob(const struct sim *s, enum knob_id id)
{
	return (uint64_t)s->cfg->knobs.v[id];
}

static double uniform(struct prng *rng)
{
	return ((double)(prng_next(rng) >> 11) + 1.0) / 9007199254740992.0; /* (0, 1] */
}

static double cost_uniform(struct sim *s)
{
	return uniform(&s->cost_rng);
}

/* Where the tail begins: the draws above the p90 (u is the chance of a cost at least that dear). */
#define TAIL_U 0.1

/*
 * A median, spread and tail's cost at the draw's quantile u (see sim_cost()). Up to the p90
 * a shifted exponential through the median and the p90; beyond it an exponential through the
 * p90 and the p99 (median + spread + tail), where a tail is given, else the same exponential
 * on: the nested host's wake-ups reach 2-10 times further past their p90 than the body's
 * exponential would put them (docs/notebook/2026-12-07-the-way-into-idle.md).
 */
static uint64_t drawn_at(double median, double spread, double tail, double u)
{
	double x = median + spread * (-log(u) - M_LN2) / log(5.0);

	if (tail && u < TAIL_U)
		x = median + spread + tail * log(TAIL_U / u) / log(10.0);
	return x > 0 ? (uint64_t)(x + 0.5) : 0;
}

/* The cost at the draw's quantile u (costs that must move together share one u). */
static uint64_t cost_at(const struct sim *s, enum sim_cost_id id, double u)
{
	if (!s->spread[id])
		return s->c[id];
	return drawn_at((double)s->c[id], (double)s->spread[id], (double)s->tail[id], u);
}

/*
 * A time cost as one use of it takes. A cost with a spread (the cost table's `~`, its p90
 * less its median) is drawn at each use from a shifted exponential, median + spread *
 * (E - ln 2) / ln 5 with E ~ Exp(1), which has the median and the p90 given and a long tail
 * to the right, as wake-ups and IPIs have; never below 0; beyond the p90 the tail's own
 * exponential where the cost has one (a second `~`: its p99 less its p90). Why not
 * constants: every halt then lasts the same, and a host window near that length would cover
 * all of them or none, where KVM's counters show a mix. A cost without a spread is the
 * constant and draws nothing, so a table without spreads (hardware) gives what it always
 * gave.
 */
uint64_t sim_cost(struct sim *s, enum sim_cost_id id)
{
	return s->spread[id] ? cost_at(s, id, cost_uniform(s)) : s->c[id];
}

/*
 * A timer's cost for a halted vCPU that slept `slept` before its timer expired: `id` as
 * measured after a sleep of timer_sleep_short, `long_id` after timer_sleep_long (the nested
 * host wakes a thread that slept for milliseconds slower than one that slept for a fraction
 * of one); between the two by the sleep, median, spread and tail alike, in one draw. A table
 * without the long ones (long <= short) prices every sleep by `id`, drawing as before.
 */
static uint64_t timer_cost(struct sim *s, enum sim_cost_id id, enum sim_cost_id long_id,
			   uint64_t slept)
{
	uint64_t lo = s->c[COST_timer_sleep_short], hi = s->c[COST_timer_sleep_long];
	double w, median, spread, tail;

	if (hi <= lo || slept <= lo)
		return sim_cost(s, id);
	if (slept >= hi)
		return sim_cost(s, long_id);
	w = (double)(slept - lo) / (double)(hi - lo);
	median = (double)s->c[id] + w * ((double)s->c[long_id] - (double)s->c[id]);
	spread = (double)s->spread[id] + w * ((double)s->spread[long_id] - (double)s->spread[id]);
	tail = (double)s->tail[id] + w * ((double)s->tail[long_id] - (double)s->tail[id]);
	return spread ? drawn_at(median, spread, tail, cost_uniform(s)) : (uint64_t)(median + 0.5);
}

/* Charges the time since the last call to the state the vCPU was in. */
static void account(struct sim *s, struct vcpu *v)
{
	uint64_t dt = s->now - v->t_acct, from, to;

	from = v->t_acct > v->preempt_from ? v->t_acct : v->preempt_from;
	to = s->now < v->preempt_until ? s->now : v->preempt_until;
	v->t_acct = s->now;
	if (!dt)
		return;
	if (v->state == V_BLOCKED)
		v->g.host_cpu_ns += (dt * s->c[COST_block_charge_ppm] + 500000) / 1000000;
	else if (v->state != V_WAKING)
		v->g.host_cpu_ns += dt - (to > from ? to - from : 0); /* not while preempted */
	if (v->state == V_GPOLL)
		v->g.poll_ns += dt;
	else if (v->state >= V_HEXIT)
		v->g.halt_ns += dt; /* from HLT to the guest's return, as halt_state() times it */
}

static void set_state(struct sim *s, struct vcpu *v, enum vstate st, uint64_t dur)
{
	account(s, v);
	v->state = st;
	v->state_gen++;
	v->state_end = dur == NEVER ? NEVER : s->now + dur;
	if (dur != NEVER)
		events_push(&s->ev, v->state_end, v->id, EV_STATE_END, v->state_gen);
}

/* Moves the end of the current state (an interrupt handler ran inside it); a preempted
 * thread does nothing before it has its CPU again. */
static void move_end(struct sim *s, struct vcpu *v, uint64_t end)
{
	if (end < v->preempt_until)
		end = v->preempt_until;
	v->state_end = end;
	v->state_gen++;
	events_push(&s->ev, end, v->id, EV_STATE_END, v->state_gen);
}

static void arm_timer(struct sim *s, struct vcpu *v)
{
	uint64_t t = NEVER;

	if (v->sleep_deadline && v->sleep_deadline < t)
		t = v->sleep_deadline;
	if (v->tick_deadline && v->tick_deadline < t)
		t = v->tick_deadline;
	if (v->idle_deadline && v->idle_deadline < t)
		t = v->idle_deadline;
	v->timer_gen++;
	if (t != NEVER && !v->timer_fired)
		events_push(&s->ev, t < s->now ? s->now : t, v->id, EV_TIMER, v->timer_gen);
}

static void irq_at(struct sim *s, struct vcpu *v, uint64_t t)
{
	if (t < v->preempt_until) /* a preempted thread takes it when it runs again */
		t = v->preempt_until;
	if (v->irq_at && v->irq_at <= t && v->irq_at >= v->preempt_until)
		return;
	v->irq_at = t;
	v->irq_gen++;
	events_push(&s->ev, t, v->id, EV_IRQ, v->irq_gen);
}

static void trace(struct sim *s, struct vcpu *v, const char *state, const char *outcome,
		  uint64_t residency)
{
	if (!s->cfg->trace)
		return;
	fprintf(s->out,
		"@idlelab trace cpu=%u t_ns=%lu state=%s outcome=%s residency_ns=%lu "
		"window_ns=%lu\n",
		v->id, s->now, state, outcome, residency, s->gov->window_ns(&v->gov));
}

/* ---- waking threads (kernel/sched.c: thread_wake, sched_resched_cpu) ------------------ */

/* The target's poll loop reads the flag word every iteration: it leaves one hop later. */
static void poll_sees_flag(struct sim *s, struct vcpu *to)
{
	uint64_t end = s->now + sim_cost(s, COST_poll_wake);

	if (to->state == V_GPOLL && end < to->state_end)
		move_end(s, to, end);
}

/* Returns what the waker pays (an IPI's ICR write exit), 0 if it sent none. */
static uint64_t resched_cpu(struct sim *s, struct vcpu *from, struct vcpu *to)
{
	uint32_t old = to->flags;
	enum sim_cost_id send_cost;
	bool send;
	double u;

	if (from == to) {
		to->flags |= F_NEED_RESCHED;
		return 0;
	}
	send = !(old & (F_IPI_PENDING | F_POLLING));
	to->flags |= F_NEED_RESCHED | (send ? F_IPI_PENDING : 0);
	if (!(old & F_NEED_RESCHED))
		poll_sees_flag(s, to);
	if (!send) {
		if (old & F_POLLING)
			from->g.ipi_avoided++;
		return 0;
	}
	from->g.ipi_sent++;
	from->exited = true;
	/* the sender's exit wakes a target asleep in KVM itself: dearer (L1 trace, nested host,
	 * 2026-12-02: 49 us from kvm_exit to kvm_entry against 23 for a polling target) */
	send_cost = to->state == V_BLOCKED ? COST_ipi_send : COST_ipi_send_awake;
	/* one draw for both: the IPI is in the target's LAPIC when the sender's exit ends */
	u = s->spread[send_cost] || s->spread[COST_ipi_latency] ? cost_uniform(s) : 1;
	events_push(&s->ev, s->now + cost_at(s, COST_ipi_latency, u), to->id, EV_IPI, 0);
	return cost_at(s, send_cost, u);
}

static uint64_t wake_thread(struct sim *s, struct vcpu *from, struct sim_thread *t)
{
	struct vcpu *to = &s->cpu[t->cpu];

	if (from == to)
		from->g.wakeups_local++;
	else
		from->g.wakeups_remote++;
	if (t->state != T_BLOCKED) {
		t->wake_pending = true; /* it has not blocked yet: its next block returns */
		return 0;
	}
	t->state = T_RUNNABLE;
	return resched_cpu(s, from, to);
}

/* ---- interrupts ------------------------------------------------------------------------ */

/* Runs the pending handlers (resched IPI, timer: sleep wake-up and tick); returns their cost. */
static uint64_t run_handlers(struct sim *s, struct vcpu *v)
{
	uint64_t cost = 0;

	if (v->irq_pending)
		v->exited = true; /* the handlers' EOI */
	if (v->irq_pending & IRQ_RESCHED) {
		v->flags &= ~F_IPI_PENDING;
		v->g.ipi_received++;
		cost += sim_cost(s, COST_irq_entry);
	}
	if (v->irq_pending & IRQ_TIMER) {
		v->g.timer_irqs++;
		cost += sim_cost(s, COST_timer_irq);
		if (v->sleep_deadline && v->sleep_deadline <= s->now) {
			v->sleep_deadline = 0;
			if (v->thread)
				wake_thread(s, v, v->thread);
		}
		if (v->tick_deadline && v->tick_deadline <= s->now) {
			uint64_t next = v->tick_deadline + s->tick_period;

			v->g.ticks++;
			cost += sim_cost(s, COST_timer_arm);
			v->tick_deadline = next <= s->now ? s->now + s->tick_period : next;
		}
		if (v->idle_deadline && v->idle_deadline <= s->now)
			v->idle_deadline = 0; /* kernel/idle.c: idle_timer_fired does nothing */
		v->timer_fired = false;
		arm_timer(s, v);
	}
	v->irq_pending = v->irq_seen = 0;
	v->irq_at = 0;
	v->irq_gen++;
	return cost;
}

/* Interrupts reach a vCPU running guest code: the handlers run inside the current state. */
static void deliver_in_guest(struct sim *s, struct vcpu *v)
{
	uint64_t cost = run_handlers(s, v), end = s->now + cost;

	if (v->state == V_GPOLL) {
		if (v->flags & F_NEED_RESCHED)
			move_end(s, v, end); /* the poll loop sees it as the handler returns */
		else if (v->state_end != NEVER && end > v->state_end)
			move_end(s, v, end);
		return;
	}
	if (cost)
		move_end(s, v, v->state_end + cost);
}

/* ---- the idle loop (kernel/idle.c) ------------------------------------------------------ */

static void go_idle(struct sim *s, struct vcpu *v, uint64_t cost)
{
	set_state(s, v, V_IDLE_ENTRY, cost);
}

static void go_schedule(struct sim *s, struct vcpu *v)
{
	v->flags &= ~F_NEED_RESCHED;
	if (!v->thread || v->thread->state != T_RUNNABLE) {
		go_idle(s, v, sim_cost(s, COST_idle_reentry));
		return;
	}
	/* no ctx_switches++: the kernel's blocked thread idles in place and resumes itself,
	 * and here each vCPU has one thread (kernel/sched.c: schedule) */
	set_state(s, v, V_WAKE_PATH, sim_cost(s, COST_wake_path));
}

/* When a poll with this limit is seen to expire: the first clock check past it. */
static uint64_t poll_expiry(const struct sim *s, uint64_t limit)
{
	uint64_t iter = s->c[COST_guest_poll_iter] ? s->c[COST_guest_poll_iter] : 1;
	uint64_t every = limit / POLL_CHECKS_PER_W / iter, check;

	every = every < 1 ? 1 : every > POLL_CHECK_MAX ? POLL_CHECK_MAX : every;
	check = every * iter;
	return (limit / check + 1) * check;
}

static void start_poll(struct sim *s, struct vcpu *v, uint64_t limit)
{
	bool work = v->flags & F_NEED_RESCHED;

	v->t_entry = s->now;
	v->poll_limit = limit;
	v->poll_immediate = s->pollflag && work;
	if (s->pollflag)
		v->flags |= F_POLLING;
	set_state(s, v, V_GPOLL, work ? 0 : limit == NEVER ? NEVER : poll_expiry(s, limit));
}

static void count_adjust(struct vcpu *v, enum gov_adjust a)
{
	if (a == GOV_ADJ_GROW)
		v->g.grow++;
	else if (a == GOV_ADJ_SHRINK)
		v->g.shrink++;
}

/* limit_ns: the governor's halt_limit (0: none); the idle driver arms a timer for it. */
static void start_halt(struct sim *s, struct vcpu *v, uint64_t limit_ns)
{
	uint64_t exit_cost;

	v->g.idle_entries++;
	v->g.halts++;
	if (v->flags & F_NEED_RESCHED) { /* the halt's enter skips HLT; reflected, near 0 */
		struct gov_entry e = {.state = GOV_STATE_HALT,
				      .residency_ns = 1,
				      .limit_ns = GOV_NO_LIMIT,
				      .work = true};

		v->g.halts_aborted++;
		if (s->policy == IDLE_HALTPOLL)
			count_adjust(v, s->gov->reflect(&v->gov, &s->gp, &e));
		trace(s, v, "halt", "aborted", 0);
		go_schedule(s, v);
		return;
	}
	v->g.hlt++;
	v->t_hlt = s->now;
	if (v->id == 0 && s->cfg->script_halt && s->script_pos &&
	    s->cfg->script_halt[s->script_pos - 1] && v->sleep_deadline) {
		/* a replayed halt lasts what the recorded one did */
		v->sleep_deadline = s->now + s->cfg->script_halt[s->script_pos - 1];
		arm_timer(s, v);
	}
	if (limit_ns) {
		v->idle_deadline = s->now + limit_ns;
		v->timer_fired = false;
		arm_timer(s, v);
	}
	hp_halt_exit(&v->host);
	v->halt_gen++;
	v->exited = true;
	exit_cost = sim_cost(s, COST_halt_exit); /* two draws, in this order */
	if (limit_ns)
		exit_cost += sim_cost(s, COST_timer_arm);
	set_state(s, v, V_HEXIT, exit_cost);
}

/* The idle loop with interrupts off: schedule, or one idle entry of the policy. */
static void idle_decide(struct sim *s, struct vcpu *v)
{
	bool stop_tick = true;

	if (v->flags & F_NEED_RESCHED) {
		go_schedule(s, v);
		return;
	}
	if (s->policy == IDLE_HALT) {
		start_halt(s, v, 0);
	} else if (s->policy == IDLE_POLL) {
		start_poll(s, v, NEVER);
	} else if (s->gov->select(&v->gov, &s->gp, s->latency_req_zero, &stop_tick) ==
		   GOV_STATE_POLL) {
		s->gov->poll_begin(&v->gov);
		start_poll(s, v, s->gov->poll_limit(&v->gov, &s->gp, s->tick_nsec));
	} else {
		start_halt(s, v, s->gov->halt_limit(&v->gov, &s->gp));
	}
}

static void poll_done(struct sim *s, struct vcpu *v)
{
	uint64_t elapsed = s->now - v->t_entry, limit = v->poll_limit;
	bool work = v->flags & F_NEED_RESCHED;
	const char *outcome = "hit";

	v->flags &= ~F_POLLING;
	v->g.idle_entries++;
	v->g.poll_entries++;
	if (v->poll_immediate) {
		v->g.poll_immediate++;
		outcome = "immediate";
	} else if (work) {
		v->g.poll_hits++;
	} else {
		uint64_t over = elapsed - limit;

		v->g.poll_expired++;
		v->g.poll_overshoot_ns += over;
		if (over > v->g.poll_overshoot_max_ns)
			v->g.poll_overshoot_max_ns = over;
		outcome = "expired";
	}
	if (s->policy == IDLE_HALTPOLL) {
		/* (the modelled poll sees NEED_RESCHED as it ends: never work_at_expiry) */
		struct gov_entry e = {.state = GOV_STATE_POLL,
				      .residency_ns = elapsed,
				      .limit_ns = v->poll_immediate ? GOV_NO_LIMIT : limit,
				      .work = work};

		count_adjust(v, s->gov->reflect(&v->gov, &s->gp, &e));
	}
	trace(s, v, "poll", outcome, elapsed);
	if (work)
		go_schedule(s, v);
	else
		go_idle(s, v, sim_cost(s, COST_idle_reentry));
}

/* halt_state() returns: the governor adapts on the residency, then the idle loop goes on. */
static void halt_return(struct sim *s, struct vcpu *v)
{
	uint64_t residency = s->now - v->t_hlt, cancel = 0;

	if (v->idle_deadline) { /* timer_cancel: the next deadline is programmed instead */
		v->idle_deadline = 0;
		arm_timer(s, v);
		cancel = sim_cost(s, COST_timer_arm);
	}
	if (s->policy == IDLE_HALTPOLL) {
		struct gov_entry e = {.state = GOV_STATE_HALT,
				      .residency_ns = residency,
				      .limit_ns = GOV_NO_LIMIT,
				      .work = (v->flags & F_NEED_RESCHED) != 0};

		count_adjust(v, s->gov->reflect(&v->gov, &s->gp, &e));
	}
	trace(s, v, "halt", "woken", residency);
	if (v->flags & F_NEED_RESCHED)
		go_schedule(s, v); /* (the cancel's cost is in the wake path's own timer work) */
	else
		go_idle(s, v, sim_cost(s, COST_idle_reentry) + cancel);
}

/* ---- KVM's halt handling (spec §2.3) ----------------------------------------------------- */

/*
 * A vCPU thread woken from a sleep in KVM pays extra for the time it slept (caches and the
 * emulator's state gone cold: on this machine the wake cost grows with the sleep), capped.
 * Charged on the way in, a timer's wake too, though a traced table's long-sleep timer parts
 * already hold part of it: without it (0, or as CPU alone) the nested host's 250 Hz idle rows
 * lose 8 points of host CPU and the predictions as a whole do no better
 * (docs/notebook/2026-12-03-timer-wake-and-lost-shadow.md); what it is stays open.
 */
static uint64_t cold_cost(const struct sim *s, uint64_t slept)
{
	if (slept > s->c[COST_wake_cold_max])
		slept = s->c[COST_wake_cold_max];
	return (slept * s->c[COST_wake_cold_ppm] + 500000) / 1000000;
}

/* Nothing caught: KVM's way to the thread asleep; straight asleep where that costs nothing (the
 * hardware table), so that no zero-length state reorders the events due at the same time. */
static void go_sleep(struct sim *s, struct vcpu *v)
{
	uint64_t d = sim_cost(s, COST_halt_sleep);

	if (d)
		set_state(s, v, V_HSLEEP, d);
	else
		set_state(s, v, V_BLOCKED, NEVER);
}

static void host_halt_done(struct sim *s, struct vcpu *v, bool success)
{
	struct hp_halt h = {
	    .window = v->hp_window,
	    .poll_ns = v->hp_window ? v->t_poll_end - v->t_halt_start : 0,
	    .success = success,
	    .wait_ns = success ? 0 : s->now - v->t_poll_end,
	    .halt_ns = s->now - v->t_halt_start,
	};

	hp_halt_end(&s->cfg->host, &v->host, &h);
	/* the halt as KVM's kvm_vcpu_wakeup event times it (its grow and shrink decide on it),
	 * beside the guest's residency that trace=1 prints: the host's trace has the same */
	if (s->cfg->trace > 1)
		fprintf(s->out,
			"@idlelab kvm_halt cpu=%u t_ns=%lu halt_ns=%lu window_ns=%lu polled=%s\n",
			v->id, s->now, h.halt_ns, h.window, success ? "caught" : "waited");
	/* a wake KVM saw before its thread slept (in the poll, or on the way to sleep: the
	 * same return from kvm_vcpu_block without a schedule) goes straight back in; a thread
	 * that slept runs its way back in first (charged, unlike wake_latency) */
	if (success && v->cpu_taken_until > s->now) {
		/* the poll stopped for another task (single_task_running) and the wake came
		 * before the thread slept: it goes back in once that task has had the CPU */
		uint64_t taken = v->cpu_taken_until - s->now;

		set_state(s, v, V_ENTRY, sim_cost(s, COST_poll_entry) + taken);
		v->preempt_from = s->now;
		v->preempt_until = v->cpu_taken_until;
	} else if (success)
		set_state(s, v, V_ENTRY, sim_cost(s, COST_poll_entry));
	else
		set_state(s, v, V_ENTRY,
			  sim_cost(s, COST_vm_entry) +
			      (v->timer_woken ? timer_cost(s, COST_timer_entry,
							   COST_timer_entry_long, v->timer_slept)
					      : sim_cost(s, COST_wake_entry)) +
			      cold_cost(s, h.wait_ns));
}

static void halt_exit_done(struct sim *s, struct vcpu *v)
{
	if (v->irq_seen) { /* an event is pending: the vCPU stays runnable, no halt */
		set_state(s, v, V_ENTRY, sim_cost(s, COST_vm_entry));
		return;
	}
	v->t_halt_start = s->now;
	v->hp_window = hp_halt_begin(&s->cfg->host, &v->host);
	v->t_poll_end = s->now;
	if (v->hp_window)
		set_state(s, v, V_HPOLL, v->hp_window);
	else
		go_sleep(s, v);
}

/* The vCPU became runnable in KVM's eyes (an interrupt is pending for it). */
static void host_wake(struct sim *s, struct vcpu *v)
{
	if (!v->irq_seen)
		return;
	if (v->state == V_HPOLL) { /* the poll loop's next check sees it */
		uint64_t end = s->now + s->c[COST_host_poll_iter];

		if (end < v->state_end)
			move_end(s, v, end);
		return;
	}
	if (v->state == V_BLOCKED) { /* by its own timer alone: KVM's hrtimer on its CPU */
		uint64_t taken = v->cpu_taken_until > s->now ? v->cpu_taken_until - s->now : 0;

		v->timer_woken = v->irq_seen == IRQ_TIMER;
		set_state(s, v, V_WAKING,
			  (v->timer_woken ? timer_cost(s, COST_timer_wake, COST_timer_wake_long,
						       v->timer_slept)
					  : sim_cost(s, COST_wake_latency)) +
			      taken);
	}
}

/* ---- the host's other tasks ------------------------------------------------------------- */

/* The next time another task wants this vCPU's CPU: arrivals at preempt_per_s, in time the
 * thread is on a CPU (one that finds it off its CPU passes: that is wake_latency's part). */
static void preempt_schedule(struct sim *s, struct vcpu *v)
{
	double rate = (double)s->c[COST_preempt_per_s];

	if (rate > 0 && s->c[COST_preempt])
		events_push(&s->ev,
			    s->now + 1 + (uint64_t)(-log(uniform(&s->preempt_rng)) / rate * 1e9),
			    v->id, EV_PREEMPT, 0);
}

/* Another task takes v's CPU for d. */
static void preempt_for(struct sim *s, struct vcpu *v, uint64_t d)
{
	v->g.preemptions++;
	if (v->state == V_HPOLL && !v->irq_seen) {
		/* kvm_vcpu_halt: the poll stops when single_task_running() fails, and the thread
		 * sleeps (its poll failed), leaving the CPU to the other task */
		v->cpu_taken_until = s->now + d;
		move_end(s, v, s->now);
		return;
	}
	account(s, v);
	v->preempt_from = s->now;
	v->preempt_until = s->now + d;
	/* work and fixed paths wait out the preemption; a guest poll's window is the guest's
	 * clock, which runs on: it expires when it expires, seen once the thread runs again */
	if (v->state_end != NEVER)
		move_end(s, v, v->state == V_GPOLL ? v->state_end : v->state_end + d);
	if (v->irq_at)
		irq_at(s, v, v->irq_at);
}

static void on_preempt(struct sim *s, struct vcpu *v)
{
	uint64_t d;

	preempt_schedule(s, v);
	if (v->state == V_BLOCKED || v->state == V_WAKING || s->now < v->preempt_until)
		return;
	d = cost_at(s, COST_preempt, uniform(&s->preempt_rng));
	if (d)
		preempt_for(s, v, d);
}

/*
 * other_per_s: the host's other tasks as a demand for CPUs rather than a rate of preemptions.
 * Each arrives at other_per_s (the whole host) wanting one CPU for other_run, and takes an
 * idle one where there is one (Linux's wake-up placement: select_idle_sibling), so that it
 * costs the vCPU threads nothing unless one wakes on that CPU meanwhile; only where every
 * CPU is busy does it preempt a vCPU thread. A pingpong whose threads sleep half the time
 * then loses little to the host's other tasks, one whose host polls every halt (a thread
 * always on its CPU) loses them all: on the nested host such threads were preempted 136-166
 * times a second on a CPU where the cost table's traced boot counted 28-43
 * (docs/notebook/2026-12-07-pinned.md). vCPU i's thread is on host CPU i (the seeds pin
 * them so); CPUs beyond the vCPUs' have no vCPU thread.
 */
static void other_schedule(struct sim *s)
{
	double rate = (double)s->c[COST_other_per_s];

	events_push(&s->ev, s->now + 1 + (uint64_t)(-log(uniform(&s->preempt_rng)) / rate * 1e9), 0,
		    EV_OTHER, 0);
}

/* Runs nothing: no other task, and no vCPU thread on it. One asleep in KVM leaves it idle,
 * and so does one being woken: its wake_latency, measured, holds what other tasks delay it. */
static bool host_cpu_idle(const struct sim *s, unsigned c)
{
	return s->other_until[c] <= s->now &&
	       (c >= s->ncpus || s->cpu[c].state == V_BLOCKED || s->cpu[c].state == V_WAKING);
}

/* Another task arrives, wanting a CPU for d. Both draws are made whatever the CPUs do, so the
 * same seed gives two configurations the same arrivals. */
static void on_other(struct sim *s)
{
	uint64_t d = cost_at(s, COST_other_run, uniform(&s->preempt_rng)), start;
	double pick = uniform(&s->preempt_rng);
	/* the idle CPUs from the front, those a vCPU thread alone runs on from the back */
	unsigned cand[SIM_MAX_HOST_CPUS], idle = 0, busy = 0, c;
	struct vcpu *v;

	other_schedule(s);
	if (!d)
		return;
	for (c = 0; c < s->host_cpus; c++) {
		if (host_cpu_idle(s, c))
			cand[idle++] = c;
		else if (s->other_until[c] <= s->now)
			cand[s->host_cpus - ++busy] = c;
	}
	if (idle || busy) {
		unsigned n = idle ? idle : busy, i = (unsigned)(pick * n) % n;

		c = idle ? cand[i] : cand[s->host_cpus - 1 - i];
		s->other_until[c] = s->now + d;
		if (c >= s->ncpus)
			return;
		v = &s->cpu[c];
		if (!idle)
			preempt_for(s, v, d);
		else if (v->state == V_BLOCKED) /* a wake meanwhile waits for the CPU */
			v->cpu_taken_until = s->now + d;
		return;
	}
	/* every CPU runs another task: this one queues behind the first to end, and a vCPU
	 * thread kept off that CPU waits for it too */
	c = 0;
	for (unsigned i = 1; i < s->host_cpus; i++)
		if (s->other_until[i] < s->other_until[c])
			c = i;
	start = s->other_until[c];
	s->other_until[c] = start + d;
	if (c >= s->ncpus)
		return;
	v = &s->cpu[c];
	if (v->cpu_taken_until == start) {
		v->cpu_taken_until = start + d;
		if (v->state == V_WAKING) /* its wake was priced up to the first task's end */
			move_end(s, v, v->state_end + d);
	}
	if (v->preempt_until == start) {
		account(s, v);
		v->preempt_until = start + d;
		/* as preempt_for: a guest poll's window runs on by the guest's clock, and is seen
		 * to expire once the thread runs again (move_end holds it to preempt_until) */
		if (v->state_end != NEVER)
			move_end(s, v, v->state == V_GPOLL ? v->state_end : v->state_end + d);
		if (v->irq_at)
			irq_at(s, v, v->irq_at);
	}
}

/* guest_delay: the interrupt's way to a vCPU in guest code; host_delay: to KVM for a halted
 * one (COST__COUNT: none). Only the one that applies is drawn. */
static void raise_irq(struct sim *s, struct vcpu *v, unsigned irq, enum sim_cost_id guest_delay,
		      enum sim_cost_id host_delay)
{
	v->irq_pending |= irq;
	if (irq != IRQ_TIMER) /* an IPI is in the target's LAPIC when it is raised */
		v->irq_seen |= irq;
	if (in_halt(v->state)) {
		uint64_t d;

		/* how long it slept prices the timer's wake (none yet in the exit itself, whose
		 * halt has not begun) */
		if (irq == IRQ_TIMER)
			v->timer_slept = v->state == V_HEXIT ? 0 : s->now - v->t_halt_start;
		/* a polling thread is on its CPU: the hrtimer finds it busy, not idle (timer_poll
		 * times that case; one passing in the exit or on the way to sleep, busy too, has no
		 * measure of its own and keeps the sleeping thread's, an upper bound) */
		d = host_delay == COST__COUNT	     ? 0
		    : host_delay != COST_timer_slack ? sim_cost(s, host_delay)
		    : v->state == V_HPOLL
			? sim_cost(s, COST_timer_poll_slack)
			: timer_cost(s, COST_timer_slack, COST_timer_slack_long, v->timer_slept);

		if (d) {
			events_push(&s->ev, s->now + d, v->id, EV_HOST_WAKE, v->halt_gen);
		} else {
			v->irq_seen |= irq;
			host_wake(s, v);
		}
	} else {
		/* A timer passing while the guest runs is KVM's at once: fired in the deadline
		 * write's exit where it was due by then (sleep_cut), else by the hrtimer on the busy
		 * CPU soon after its deadline (taken here as at it: the model then skips a few more
		 * HLTs than KVM). A HLT before the guest takes it does not block: vcpu_block finds
		 * the vCPU runnable. */
		if (irq == IRQ_TIMER)
			v->irq_seen |= irq;
		if (irq == IRQ_TIMER && v->due_at_arm >= s->now)
			irq_at(s, v, v->due_at_arm); /* taken as the write returns */
		else
			irq_at(s, v, s->now + sim_cost(s, guest_delay));
	}
}

/* ---- threads ---------------------------------------------------------------------------- */

static void thread_run(struct sim *s, struct vcpu *v)
{
	struct sim_thread *t = v->thread;

	t->state = T_RUNNING;
	t->next = (struct thread_action){0};
	t->run(s, t, s->now, &t->next);
	set_state(s, v, V_RUN, t->next.work);
}

/*
 * How long a sleep's arm keeps the thread (sleep_step). A deadline less than sleep_cut after
 * the call is due by the time the host takes its write, which fires it at once: the interrupt
 * waits only for thread_sleep_ns's irq_restore, and is taken there, before the thread could
 * block, as bench=exits' `timer` (an already-due deadline, armed to its handler:
 * timer_running) times it. The thread then runs on, woken without a halt. A deadline the host
 * finds in the future is its timer's, late by timer_running (guest code) or the halted
 * vCPU's slack, after the thread blocked.
 */
static uint64_t sleep_arm(struct sim *s, struct vcpu *v, uint64_t deadline)
{
	uint64_t arm = sim_cost(s, COST_sleep_step), taken;

	v->due_at_arm = 0;
	v->exited = true; /* the deadline's write */
	if (!s->c[COST_sleep_cut] || deadline >= s->now + sim_cost(s, COST_sleep_cut))
		return arm;
	taken = sim_cost(s, COST_timer_running);
	if (taken < deadline - s->now) /* no sooner than its own deadline */
		taken = deadline - s->now;
	v->due_at_arm = s->now + taken;
	return taken > arm ? taken : arm;
}

/* The end of a run segment: the wake it asked for, then sleep or block. */
static void thread_segment_done(struct sim *s, struct vcpu *v)
{
	struct sim_thread *t = v->thread;
	struct thread_action *a = &t->next;

	if (a->wake) {
		uint64_t cost = wake_thread(s, v, a->wake);

		a->wake = NULL;
		if (cost) {
			set_state(s, v, V_RUN, cost);
			return;
		}
	}
	if (s->phase == 2)
		return;
	if (a->sleep && !a->armed) {
		/* sleepers.c tests the deadline, then thread_sleep_ns arms the timer, which
		 * may be due by the time it is armed */
		if (a->deadline <= s->now) {
			thread_run(s, v);
			return;
		}
		a->armed = true;
		set_state(s, v, V_RUN, sleep_arm(s, v, a->deadline));
		v->sleep_deadline = a->deadline;
		arm_timer(s, v);
		return;
	}
	if (a->sleep) {
		/* a wake before the deadline: thread_sleep_ns blocks again until the time is up */
		bool woken = t->wake_pending;

		t->wake_pending = false;
		if (woken && a->deadline <= s->now) {
			thread_run(s, v);
			return;
		}
	} else if (t->wake_pending) {
		t->wake_pending = false;
		thread_run(s, v);
		return;
	}
	t->state = T_BLOCKED;
	go_idle(s, v, sim_cost(s, COST_idle_entry));
}

void sim_thread_init(struct sim *s, struct sim_thread *t, unsigned cpu, thread_run_fn *run)
{
	(void)s;
	memset(t, 0, sizeof(*t));
	t->cpu = cpu;
	t->run = run;
	t->state = T_BLOCKED;
	s->cpu[cpu].thread = t;
}

void sim_thread_start(struct sim *s, struct sim_thread *t)
{
	t->state = T_RUNNABLE;
	s->cpu[t->cpu].flags |= F_NEED_RESCHED;
}

/* ---- the run ---------------------------------------------------------------------------- */

static void on_state_end(struct sim *s, struct vcpu *v)
{
	switch (v->state) {
	case V_RUN:
		thread_segment_done(s, v);
		break;
	case V_WAKE_PATH:
		thread_run(s, v);
		break;
	case V_IDLE_ENTRY:
		idle_decide(s, v);
		break;
	case V_GPOLL:
		poll_done(s, v);
		break;
	case V_HEXIT:
		halt_exit_done(s, v);
		break;
	case V_HPOLL: /* runnable: a successful poll; else the window ran out: sleep */
		v->t_poll_end = s->now;
		if (v->irq_seen)
			host_halt_done(s, v, true);
		else
			go_sleep(s, v);
		break;
	case V_HSLEEP: /* kvm_vcpu_block checks once more before schedule(): not `waited` */
		if (v->irq_seen)
			host_halt_done(s, v, true);
		else
			set_state(s, v, V_BLOCKED, NEVER);
		break;
	case V_WAKING:
		host_halt_done(s, v, false);
		break;
	case V_ENTRY:
		set_state(s, v, V_HANDLER, run_handlers(s, v));
		break;
	case V_HANDLER:
		halt_return(s, v);
		break;
	case V_BLOCKED:
		break;
	}
}

static void snapshot(struct sim *s)
{
	for (unsigned i = 0; i < s->ncpus; i++) {
		account(s, &s->cpu[i]);
		s->snap[i] = s->cpu[i].g;
		s->host_snap[i] = s->cpu[i].host;
		s->takeovers_snap[i] = s->cpu[i].gov.takeovers;
	}
}

void sim_close_window(struct sim *s)
{
	if (s->phase == 1)
		events_push(&s->ev, s->now, 0, EV_WINDOW, 0);
}

static void on_window(struct sim *s)
{
	if (s->phase == 0) {
		s->phase = 1;
		s->t_open = s->now;
		snapshot(s);
		for (unsigned i = 0; i < s->ncpus; i++) {
			s->count[i] = 0;
			s->interval_sum[i] = 0;
			hist_init(&s->hist[i]);
		}
		return;
	}
	if (s->phase == 1) {
		s->phase = 2;
		s->t_close = s->now;
	}
}

static void on_event(struct sim *s, const struct sim_event *e)
{
	struct vcpu *v = &s->cpu[e->cpu];

	switch (e->kind) {
	case EV_STATE_END:
		if (e->gen == v->state_gen)
			on_state_end(s, v);
		break;
	case EV_TIMER:
		if (e->gen != v->timer_gen)
			break;
		v->timer_fired = true;
		raise_irq(s, v, IRQ_TIMER, COST_timer_running, COST_timer_slack);
		break;
	case EV_IRQ:
		if (e->gen != v->irq_gen || !v->irq_pending)
			break;
		/* the interrupt reaches the guest: in guest code it is taken; a vCPU on its way
		 * through a HLT's exit or back in is let through (KVM saw it pending) */
		v->irq_seen |= v->irq_pending;
		if (!in_halt(v->state)) {
			deliver_in_guest(s, v);
			break;
		}
		if (v->irq_pending & IRQ_TIMER)
			v->timer_slept = v->state == V_HEXIT ? 0 : s->now - v->t_halt_start;
		host_wake(s, v);
		break;
	case EV_IPI:
		raise_irq(s, v, IRQ_RESCHED, COST_ipi_running, COST__COUNT);
		break;
	case EV_HOST_WAKE:
		/* A timer's slack that outlived its halt (an IPI woke the vCPU first) must not
		 * cut short the next halt, whose own timer has its own slack. */
		if (e->gen == v->halt_gen) {
			v->irq_seen |= v->irq_pending & IRQ_TIMER;
			host_wake(s, v);
		}
		break;
	case EV_WINDOW:
		on_window(s);
		break;
	case EV_PREEMPT:
		on_preempt(s, v);
		break;
	case EV_OTHER:
		on_other(s);
		break;
	}
}

static void setup(struct sim *s, const struct sim_config *cfg, FILE *out)
{
	struct idle_env env = {.kvm = true,
			       .realtime_hint = true,
			       .force = cfg->knobs.v[KNOB_haltpoll_force],
			       .pollctl = true};
	static const uint32_t hz_of[] = {0, 100, 250, 1000};
	uint32_t hz = hz_of[cfg->knobs.v[KNOB_hz]];

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->c = cfg->costs.v;
	s->spread = cfg->costs.spread;
	s->tail = cfg->costs.tail;
	prng_seed(&s->cost_rng, cfg->knobs.v[KNOB_seed] ^ 0xc0575ull);
	prng_seed(&s->preempt_rng, cfg->knobs.v[KNOB_seed] ^ 0x9ee3b7ull);
	s->out = out;
	s->ncpus = cfg->smp;
	/* The run script gives KVM's REALTIME hint and poll control, so auto means haltpoll. */
	s->policy = idle_policy_choose((int)cfg->knobs.v[KNOB_idle], &env, &s->policy_reason);
	s->msr = hostpoll_msr_value((int)cfg->knobs.v[KNOB_hostpoll], s->policy, &env);
	s->pollflag = cfg->knobs.v[KNOB_pollflag];
	s->latency_req_zero = cfg->knobs.v[KNOB_latency_req_zero];
	s->tick_nsec = haltpoll_tick_nsec(hz ? hz : 250);
	s->tick_period = hz ? haltpoll_tick_nsec(hz) : 0;
	s->gp = (struct gov_params){
	    .guest_halt_poll_ns = (uint32_t)cfg->knobs.v[KNOB_guest_halt_poll_ns],
	    .grow = (uint32_t)cfg->knobs.v[KNOB_guest_halt_poll_grow],
	    .shrink = (uint32_t)cfg->knobs.v[KNOB_guest_halt_poll_shrink],
	    .grow_start = (uint32_t)cfg->knobs.v[KNOB_guest_halt_poll_grow_start],
	    .allow_shrink = cfg->knobs.v[KNOB_guest_halt_poll_allow_shrink],
	    .legacy_shrink = cfg->knobs.v[KNOB_haltpoll_legacy_shrink],
	};
	s->gov = idle_governors[cfg->knobs.v[KNOB_governor]];
	events_init(&s->ev);
	for (unsigned i = 0; i < s->ncpus; i++) {
		struct vcpu *v = &s->cpu[i];

		v->id = i;
		s->gov->enable(&v->gov);
		if (i == 0 && cfg->script_window_set) { /* args.c: only with haltpoll */
			v->gov.haltpoll.poll_limit_ns = cfg->script_window;
			v->gov.haltpoll.last_state_idx = GOV_STATE_HALT;
		}
		hp_vcpu_init(&v->host, s->msr != 0);
		/* CPUs come up one after another: stagger the ticks so they do not coincide */
		if (s->tick_period)
			v->tick_deadline = s->tick_period + (uint64_t)i * 137000 % s->tick_period;
		v->state = V_IDLE_ENTRY;
		if (!cfg->costs.v[COST_other_per_s])
			preempt_schedule(s, v);
	}
	if (cfg->costs.v[COST_other_per_s] && cfg->costs.v[COST_other_run]) {
		uint64_t h = cfg->costs.v[COST_host_cpus];

		if (h > SIM_MAX_HOST_CPUS)
			h = SIM_MAX_HOST_CPUS;
		s->host_cpus = h < s->ncpus ? s->ncpus : (unsigned)h;
		other_schedule(s);
	}
}

int sim_run(const struct sim_config *cfg, FILE *out)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct sim_event e;
	uint64_t warmup, duration;

	if (!s) {
		fprintf(stderr, "idlelab-sim: out of memory\n");
		return 1;
	}
	setup(s, cfg, out);
	if (wl_start(s, stderr) < 0) {
		free(s);
		return SIM_EXIT_BAD;
	}
	report_header(s);
	warmup = cfg->script ? 0 : sim_knob(s, KNOB_warmup);
	duration = sim_knob(s, KNOB_duration);
	events_push(&s->ev, warmup, 0, EV_WINDOW, 0);
	if (!s->iters_target && !cfg->script)
		events_push(&s->ev, warmup + duration, 0, EV_WINDOW, 0);
	for (unsigned i = 0; i < s->ncpus; i++) {
		arm_timer(s, &s->cpu[i]);
		set_state(s, &s->cpu[i], V_IDLE_ENTRY, 0);
	}
	while (s->phase < 2 && events_pop(&s->ev, &e)) {
		s->now = e.t;
		on_event(s, &e);
	}
	if (s->phase < 2)
		s->t_close = s->now;
	for (unsigned i = 0; i < s->ncpus; i++)
		account(s, &s->cpu[i]);
	report_window(s, s->t_close - s->t_open);
	events_free(&s->ev);
	free(s);
	return 0;
}
