/*
 * The guest's workloads (kernel/workloads/) as thread programs for the engine: the same
 * knobs, the same CPU choice, the same threads on the same CPUs, the same seeded PRNG draw
 * for workload=random, and the same `result` record. A thread's run function is called each
 * time the thread gets the CPU; it says how long it computes, which thread it wakes, and
 * whether it then blocks or sleeps until a deadline.
 */
#include "kernel/workloads/pingpong_iters.h"
#include "kernel/workloads/sleep_draw.h"
#include "tools/sim/engine.h"

static uint64_t step_cost(struct sim *s, const struct sim_thread *t)
{
	struct vcpu *v = &s->cpu[t->cpu];
	bool after_exit = v->exited;

	v->exited = false;
	return sim_cost(s, after_exit ? COST_thread_step : COST_thread_step_polled);
}

/* ---- pingpong ---------------------------------------------------------------------------- */

static void pong_run(struct sim *s, struct sim_thread *t, uint64_t now, struct thread_action *a)
{
	(void)now;
	a->work = step_cost(s, t);
	a->wake = t->peer;
}

static void ping_run(struct sim *s, struct sim_thread *t, uint64_t now, struct thread_action *a)
{
	uint64_t think = sim_knob(s, KNOB_think);

	if (t->phase == 1) { /* the token came back: one round trip */
		if (sim_measured(s, t->t0) &&
		    (!s->iters_target || s->count[t->slot] < s->iters_target)) {
			hist_record(&s->hist[t->slot], now - t->t0);
			if (++s->count[t->slot] == s->iters_target &&
			    ++s->pairs_done == sim_knob(s, KNOB_pairs))
				sim_close_window(s);
		}
		if (think) {
			t->phase = 0;
			a->work = step_cost(s, t);
			a->sleep = true;
			a->deadline = now + a->work + think;
			return;
		}
	}
	t->phase = 1;
	t->t0 = now;
	a->work = step_cost(s, t);
	a->wake = t->peer;
}

static int pingpong_start(struct sim *s, FILE *err)
{
	unsigned pairs = (unsigned)sim_knob(s, KNOB_pairs);

	if (2 * pairs > s->wl_ncpus) {
		fprintf(err, "idlelab-sim: pingpong: pairs=%u needs %u CPUs, cpus= gives %u\n",
			pairs, 2 * pairs, s->wl_ncpus);
		return -1;
	}
	s->iters_target =
	    pingpong_iters(s->cfg->knobs.given[KNOB_iters], (int64_t)sim_knob(s, KNOB_iters),
			   (int64_t)sim_knob(s, KNOB_bench));
	for (unsigned k = 0; k < pairs; k++) {
		struct sim_thread *ping = &s->threads[2 * k], *pong = &s->threads[2 * k + 1];

		sim_thread_init(s, pong, s->wl_cpu[2 * k + 1], pong_run);
		sim_thread_init(s, ping, s->wl_cpu[2 * k], ping_run);
		ping->peer = pong;
		pong->peer = ping;
		ping->slot = k;
		sim_thread_start(s, ping);
	}
	s->nthreads = 2 * pairs;
	return 0;
}

/* ---- periodic and random ---------------------------------------------------------------- */

static void sleeper_run(struct sim *s, struct sim_thread *t, uint64_t now, struct thread_action *a)
{
	bool periodic = sim_knob(s, KNOB_workload) == WORKLOAD_PERIODIC;
	uint64_t period = sim_knob(s, KNOB_period), step;

	if (t->phase == 0) {
		t->phase = 1;
		t->next_deadline = now;
	} else {
		if (sim_measured(s, t->next_deadline)) {
			hist_record(&s->hist[t->slot], now - t->next_deadline);
			s->count[t->slot]++;
			s->interval_sum[t->slot] += t->last_step;
		}
		if (periodic && now - t->next_deadline > period)
			t->next_deadline = now; /* fell a whole period behind: skip, do not burst */
	}
	step = periodic ? period
			: sleep_draw(&t->rng, (int)sim_knob(s, KNOB_dist), sim_knob(s, KNOB_mean),
				     sim_knob(s, KNOB_spread));
	t->last_step = step;
	t->next_deadline += step;
	a->work = step_cost(s, t);
	a->sleep = true;
	a->deadline = t->next_deadline;
}

static int sleepers_start(struct sim *s)
{
	for (unsigned i = 0; i < s->wl_ncpus; i++) {
		struct sim_thread *t = &s->threads[i];

		sim_thread_init(s, t, s->wl_cpu[i], sleeper_run);
		t->slot = i;
		prng_seed(&t->rng, sim_knob(s, KNOB_seed) * 1000003 + i);
		sim_thread_start(s, t);
	}
	s->nthreads = s->wl_ncpus;
	return 0;
}

/* ---- pipeline ----------------------------------------------------------------------------- */

static void stage_run(struct sim *s, struct sim_thread *t, uint64_t now, struct thread_action *a)
{
	if (t->slot == 0) {
		if (t->phase && sim_measured(s, s->lap_start)) {
			hist_record(&s->hist[0], now - s->lap_start);
			s->count[0]++;
		}
		t->phase = 1;
		s->lap_start = now;
	}
	a->work = step_cost(s, t);
	a->wake = s->ring[(t->slot + 1) % s->wl_ncpus];
}

static int pipeline_start(struct sim *s, FILE *err)
{
	if (s->wl_ncpus < 2) {
		fprintf(err, "idlelab-sim: pipeline needs at least 2 CPUs\n");
		return -1;
	}
	for (unsigned i = 0; i < s->wl_ncpus; i++) {
		s->ring[i] = &s->threads[i];
		sim_thread_init(s, s->ring[i], s->wl_cpu[i], stage_run);
		s->ring[i]->slot = i;
	}
	sim_thread_start(s, s->ring[0]);
	s->nthreads = s->wl_ncpus;
	return 0;
}

/* ---- the test script: CPU 0 sleeps the given lengths, one idle period each -------------- */

static void script_run(struct sim *s, struct sim_thread *t, uint64_t now, struct thread_action *a)
{
	(void)t;
	if (s->script_pos == s->cfg->script_len) {
		sim_close_window(s);
		a->sleep = true;
		a->deadline = now + 1000000000ull;
		return;
	}
	a->sleep = true;
	a->deadline = now + s->cfg->script[s->script_pos++];
}

/* ---- common --------------------------------------------------------------------------------- */

static bool pick_cpus(struct sim *s, FILE *err)
{
	uint64_t mask = sim_knob(s, KNOB_cpus);

	s->wl_ncpus = 0;
	for (unsigned c = 0; c < s->ncpus; c++)
		if (!mask || (mask >> c) & 1)
			s->wl_cpu[s->wl_ncpus++] = c;
	if (s->ncpus < 64 && mask >> s->ncpus) {
		fprintf(err, "idlelab-sim: cpus=0x%lx names CPUs this VM lacks (it has %u)\n", mask,
			s->ncpus);
		return false;
	}
	return s->wl_ncpus > 0;
}

int wl_start(struct sim *s, FILE *err)
{
	if (s->cfg->script) {
		sim_thread_init(s, &s->threads[0], 0, script_run);
		sim_thread_start(s, &s->threads[0]);
		s->nthreads = 1;
		return 0;
	}
	if (!pick_cpus(s, err))
		return -1;
	switch (sim_knob(s, KNOB_workload)) {
	case WORKLOAD_PINGPONG:
		return pingpong_start(s, err);
	case WORKLOAD_PERIODIC:
	case WORKLOAD_RANDOM:
		return sleepers_start(s);
	case WORKLOAD_PIPELINE:
		return pipeline_start(s, err);
	case WORKLOAD_IDLE:
		return 0;
	default:
		fprintf(err, "idlelab-sim: workload= must name a workload (pingpong, periodic, "
			     "idle, random, pipeline)\n");
		return -1;
	}
}

static void merged(const struct sim *s, unsigned n, struct hist *out)
{
	hist_init(out);
	for (unsigned i = 0; i < n; i++)
		hist_merge(out, &s->hist[i]);
}

static uint64_t total(const struct sim *s, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += s->count[i];
	return sum;
}

static struct hist scratch; /* big (one bucket array): keep it off the stack */

void wl_report(struct sim *s, uint64_t window_ns)
{
	const struct knob_values *k = &s->cfg->knobs;
	unsigned pairs = (unsigned)sim_knob(s, KNOB_pairs), n = s->wl_ncpus;
	uint64_t wakes, sum = 0;

	switch (sim_knob(s, KNOB_workload)) {
	case WORKLOAD_PINGPONG:
		wakes = total(s, pairs);
		merged(s, pairs, &scratch);
		fprintf(s->out,
			"@idlelab result workload=pingpong ok=%d pairs=%u iters=%lu window_ns=%lu "
			"rtt_p50_ns=%lu rtt_p90_ns=%lu rtt_p99_ns=%lu rtt_max_ns=%lu rt_per_s=%lu "
			"think_ns=%ld\n",
			!s->iters_target || wakes == s->iters_target * pairs, pairs, wakes,
			window_ns, hist_percentile(&scratch, 5000), hist_percentile(&scratch, 9000),
			hist_percentile(&scratch, 9900), hist_max(&scratch),
			window_ns ? wakes * (uint64_t)1000000000 / window_ns : 0, k->v[KNOB_think]);
		break;
	case WORKLOAD_PERIODIC:
		wakes = total(s, n);
		merged(s, n, &scratch);
		fprintf(
		    s->out,
		    "@idlelab result workload=periodic ok=%d cpus=%u period_ns=%ld window_ns=%lu "
		    "wakes=%lu achieved_period_ns=%lu late_p50_ns=%lu late_p99_ns=%lu "
		    "late_max_ns=%lu\n",
		    wakes > 0, n, k->v[KNOB_period], window_ns, wakes,
		    (wakes / n) ? window_ns / (wakes / n) : 0, hist_percentile(&scratch, 5000),
		    hist_percentile(&scratch, 9900), hist_max(&scratch));
		break;
	case WORKLOAD_RANDOM:
		wakes = total(s, n);
		for (unsigned i = 0; i < n; i++)
			sum += s->interval_sum[i];
		merged(s, n, &scratch);
		fprintf(s->out,
			"@idlelab result workload=random ok=%d cpus=%u dist=%s mean_ns=%ld "
			"spread_ns=%ld seed=%ld window_ns=%lu wakes=%lu interval_mean_ns=%lu "
			"late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu\n",
			wakes > 0, n, knob_defs[KNOB_dist].choices[k->v[KNOB_dist]],
			k->v[KNOB_mean], k->v[KNOB_spread], k->v[KNOB_seed], window_ns, wakes,
			wakes ? sum / wakes : 0, hist_percentile(&scratch, 5000),
			hist_percentile(&scratch, 9900), hist_max(&scratch));
		break;
	case WORKLOAD_PIPELINE:
		fprintf(s->out,
			"@idlelab result workload=pipeline ok=%d cpus=%u window_ns=%lu laps=%lu "
			"lap_p50_ns=%lu lap_p99_ns=%lu lap_max_ns=%lu hop_p50_ns=%lu\n",
			s->count[0] > 0, n, window_ns, s->count[0],
			hist_percentile(&s->hist[0], 5000), hist_percentile(&s->hist[0], 9900),
			hist_max(&s->hist[0]), hist_percentile(&s->hist[0], 5000) / n);
		break;
	case WORKLOAD_IDLE:
		fprintf(s->out, "@idlelab result workload=idle ok=1 cpus=%u window_ns=%lu\n",
			s->ncpus, window_ns);
		break;
	default:
		break;
	}
}
