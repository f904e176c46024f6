/*
 * KVM's generic halt polling (virt/kvm/kvm_main.c: kvm_vcpu_halt, grow/shrink_halt_poll_ns),
 * restated from docs/haltpoll-spec.md §2.3 in the current (post Dec 2022) form: grow does not
 * clamp, the next halt does; shrink collapses below grow_start; a VM that used
 * KVM_CAP_HALT_POLL ignores halt_poll_ns but keeps the global grow/grow_start/shrink.
 */
#include "tools/sim/host_poll.h"

void hp_vcpu_init(struct hp_vcpu *v, bool poll_allowed)
{
	*v = (struct hp_vcpu){.poll_allowed = poll_allowed};
}

uint64_t hp_max(const struct hp_params *p)
{
	return p->vm_override ? p->vm_max : p->halt_poll_ns;
}

void hp_halt_exit(struct hp_vcpu *v)
{
	v->halt_exits++;
}

uint64_t hp_halt_begin(const struct hp_params *p, struct hp_vcpu *v)
{
	uint64_t max = hp_max(p);

	if (p->fixed)
		v->w = max;
	if (v->w > max) /* step 2: the clamp happens here, not when growing */
		v->w = max;
	return v->poll_allowed ? v->w : 0;
}

/* grow_halt_poll_ns: grow == 0 disables growth (unlike the guest governor); no max clamp. */
static void grow(const struct hp_params *p, struct hp_vcpu *v)
{
	uint32_t val;

	v->grows++;
	if (p->grow == 0)
		return;
	val = (uint32_t)(v->w * p->grow);
	if (val < p->grow_start)
		val = p->grow_start;
	v->w = val;
}

/* shrink_halt_poll_ns: shrink == 0 resets to 0; below grow_start collapses to 0. */
static void shrink(const struct hp_params *p, struct hp_vcpu *v)
{
	uint32_t val = p->shrink == 0 ? 0 : (uint32_t)v->w / p->shrink;

	v->shrinks++;
	if (val < p->grow_start)
		val = 0;
	v->w = val;
}

void hp_halt_end(const struct hp_params *p, struct hp_vcpu *v, const struct hp_halt *h)
{
	uint64_t max = hp_max(p); /* recomputed after the halt (spec §2.2) */

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
		return; /* §2.5: with polling disallowed the window is frozen */
	if (h->invalid)
		shrink(p, v);
	else if (max == 0)
		v->w = 0;
	else if (h->halt_ns <= v->w)
		return;
	else if (v->w != 0 && h->halt_ns > max)
		shrink(p, v);
	else if (v->w < max && h->halt_ns < max)
		grow(p, v);
}
