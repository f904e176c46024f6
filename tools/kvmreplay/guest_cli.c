/*
 * The guest side's output, in the host side's shape: the check per CPU and in all, then one
 * row per tunable combination (the trace's own first).
 */
#include "tools/kvmreplay/guest_cli.h"

#include "kernel/policy/haltpoll.h"
#include "tools/kvmreplay/exits.h"
#include "tools/kvmreplay/guest.h"

static unsigned or_one(unsigned n)
{
	return n ? n : 1;
}

static void row(FILE *f, bool csv, const char *cpu, const char *what, const struct gov_params *p,
		const struct gp_stats *s, uint64_t span)
{
	double pct = span ? 100.0 * (double)s->poll_ns / (double)span : -1;

	if (csv) {
		fprintf(f, "%s,%s,%u,%u,%u,%u,%lu,%lu,%lu,%lu,%.3f,%lu\n", cpu, what,
			p->guest_halt_poll_ns, p->grow, p->shrink, p->grow_start, s->periods,
			s->polls, s->hits, s->poll_ns, pct, s->halts);
		return;
	}
	fprintf(f, "  %-8s %-9s %18u %4u %6u %10u %9lu %9lu %9lu ", cpu, what,
		p->guest_halt_poll_ns, p->grow, p->shrink, p->grow_start, s->periods, s->polls,
		s->hits);
	if (pct >= 0)
		fprintf(f, "%9.2f", pct);
	else
		fprintf(f, "%9s", "n/a");
	fprintf(f, " %9lu\n", s->halts);
}

int gp_main(const char *path, const struct gp_options *o)
{
	struct gp_trace t = {.merge_gap_ns = o->merge_gap_ns};
	int code = gp_read(path, &t);
	char label[32];

	if (code)
		return code;
	uint64_t span = t.unitless ? 0 : t.t_last - t.t_first;
	printf("replay --guest: %s: %s, %zu CPUs, %lu idle periods over ", path,
	       rp_format_names[t.format], t.nc, t.periods);
	if (span)
		printf("%.3f s\n", (double)span / 1e9);
	else
		printf("a clock without units\n");
	printf("replay --guest: tunables guest_halt_poll_ns=%u grow=%u shrink=%u grow_start=%u%s; "
	       "a poll followed by another entry within %lu ns is one period\n",
	       o->base.guest_halt_poll_ns, o->base.grow, o->base.shrink, o->base.grow_start,
	       o->base.allow_shrink ? "" : " (no shrink)", o->merge_gap_ns);
	printf("check (the governor under those tunables, period by period: the same states in "
	       "the same order):\n");
	uint64_t agree = 0;
	for (size_t i = 0; i < t.nc; i++) {
		struct gp_stats s;
		gp_replay(&t.c[i], &o->base, o->tick_nsec, &s);
		agree += s.agree;
		printf("  cpu %-4d %lu of %lu idle periods agree\n", t.c[i].cpu, s.agree,
		       s.periods);
	}
	printf("  all      %lu of %lu idle periods agree\n", agree, t.periods);

	bool asked = o->nh || o->ng || o->ns || o->nst;
	unsigned rows =
	    1 + (asked ? or_one(o->nh) * or_one(o->ng) * or_one(o->ns) * or_one(o->nst) : 0);
	if (o->csv)
		fprintf(o->csv, "cpu,what,guest_halt_poll_ns,grow,shrink,grow_start,periods,polls,"
				"poll_hits,poll_ns,poll_cpu_pct,halts\n");
	printf("what-if (each period's wake-up when it came in the trace; 'recorded' is the "
	       "trace's own):\n");
	printf("  %-8s %-9s %18s %4s %6s %10s %9s %9s %9s %9s %9s\n", "cpu", "row",
	       "guest_halt_poll_ns", "grow", "shrink", "grow_start", "periods", "polls", "hits",
	       "poll CPU%", "halts");
	for (unsigned r = 0; r < rows; r++) {
		struct gov_params p = o->base;
		unsigned x = r - 1;
		struct gp_stats all = {0}, s;

		if (r > 0) {
			if (o->nh)
				p.guest_halt_poll_ns = o->hpn[x % o->nh], x /= o->nh;
			if (o->ng)
				p.grow = o->grow[x % o->ng], x /= o->ng;
			if (o->ns)
				p.shrink = o->shrink[x % o->ns], x /= o->ns;
			if (o->nst)
				p.grow_start = o->start[x % o->nst];
		}
		for (size_t i = 0; i < t.nc; i++) {
			const struct gp_cpu *c = &t.c[i];
			if (r == 0)
				s = (struct gp_stats){c->n,	  c->polls, c->hits,
						      c->poll_ns, c->halts, 0};
			else
				gp_replay(c, &p, o->tick_nsec, &s);
			all.periods += s.periods, all.polls += s.polls, all.hits += s.hits;
			all.poll_ns += s.poll_ns, all.halts += s.halts;
			snprintf(label, sizeof label, "cpu %d", c->cpu);
			if (!o->totals)
				row(stdout, false, label, r ? "what-if" : "recorded", &p, &s, span);
			if (o->csv)
				row(o->csv, true, label, r ? "what-if" : "recorded", &p, &s, span);
		}
		row(stdout, false, "all", r ? "what-if" : "recorded", &p, &all, span);
		if (o->csv)
			row(o->csv, true, "all", r ? "what-if" : "recorded", &p, &all, span);
	}
	printf("  (poll CPU%%: the guest's polling, %% of one CPU per CPU, 'all' summed)\n");
	bool disagree = agree != t.periods;
	gp_free(&t);
	return o->require && disagree ? RP_EXIT_DISAGREE : RP_EXIT_OK;
}
