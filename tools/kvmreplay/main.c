/*
 * build/idlelab-replay: KVM's halt-polling decisions replayed from a host's own trace, checked
 * halt by halt, then asked "what if" (docs/replay.md). tools/replay is its front (and draws
 * the PNG from --csv).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/policy/haltpoll.h"
#include "tools/kvmreplay/exits.h"
#include "tools/kvmreplay/guest_cli.h"
#include "tools/kvmreplay/options.h"
#include "tools/kvmreplay/replay.h"
#include "tools/kvmreplay/synth.h"

static const char USAGE[] =
    "usage: idlelab-replay TRACE [--params K=V,...] [--schedule FILE] [--from-start]\n"
    "         [--halt-poll-ns LIST] [--grow LIST] [--grow-start LIST] [--shrink LIST]\n"
    "         [--csv FILE] [--png FILE] [--show N] [--require-agree] [--totals]\n"
    "         [--range T0_NS,T1_NS]  (the what-if of the halts that end in it alone)\n"
    "         [--wake-cost TIME]  (a slept halt's wake-up came this much before its end)\n"
    "       tools/replay --results RESULTS_FOLDER  (idlelab's own traced boots)\n"
    "       idlelab-replay --guest TRACE [--guest-params K=V,...] [--guest-halt-poll-ns LIST]\n"
    "         [--guest-grow LIST] [--guest-shrink LIST] [--guest-grow-start LIST]\n"
    "         [--merge-gap TIME] [--hz N]  (a guest's power:cpu_idle trace; K: guest_halt_poll_ns\n"
    "         grow shrink grow_start allow_shrink)\n"
    "       idlelab-replay --synthesize VCPUS,SECONDS,SEED [--params K=V,...]\n"
    "  TRACE: trace-cmd report, perf script or tracefs text of kvm:kvm_vcpu_wakeup and\n"
    "  kvm:kvm_halt_poll_ns (gzip or plain; - for stdin). K: halt_poll_ns grow grow_start\n"
    "  shrink vm (KVM_CAP_HALT_POLL's max) form (2022 or 2021); times take ns/us/ms/s.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "idlelab-replay: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (idlelab-replay --help)\n");
	return RP_EXIT_USAGE;
}

/* --params: the kvm parameters (and the per-VM max, and the form of kvm_vcpu_halt). */
static bool parse_params(const char *s, struct hp_params *p, char *msg, size_t len)
{
	const struct rp_kv keys[] = {
	    {"halt_poll_ns", RP_KV_TIME, &p->halt_poll_ns, NULL},
	    {"grow", RP_KV_COUNT, &p->grow, NULL},
	    {"grow_start", RP_KV_TIME, &p->grow_start, NULL},
	    {"shrink", RP_KV_COUNT, &p->shrink, NULL},
	    {"vm", RP_KV_TIME, &p->vm_max, &p->vm_override},
	    {"form", RP_KV_FORM, &p->form, NULL},
	};

	return rp_parse_kv("--params", s, keys, sizeof keys / sizeof keys[0], msg, len);
}

/* --guest-params: the haltpoll governor's tunables. */
static bool parse_guest_params(const char *s, struct gov_params *p, char *msg, size_t len)
{
	const struct rp_kv keys[] = {
	    {"guest_halt_poll_ns", RP_KV_TIME, &p->guest_halt_poll_ns, NULL},
	    {"grow", RP_KV_COUNT, &p->grow, NULL},
	    {"shrink", RP_KV_COUNT, &p->shrink, NULL},
	    {"grow_start", RP_KV_TIME, &p->grow_start, NULL},
	    {"allow_shrink", RP_KV_FLAG, &p->allow_shrink, NULL},
	};

	return rp_parse_kv("--guest-params", s, keys, sizeof keys / sizeof keys[0], msg, len);
}

/* --schedule FILE: "T0_NS T1_NS K=V,..." a line, each onto the previous line's parameters. */
static int load_schedule(const char *path, const struct hp_params *base, struct rp_schedule *s)
{
	char line[512], msg[256];
	unsigned lineno = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "idlelab-replay: --schedule %s: %s\n", path, strerror(errno));
		return RP_EXIT_USAGE;
	}
	s->e = malloc(sizeof *s->e);
	s->n = 1;
	s->e[0] = (struct rp_sched_entry){0, 0, *base};
	while (fgets(line, sizeof line, f)) {
		unsigned long long t0, t1;
		char kv[400] = "";
		int got;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		got = sscanf(line, "%llu %llu %399s", &t0, &t1, kv);
		struct hp_params p = s->e[s->n - 1].p;
		if (got < 2 || t1 < t0 || (got == 3 && !parse_params(kv, &p, msg, sizeof msg))) {
			fprintf(stderr, "idlelab-replay: --schedule %s:%u: %s\n", path, lineno,
				got < 2 || t1 < t0 ? "not 'T0_NS T1_NS K=V,...' (T0 <= T1)" : msg);
			fclose(f);
			return RP_EXIT_USAGE;
		}
		/* before the Dec 2022 fixes a VM's max was halt_poll_ns as the VM was created:
		 * later writes of the module parameter did not reach it */
		if (p.form == HP_FORM_2021 && !p.vm_override)
			p.halt_poll_ns = base->halt_poll_ns;
		s->e = realloc(s->e, (s->n + 1) * sizeof *s->e);
		s->e[s->n++] = (struct rp_sched_entry){t0, t1, p};
	}
	fclose(f);
	return RP_EXIT_OK;
}

/* An axis not asked has the one value it was recorded with. */
static unsigned or_one(unsigned n)
{
	return n ? n : 1;
}

static const char *vcpu_label(const struct rp_vcpu *v, char *buf, size_t n)
{
	if (v->id >= 0)
		snprintf(buf, n, "vcpu %d (tid %d)", v->id, v->tid);
	else
		snprintf(buf, n, "tid %d", v->tid);
	return buf;
}

static void print_check(const struct rp_trace *t, const struct rp_check *c)
{
	char label[64];

	for (size_t k = 0; k < t->nv; k++) {
		const struct rp_vcpu_check *v = &c->v[k];
		printf("  %-22s %lu of %lu halts agree", vcpu_label(&t->v[k], label, sizeof label),
		       v->agree, v->checked);
		if (v->unsynced)
			printf(" (%lu before its first window change, not checked)", v->unsynced);
		if (v->either_side)
			printf(" (%lu across a parameter switch)", v->either_side);
		if (v->spanning)
			printf(" (%lu begun and ended under different parameters)", v->spanning);
		printf("\n");
	}
	printf("  %-22s %lu of %lu halts agree\n", "all", c->all.agree, c->all.checked);
	for (unsigned j = 1; j < RP_CLS_COUNT; j++)
		if (c->all.by_class[j])
			printf("  mismatches: %lu %s\n", c->all.by_class[j], rp_class_names[j]);
}

struct row {
	const char *what;
	struct hp_params p;
};

static void stats_add(struct rp_stats *a, const struct rp_stats *b)
{
	a->halts += b->halts, a->attempted += b->attempted, a->successful += b->successful;
	a->poll_ns += b->poll_ns, a->slept += b->slept, a->caught += b->caught;
}

static void print_row(FILE *out, bool csv, const char *vcpu, const struct row *r,
		      const struct rp_stats *s, uint64_t span_ns)
{
	double pct = span_ns ? 100.0 * (double)s->poll_ns / (double)span_ns : -1;

	if (csv) {
		fprintf(out, "%s,%s,%u,%u,%u,%u,%lu,%lu,%lu,%lu,%.3f,%lu,%lu\n", vcpu, r->what,
			hp_max(&r->p), r->p.grow, r->p.grow_start, r->p.shrink, s->halts,
			s->attempted, s->successful, s->poll_ns, pct, s->slept, s->caught);
		return;
	}
	fprintf(out, "  %-22s %-9s %12u %4u %10u %6u %9lu %9lu %10lu ", vcpu, r->what,
		hp_max(&r->p), r->p.grow, r->p.grow_start, r->p.shrink, s->halts, s->attempted,
		s->successful);
	if (pct >= 0)
		fprintf(out, "%9.2f", pct);
	else
		fprintf(out, "%9s", "n/a");
	fprintf(out, " %9lu %9lu\n", s->slept, s->caught);
}

/* An option whose value is a what-if axis: a list of times or counts. */
struct list_opt {
	int code; /* getopt_long's value for it */
	bool time;
	uint32_t *out;
	unsigned *n;
};

static const struct list_opt *list_of(const struct list_opt *l, size_t n, int code)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].code == code)
			return &l[i];
	return NULL;
}

static const char *option_name(const struct option *opts, int code)
{
	for (; opts->name; opts++)
		if (opts->val == code)
			return opts->name;
	return "?";
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"params", required_argument, 0, 'p'},
					     {"schedule", required_argument, 0, 'S'},
					     {"from-start", no_argument, 0, 'f'},
					     {"halt-poll-ns", required_argument, 0, 'H'},
					     {"grow", required_argument, 0, 'g'},
					     {"grow-start", required_argument, 0, 'G'},
					     {"shrink", required_argument, 0, 's'},
					     {"csv", required_argument, 0, 'c'},
					     {"show", required_argument, 0, 'n'},
					     {"require-agree", no_argument, 0, 'r'},
					     {"totals", no_argument, 0, 't'},
					     {"synthesize", required_argument, 0, 'Y'},
					     {"range", required_argument, 0, 'R'},
					     {"wake-cost", required_argument, 0, 'W'},
					     {"guest", no_argument, 0, 1},
					     {"guest-params", required_argument, 0, 2},
					     {"guest-halt-poll-ns", required_argument, 0, 3},
					     {"guest-grow", required_argument, 0, 4},
					     {"guest-shrink", required_argument, 0, 5},
					     {"guest-grow-start", required_argument, 0, 6},
					     {"merge-gap", required_argument, 0, 7},
					     {"hz", required_argument, 0, 8},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	struct hp_params given = {0};
	bool have_params = false, from_start = false, require = false, totals = false;
	const char *schedule = NULL, *csv = NULL, *synth = NULL;
	unsigned long long range0 = 0, range1 = 0;
	uint32_t wake_cost = 0, gap = 5000, hz = 250;
	bool guest = false;
	struct gp_options go = {.base = {.guest_halt_poll_ns = HALTPOLL_DEFAULT_POLL_NS,
					 .grow = HALTPOLL_DEFAULT_GROW,
					 .shrink = HALTPOLL_DEFAULT_SHRINK,
					 .grow_start = HALTPOLL_DEFAULT_GROW_START,
					 .allow_shrink = true}};
	bool ranged = false;
	uint32_t hpn[RP_MAX_VALUES], grw[RP_MAX_VALUES], gst[RP_MAX_VALUES], shr[RP_MAX_VALUES];
	unsigned nh = 0, ng = 0, ns = 0, nr = 0;
	uint32_t show = 5;
	char msg[512];
	int o, code;

	/* the what-if axes: each option a list of values */
	const struct list_opt lists[] = {
	    {'H', true, hpn, &nh},	   {'g', false, grw, &ng},
	    {'G', true, gst, &ns},	   {'s', false, shr, &nr},
	    {3, true, go.hpn, &go.nh},	   {4, false, go.grow, &go.ng},
	    {5, false, go.shrink, &go.ns}, {6, true, go.start, &go.nst},
	};

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const struct list_opt *l = list_of(lists, sizeof lists / sizeof lists[0], o);

		if (l) {
			char name[40];
			snprintf(name, sizeof name, "--%s", option_name(opts, o));
			if ((code =
				 rp_parse_list(name, optarg, l->time, l->out, l->n, RP_MAX_VALUES)))
				return code;
			continue;
		}
		switch (o) {
		case 'p':
			given = HP_X86_DEFAULTS;
			if (!parse_params(optarg, &given, msg, sizeof msg))
				return usage_error("%s", msg);
			have_params = true;
			break;
		case 'S':
			schedule = optarg;
			break;
		case 'f':
			from_start = true;
			break;
		case 'c':
			csv = optarg;
			break;
		case 'n':
			if (!rp_parse_count(optarg, strlen(optarg), &show))
				return usage_error("--show %s: not a count", optarg);
			break;
		case 'r':
			require = true;
			break;
		case 't':
			totals = true;
			break;
		case 'Y':
			synth = optarg;
			break;
		case 1:
			guest = true;
			break;
		case 2:
			if (!parse_guest_params(optarg, &go.base, msg, sizeof msg))
				return usage_error("%s", msg);
			break;
		case 7:
			if (!rp_parse_time(optarg, strlen(optarg), &gap))
				return usage_error("--merge-gap %s: not a time (ns, us, ms, s)",
						   optarg);
			break;
		case 8:
			if (!rp_parse_count(optarg, strlen(optarg), &hz) || hz == 0 || hz > 100000)
				return usage_error("--hz %s: not a tick rate 1..100000", optarg);
			break;
		case 'W':
			if (!rp_parse_time(optarg, strlen(optarg), &wake_cost))
				return usage_error("--wake-cost %s: not a time (ns, us, ms, s)",
						   optarg);
			break;
		case 'R':
			if (sscanf(optarg, "%llu,%llu", &range0, &range1) != 2 || range1 <= range0)
				return usage_error("--range %s: not T0_NS,T1_NS with T0 < T1",
						   optarg);
			ranged = true;
			break;
		case 'h':
			fputs(USAGE, stdout);
			return RP_EXIT_OK;
		default:
			fputs(USAGE, stderr);
			return RP_EXIT_USAGE;
		}
	}
	if (synth) {
		if (!have_params)
			given = HP_X86_DEFAULTS;
		return rp_synthesize(synth, &given, stdout);
	}
	if (optind != argc - 1)
		return usage_error("%s", optind >= argc ? "no TRACE given" : "one TRACE at a time");

	if (guest) {
		go.merge_gap_ns = gap;
		go.tick_nsec = haltpoll_tick_nsec(hz);
		go.totals = totals;
		go.require = require;
		if (csv && !(go.csv = fopen(csv, "w"))) {
			fprintf(stderr, "idlelab-replay: --csv %s: %s\n", csv, strerror(errno));
			return RP_EXIT_USAGE;
		}
		code = gp_main(argv[optind], &go);
		if (go.csv && fclose(go.csv) != 0 && code == RP_EXIT_OK) {
			fprintf(stderr, "idlelab-replay: --csv %s: %s\n", csv, strerror(errno));
			return RP_EXIT_USAGE;
		}
		return code;
	}
	struct rp_trace t = {0};
	if ((code = rp_read_trace(argv[optind], &t)))
		return code;
	if (!t.changes && !from_start) {
		fprintf(stderr,
			"idlelab-replay: %s: no kvm:kvm_halt_poll_ns event to synchronise the "
			"windows by (was it recorded? --from-start if the trace began before the "
			"vCPUs' first halt)\n",
			argv[optind]);
		rp_trace_free(&t);
		return RP_EXIT_NO_EVENTS;
	}
	if (schedule && !have_params)
		return usage_error("%s",
				   "--schedule needs --params: the parameters before its first "
				   "switch");
	struct hp_params rec = given;
	char why[512];
	if (!have_params && !schedule)
		rp_infer(&t, &rec, why, sizeof why);
	struct rp_schedule sched = {0};
	struct rp_sched_entry one = {0, 0, rec};
	if (schedule) {
		if ((code = load_schedule(schedule, &rec, &sched)))
			return code;
	} else {
		sched.e = &one, sched.n = 1;
	}
	uint64_t span = t.unitless ? 0 : t.t_last - t.t_first;
	printf("replay: %s: %s, %zu vCPU threads, %lu halts and %lu window changes over ",
	       argv[optind], rp_format_names[t.format], t.nv, t.halts, t.changes);
	if (span)
		printf("%.3f s\n", (double)span / 1e9);
	else
		printf("a clock without units\n");
	if (t.lost)
		printf("replay: the recorder dropped %lu events: mismatches are expected where it "
		       "did\n",
		       t.lost);
	if (schedule)
		printf("replay: parameters from %s (%zu switches)\n", schedule, sched.n - 1);
	else if (have_params)
		printf("replay: parameters given: halt_poll_ns=%u grow=%u grow_start=%u shrink=%u "
		       "form %s\n",
		       hp_max(&rec), rec.grow, rec.grow_start, rec.shrink,
		       rec.form == HP_FORM_2021 ? "2021" : "2022");
	else
		printf("replay: parameters inferred from the trace (--params to give them): %s\n",
		       why);

	struct rp_check chk;
	printf("check (the trace replayed under its own parameters):\n");
	rp_check(&t, &sched, from_start, show, stdout, &chk);
	print_check(&t, &chk);

	FILE *cf = NULL;
	if (csv && !(cf = fopen(csv, "w"))) {
		fprintf(stderr, "idlelab-replay: --csv %s: %s\n", csv, strerror(errno));
		return RP_EXIT_USAGE;
	}
	if (cf)
		fprintf(cf, "vcpu,what,halt_poll_ns,grow,grow_start,shrink,halts,polls_attempted,"
			    "polls_successful,poll_ns,poll_cpu_pct,halts_slept,wakeups_caught\n");
	/* the rows: the trace's own, then every combination asked (an axis not asked keeps the
	 * recorded parameters' value) */
	struct hp_params base = sched.e[sched.n - 1].p;
	bool asked = nh || ng || ns || nr;
	unsigned rows_n = 1 + (asked ? or_one(nh) * or_one(ng) * or_one(ns) * or_one(nr) : 0);
	struct row *rows = calloc(rows_n, sizeof *rows);
	rows[0] = (struct row){"recorded", base};
	for (unsigned i = 1; i < rows_n; i++) {
		unsigned x = i - 1;
		struct hp_params p = base;
		if (nh)
			p.vm_override = false, p.halt_poll_ns = hpn[x % nh], x /= nh;
		if (ng)
			p.grow = grw[x % ng], x /= ng;
		if (ns)
			p.grow_start = gst[x % ns], x /= ns;
		if (nr)
			p.shrink = shr[x % nr];
		rows[i] = (struct row){"what-if", p};
	}
	if (ranged) { /* the rows count the range's halts alone, the what-if from a window of 0 */
		for (size_t k = 0; k < t.nv; k++) {
			struct rp_vcpu *v = &t.v[k];
			size_t lo = 0, hi;
			while (lo < v->n && v->h[lo].t_ns < range0)
				lo++;
			for (hi = lo; hi < v->n && v->h[hi].t_ns <= range1; hi++)
				;
			memmove(v->h, v->h + lo, (hi - lo) * sizeof *v->h);
			v->n = hi - lo;
		}
		span = t.unitless ? 0 : range1 - range0;
		printf("what-if of the %.3f s from %llu ns on alone:\n",
		       (double)(range1 - range0) / 1e9, range0);
	}
	if (wake_cost)
		printf("what-if: a halt that slept had its wake-up %u ns before its end "
		       "(--wake-cost)\n",
		       wake_cost);
	printf("what-if (first order: each halt's wake-up comes when it did in the trace; "
	       "'recorded' is the trace's own, a failed poll counted as its whole window):\n");
	printf("  %-22s %-9s %12s %4s %10s %6s %9s %9s %10s %9s %9s %9s\n", "vcpu", "row",
	       "halt_poll_ns", "grow", "grow_start", "shrink", "halts", "polls", "successful",
	       "poll CPU%", "slept", "caught");
	for (unsigned i = 0; i < rows_n; i++) {
		struct rp_stats all = {0}, s;
		char label[64];
		for (size_t k = 0; k < t.nv; k++) {
			if (i == 0)
				rp_recorded(&t.v[k], &s);
			else
				rp_whatif(&t.v[k], &rows[i].p, wake_cost, &s);
			stats_add(&all, &s);
			vcpu_label(&t.v[k], label, sizeof label);
			if (!totals)
				print_row(stdout, false, label, &rows[i], &s, span);
			if (cf)
				print_row(cf, true, label, &rows[i], &s, span);
		}
		print_row(stdout, false, "all", &rows[i], &all, span);
		if (cf)
			print_row(cf, true, "all", &rows[i], &all, span);
	}
	printf("  (poll CPU%%: %% of one host CPU per vCPU thread, 'all' summed; caught: wake-ups "
	       "this setting's poll catches that slept in the trace)\n");
	if (cf && fclose(cf) != 0) {
		fprintf(stderr, "idlelab-replay: --csv %s: %s\n", csv, strerror(errno));
		return RP_EXIT_USAGE;
	}
	bool disagree = chk.all.agree != chk.all.checked;
	free(rows);
	free(chk.v);
	if (schedule)
		free(sched.e);
	rp_trace_free(&t);
	return require && disagree ? RP_EXIT_DISAGREE : RP_EXIT_OK;
}
