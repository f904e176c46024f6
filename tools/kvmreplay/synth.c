/*
 * Each vCPU runs 5-50 us, then halts for a length drawn from a mix that reaches every branch
 * of the adjustment: wake-ups already pending (no poll, no sleep), short ones a window
 * catches, ones just past the window, and ones longer than max (shrink). Halts of the vCPUs
 * interleave in time order, as a host's trace does.
 */
#include "tools/kvmreplay/synth.h"

#include <stdlib.h>

#include "tools/kvmreplay/exits.h"

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t draw_halt(uint64_t *rng, uint32_t max)
{
	uint64_t r = next(rng) % 1000, span = max ? max : 200000;

	if (r < 30)
		return 200 + next(rng) % 800; /* pending: the wake-up was there */
	if (r < 550)
		return 1000 + next(rng) % (span / 2 + 1);
	if (r < 850)
		return span / 2 + next(rng) % (span + 1);
	return span + next(rng) % (4 * span + 1);
}

static void stamp(FILE *out, unsigned vcpu, uint64_t t_ns)
{
	fprintf(out, "     CPU %u/KVM-%u    [%03u] d..1. %lu.%06lu: ", vcpu, 4000 + vcpu, vcpu % 64,
		t_ns / 1000000000u, t_ns % 1000000000u / 1000);
}

int rp_synthesize(const char *spec, const struct hp_params *p, FILE *out)
{
	unsigned vcpus, seconds;
	unsigned long long seed;
	struct {
		struct hp_vcpu v;
		uint64_t t; /* when its next halt ends */
		uint64_t d, rng;
		uint32_t window;
	} * c;

	if (sscanf(spec, "%u,%u,%llu", &vcpus, &seconds, &seed) != 3 || vcpus == 0 ||
	    vcpus > 4096 || seconds == 0 || seconds > 3600) {
		fprintf(stderr,
			"idlelab-replay: --synthesize: '%s' is not VCPUS,SECONDS,SEED "
			"(1..4096 vCPUs, 1..3600 s)\n",
			spec);
		return RP_EXIT_USAGE;
	}
	c = calloc(vcpus, sizeof *c);
	fprintf(out, "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:%u\n", vcpus);
	for (unsigned i = 0; i < vcpus; i++) {
		hp_vcpu_init(&c[i].v, true);
		c[i].rng = seed * 2654435761u + i + 1;
		c[i].t = 1000000000ull + next(&c[i].rng) % 50000;
		c[i].window = hp_halt_begin(p, &c[i].v);
		c[i].d = draw_halt(&c[i].rng, hp_max(p));
		c[i].t += c[i].d;
	}
	const uint64_t end = 1000000000ull + (uint64_t)seconds * 1000000000ull;
	for (;;) {
		unsigned k = 0;
		for (unsigned i = 1; i < vcpus; i++)
			if (c[i].t < c[k].t)
				k = i;
		if (c[k].t >= end)
			break;
		uint64_t d = c[k].d;
		uint32_t w = c[k].window;
		bool pending = d < 1000, caught = w && d <= w;
		bool awake = caught || pending;
		struct hp_halt h = {.window = w,
				    .poll_ns = w ? (caught ? d : w) : 0,
				    .success = awake,
				    .wait_ns = awake ? 0 : d - (w < d ? w : d),
				    .halt_ns = d};
		struct hp_change ch = hp_halt_end(p, &c[k].v, &h);
		if (hp_change_traced(ch.kind)) {
			stamp(out, k, c[k].t);
			fprintf(out, "kvm_halt_poll_ns: vcpu %u: halt_poll_ns %u (%s %u)\n", k,
				ch.new, ch.kind == HP_GROW ? "grow" : "shrink", ch.old);
		}
		stamp(out, k, c[k].t);
		fprintf(out, "kvm_vcpu_wakeup: %s time %lu ns, polling valid\n",
			awake ? "poll" : "wait", d);
		c[k].t += 5000 + next(&c[k].rng) % 45000; /* runs, then halts again */
		c[k].window = hp_halt_begin(p, &c[k].v);
		c[k].d = draw_halt(&c[k].rng, hp_max(p));
		c[k].t += c[k].d;
	}
	free(c);
	return fflush(out) == 0 ? RP_EXIT_OK : RP_EXIT_READ;
}
