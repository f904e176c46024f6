/*
 * The check and the what-if of replay.h. The check runs each halt through hp_halt_begin
 * (the parameters as the halt began: its wake-up's time less halt_ns) and hp_halt_end (as it
 * ended), the same calls the simulator makes, and compares the change it makes with the
 * kvm_halt_poll_ns the trace has before that halt's kvm_vcpu_wakeup.
 */
#include "tools/kvmreplay/replay.h"

#include <stdlib.h>
#include <string.h>

const char *const rp_class_names[] = {"agree", "another change (grow, shrink or none)",
				      "the same change, other windows",
				      "two changes before one wake-up (an event lost)"};

static const char *change_name(unsigned c)
{
	static const char *const n[] = {"none", "grow", "shrink", "several"};
	return c < 4 ? n[c] : "?";
}

/* The parameters in force at t: 1 option, or 2 inside a switch (before, after). */
static unsigned params_at(const struct rp_schedule *s, uint64_t t, const struct hp_params *opt[2])
{
	size_t k = 0;

	while (k + 1 < s->n && s->e[k + 1].t0_ns <= t)
		k++;
	opt[0] = &s->e[k].p;
	if (k > 0 && t <= s->e[k].t1_ns) {
		opt[0] = &s->e[k - 1].p;
		opt[1] = &s->e[k].p;
		return 2;
	}
	/* a halt ending just before a switch's first write cannot have seen it; one ending after
	 * its last write has */
	return 1;
}

struct step {
	struct hp_change c;
	uint32_t window, w_clamped, w_after;
};

static struct step replay_one(const struct hp_params *pb, const struct hp_params *pe, uint32_t w,
			      const struct rp_halt *h)
{
	struct hp_vcpu v;
	struct step s;

	hp_vcpu_init(&v, true);
	v.w = w;
	s.window = hp_halt_begin(pb, &v);
	s.w_clamped = v.w;
	struct hp_halt hh = {
	    .window = s.window, .halt_ns = h->halt_ns, .success = !h->waited, .invalid = !h->valid};
	s.c = hp_halt_end(pe, &v, &hh);
	s.w_after = v.w;
	return s;
}

static enum rp_class compare(const struct rp_halt *h, const struct hp_change *c)
{
	unsigned pred = c->kind == HP_GROW ? RP_GROW : c->kind == HP_SHRINK ? RP_SHRINK : RP_NONE;

	if (h->change == RP_SEVERAL)
		return RP_CLS_SEVERAL;
	if (pred != h->change)
		return RP_CLS_KIND;
	if (pred == RP_NONE || (h->old == c->old && h->new == c->new))
		return RP_CLS_AGREE;
	return RP_CLS_VALUES;
}

static void describe(FILE *log, const struct rp_vcpu *v, size_t i, const struct rp_trace *t,
		     uint32_t w, const struct step *s, enum rp_class cls)
{
	const struct rp_halt *h = &v->h[i];
	unsigned pred = s->c.kind == HP_GROW	 ? RP_GROW
			: s->c.kind == HP_SHRINK ? RP_SHRINK
						 : RP_NONE;

	fprintf(log,
		"  mismatch: vcpu %d (tid %d) halt %zu at +%.6f s: %s, halt_ns %lu, window %u "
		"(%u before the clamp): replayed %s %u -> %u, recorded %s %u -> %u (%s)\n",
		v->id, v->tid, i + 1, (double)(h->t_ns - t->t_first) / 1e9,
		h->waited ? "waited" : "did not wait", h->halt_ns, s->window, w, change_name(pred),
		s->c.old, s->c.new, change_name(h->change), h->old, h->new, rp_class_names[cls]);
}

void rp_check(struct rp_trace *t, const struct rp_schedule *s, bool from_start, unsigned show,
	      FILE *log, struct rp_check *out)
{
	unsigned shown = 0;

	out->v = calloc(t->nv ? t->nv : 1, sizeof *out->v);
	memset(&out->all, 0, sizeof out->all);
	for (size_t k = 0; k < t->nv; k++) {
		struct rp_vcpu *v = &t->v[k];
		struct rp_vcpu_check *c = &out->v[k];
		bool synced = from_start;
		uint32_t w = 0;

		for (size_t i = 0; i < v->n; i++) {
			struct rp_halt *h = &v->h[i];
			const struct hp_params *ob[2], *oe[2];
			unsigned nb, ne, tries = 0;
			enum rp_class cls = RP_CLS_KIND;
			struct step st = {0}, first = {0};

			if (!synced) {
				c->unsynced++;
				h->window = RP_UNKNOWN;
				h->pending = !h->waited;
				if (h->change == RP_GROW || h->change == RP_SHRINK) {
					w = h->new;
					synced = true;
				}
				continue;
			}
			nb = params_at(s, h->t_ns - (h->halt_ns < h->t_ns ? h->halt_ns : h->t_ns),
				       ob);
			ne = params_at(s, h->t_ns, oe);
			for (unsigned a = 0; a < nb && cls != RP_CLS_AGREE; a++)
				for (unsigned b = 0; b < ne && cls != RP_CLS_AGREE; b++) {
					st = replay_one(ob[a], oe[b], w, h);
					cls = compare(h, &st.c);
					if (tries++ == 0)
						first = st;
				}
			if (cls != RP_CLS_AGREE) {
				st = first;
				cls = compare(h, &st.c);
			}
			c->checked++;
			c->by_class[cls]++;
			if (tries > 1)
				c->either_side++;
			else if (ob[0] != oe[0])
				c->spanning++;
			h->window = st.window;
			h->pending = st.window == 0 && !h->waited;
			if (cls == RP_CLS_AGREE) {
				c->agree++;
				w = st.w_after;
				continue;
			}
			if (shown < show && log) {
				describe(log, v, i, t, w, &st, cls);
				shown++;
			}
			/* re-synchronised at what KVM did, so one mismatch is counted once */
			w = h->change == RP_GROW || h->change == RP_SHRINK ? h->new : st.w_clamped;
		}
		out->all.checked += c->checked;
		out->all.agree += c->agree;
		out->all.unsynced += c->unsynced;
		out->all.either_side += c->either_side;
		out->all.spanning += c->spanning;
		for (unsigned j = 0; j < RP_CLS_COUNT; j++)
			out->all.by_class[j] += c->by_class[j];
	}
}

void rp_recorded(const struct rp_vcpu *v, struct rp_stats *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < v->n; i++) {
		const struct rp_halt *h = &v->h[i];

		out->halts++;
		out->slept += h->waited;
		if (h->window == RP_UNKNOWN || h->window == 0)
			continue;
		out->attempted++;
		if (!h->waited) {
			out->successful++;
			out->poll_ns += h->halt_ns;
		} else {
			out->poll_ns += h->window;
		}
	}
}

void rp_whatif(const struct rp_vcpu *v, const struct hp_params *p, uint64_t wake_cost_ns,
	       struct rp_stats *out)
{
	struct hp_vcpu hv;

	memset(out, 0, sizeof *out);
	hp_vcpu_init(&hv, true);
	for (size_t i = 0; i < v->n; i++) {
		const struct rp_halt *h = &v->h[i];
		uint64_t d = h->waited && h->halt_ns > wake_cost_ns ? h->halt_ns - wake_cost_ns
			     : h->waited			    ? 0
								    : h->halt_ns;
		uint32_t w = hp_halt_begin(p, &hv);
		bool caught = w && d <= w;
		bool awake = caught || (w == 0 && h->pending);
		struct hp_halt hh = {.window = w,
				     .poll_ns = w ? (caught ? d : w) : 0,
				     .success = awake,
				     .wait_ns = awake ? 0 : d - (w < d ? w : d),
				     .halt_ns = d,
				     .invalid = !h->valid};

		out->halts++;
		out->attempted += w != 0;
		out->successful += w != 0 && awake;
		out->poll_ns += hh.poll_ns;
		out->slept += !awake;
		out->caught += caught && h->waited;
		hp_halt_end(p, &hv, &hh);
	}
}

/* The most frequent of up to 16 values. */
struct tally {
	uint64_t v[16], n[16];
	unsigned k;
};
static void count(struct tally *t, uint64_t v)
{
	for (unsigned i = 0; i < t->k; i++)
		if (t->v[i] == v) {
			t->n[i]++;
			return;
		}
	if (t->k < 16) {
		t->v[t->k] = v;
		t->n[t->k++] = 1;
	}
}
static bool mode(const struct tally *t, uint64_t *v)
{
	unsigned best = 0;

	if (!t->k)
		return false;
	for (unsigned i = 1; i < t->k; i++)
		if (t->n[i] > t->n[best])
			best = i;
	*v = t->v[best];
	return true;
}

void rp_infer(const struct rp_trace *t, struct hp_params *p, char *why, size_t whylen)
{
	struct tally grow = {0}, start = {0}, shrink = {0}, clamp = {0};
	uint64_t lo = 0, hi = UINT64_MAX, v;
	bool grow0 = false, halving_reset = false, past_max = false;
	size_t used = 0;

	*p = HP_X86_DEFAULTS;
	for (size_t k = 0; k < t->nv; k++) {
		const struct rp_vcpu *vc = &t->v[k];
		bool have_last = false;
		uint32_t last = 0;

		for (size_t i = 0; i < vc->n; i++) {
			const struct rp_halt *h = &vc->h[i];

			if (h->change != RP_GROW && h->change != RP_SHRINK)
				continue;
			/* an old below the last new: the halt between clamped it to max */
			if (have_last && h->old < last && h->old)
				count(&clamp, h->old);
			have_last = true, last = h->new;
			if (h->change == RP_GROW) {
				if (h->halt_ns + 1 > lo)
					lo = h->halt_ns + 1;
				if ((uint64_t)h->old + 1 > lo)
					lo = (uint64_t)h->old + 1;
				if (h->old == 0)
					count(&start, h->new);
				else if (h->new > h->old && h->new % h->old == 0)
					count(&grow, h->new / h->old);
				else if (h->new == h->old)
					grow0 = true;
			} else if (h->valid) {
				if (h->halt_ns - 1 < hi)
					hi = h->halt_ns - 1;
				if (h->new) {
					uint32_t r = h->old / h->new;
					if (r && h->old / r == h->new)
						count(&shrink, r);
				} else if (h->old / 2 >= 10000) {
					halving_reset = true;
				}
			}
		}
	}
	if (mode(&grow, &v))
		p->grow = (uint32_t)v;
	else if (grow0)
		p->grow = 0;
	if (mode(&start, &v))
		p->grow_start = (uint32_t)v;
	if (mode(&shrink, &v))
		p->shrink = (uint32_t)v;
	else if (halving_reset)
		p->shrink = 0;
	if (mode(&clamp, &v)) {
		p->halt_poll_ns = (uint32_t)v;
	} else if (!(lo <= 200000 && 200000 <= hi)) {
		v = (lo + 999) / 1000 * 1000;
		p->halt_poll_ns = (uint32_t)(v <= hi ? v : lo);
	}
	for (size_t k = 0; k < t->nv; k++)
		for (size_t i = 0; i < t->v[k].n; i++)
			if (t->v[k].h[i].change == RP_GROW && t->v[k].h[i].new > p->halt_poll_ns)
				past_max = true;
	p->form = HP_FORM_2022;
	used += (size_t)snprintf(
	    why + used, whylen - used,
	    "grow=%u (%s), grow_start=%u (%s), shrink=%u (%s), halt_poll_ns=%u", p->grow,
	    grow.k  ? "its grows"
	    : grow0 ? "grows that kept the window"
		    : "assumed",
	    p->grow_start, start.k ? "its grows from 0" : "assumed", p->shrink,
	    shrink.k	    ? "its shrinks"
	    : halving_reset ? "its shrinks reset to 0"
			    : "assumed: no shrink tells",
	    p->halt_poll_ns);
	if (clamp.k)
		snprintf(why + used, whylen - used, " (a window clamped to it)%s",
			 past_max ? ", form 2022 (a grow past max)" : "");
	else if (hi == UINT64_MAX)
		snprintf(why + used, whylen - used,
			 " (above %lu ns by its grows, no shrink bounds it)", lo ? lo - 1 : 0);
	else
		snprintf(why + used, whylen - used, " (its halts put it in [%lu, %lu] ns)", lo, hi);
}
