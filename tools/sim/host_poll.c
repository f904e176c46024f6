/*
 * KVM's generic halt polling (virt/kvm/kvm_main.c: kvm_vcpu_halt, grow_halt_poll_ns,
 * shrink_halt_poll_ns), restated from docs/haltpoll-spec.md §2.3 and docs/kvm-halt.md: the
 * window is KVM's unsigned int (grow wraps as its multiply does), shrink collapses below
 * grow_start, a VM that used KVM_CAP_HALT_POLL ignores halt_poll_ns but keeps the global
 * grow/grow_start/shrink, and the two forms of enum hp_form differ only in where the window
 * meets max.
 */
#include "tools/sim/host_poll.h"

void hp_vcpu_init(struct hp_vcpu *v, bool poll_allowed)
{
	*v = (struct hp_vcpu){.poll_allowed = poll_allowed};
}

uint32_t hp_max(const struct hp_params *p)
{
	return p->vm_override ? p->vm_max : p->halt_poll_ns;
}

void hp_halt_exit(struct hp_vcpu *v)
{
	v->halt_exits++;
}

uint32_t hp_halt_begin(const struct hp_params *p, struct hp_vcpu *v)
{
	uint32_t max = hp_max(p);

	if (p->fixed)
		v->w = max;
	if (p->form == HP_FORM_2022 && v->w > max) /* step 2: the clamp is here, not in grow */
		v->w = max;
	return v->poll_allowed ? v->w : 0;
}

/* grow_halt_poll_ns: grow == 0 disables growth (unlike the guest governor), traced all the
 * same. */
static struct hp_change grow(const struct hp_params *p, struct hp_vcpu *v, uint32_t max)
{
	struct hp_change c = {HP_GROW, v->w, v->w};

	v->grows++;
	if (p->grow == 0)
		return c;
	c.new = v->w * p->grow;
	if (c.new < p->grow_start)
		c.new = p->grow_start;
	if (p->form == HP_FORM_2021 && c.new > max)
		c.new = max;
	v->w = c.new;
	return c;
}

/* shrink_halt_poll_ns: shrink == 0 resets to 0; below grow_start collapses to 0. */
static struct hp_change shrink(const struct hp_params *p, struct hp_vcpu *v)
{
	struct hp_change c = {HP_SHRINK, v->w, p->shrink == 0 ? 0 : v->w / p->shrink};

	v->shrinks++;
	if (c.new < p->grow_start)
		c.new = 0;
	v->w = c.new;
	return c;
}

struct hp_change hp_halt_end(const struct hp_params *p, struct hp_vcpu *v, const struct hp_halt *h)
{
	uint32_t max = hp_max(p); /* recomputed after the halt (spec §2.2) */
	struct hp_change keep = {HP_KEEP, v->w, v->w};

	if (!h->success) { /* the thread scheduled out and another context woke it */
		v->wait_ns += h->wait_ns;
		v->halt_wakeup++;
	}
	if (h->window) {
		v->attempted_poll++;
		if (h->success) {
			v->successful_poll++;
			v->poll_success_ns += h->poll_ns;
			if (h->invalid)
				v->poll_invalid++;
		} else {
			v->poll_fail_ns += h->poll_ns;
		}
	}
	if (!v->poll_allowed || p->fixed)
		return keep; /* §2.5: with polling disallowed the window is frozen */
	if (h->invalid)
		return shrink(p, v);
	if (max == 0) {
		v->w = 0;
		return (struct hp_change){HP_ZERO, keep.old, 0};
	}
	if (h->halt_ns <= v->w)
		return keep;
	if (v->w != 0 && h->halt_ns > max)
		return shrink(p, v);
	if (v->w < max && h->halt_ns < max)
		return grow(p, v, max);
	return keep;
}
