/*
 * The idealised idle of docs/haltpoll-spec.md §1.10.2 as the states of the governed entry
 * (kernel/policy/idle_entry.h), for the host tests: no overheads; a poll with limit L ends
 * with work iff the wake-up comes within L, else it expires after exactly L; a halt lasts
 * until the wake-up, or, timed (halt_limit), until its limit plus overshoot_ns. With
 * wake_at_check a wake-up due exactly as a poll's limit passes lands at its expiry check
 * (the kernel's poll loop tests for work, then the clock): the poll reports an expiry and
 * the work is pending as it ends. The host tests drive the governors through the kernel's
 * own sequence with these states, in the kernel's idle loop (kernel/idle.c:
 * idle_until_work), and so does tools/replay --guest on a guest's recorded idle periods.
 */
#ifndef IDLELAB_REPLAY_IDEAL_IDLE_H
#define IDLELAB_REPLAY_IDEAL_IDLE_H

#include "kernel/policy/governors.h"
#include "kernel/policy/idle_entry.h"

#define IDEAL_MAX_ENTRIES 8

struct ideal_entry {
	enum gov_state state;
	uint64_t ns;
	bool expired; /* a poll its limit ended */
};

struct ideal_cpu {
	struct gov_cpu g;
	struct idle_entry_cpu seq;
	struct idle_entry_setup k;
	struct gov_params p;
	uint64_t left;	       /* ns until the wake-up */
	uint64_t overshoot_ns; /* a timed halt returns this much after its limit */
	bool wake_at_check;    /* a wake-up due as a poll's limit passes comes at its check */
	unsigned n;	       /* the period's entries so far */
	struct ideal_entry e[IDEAL_MAX_ENTRIES];
	unsigned polls, hits, expiries, halts, timed_halts, aborted, grows, shrinks;
	uint64_t polled_ns;
};

static struct ideal_entry *ideal_log(struct ideal_cpu *c, enum gov_state state, uint64_t ns,
				     bool expired)
{
	struct ideal_entry *e = &c->e[c->n < IDEAL_MAX_ENTRIES ? c->n : IDEAL_MAX_ENTRIES - 1];

	c->n++;
	*e = (struct ideal_entry){state, ns, expired};
	return e;
}

static bool ideal_work(void *cpu)
{
	return ((struct ideal_cpu *)cpu)->left == 0;
}

static bool ideal_poll_start(void *cpu, uint64_t *ns)
{
	struct ideal_cpu *c = cpu;

	c->polls++;
	if (c->left)
		return false;
	c->hits++;
	*ns = 0;
	ideal_log(c, GOV_STATE_POLL, 0, false);
	return true;
}

static bool ideal_poll_wait(void *cpu, uint64_t limit_ns, uint64_t *ns)
{
	struct ideal_cpu *c = cpu;
	bool work = c->wake_at_check ? c->left < limit_ns : c->left <= limit_ns;

	*ns = work ? c->left : limit_ns;
	c->left -= *ns;
	c->polled_ns += *ns;
	if (work)
		c->hits++;
	else
		c->expiries++;
	ideal_log(c, GOV_STATE_POLL, *ns, !work);
	return work;
}

static uint64_t ideal_halt(void *cpu, uint64_t limit_ns)
{
	struct ideal_cpu *c = cpu;
	uint64_t back = limit_ns ? limit_ns + c->overshoot_ns : UINT64_MAX;
	uint64_t ns = c->left <= back ? c->left : back;

	c->halts++;
	c->timed_halts += limit_ns != 0;
	c->left -= ns;
	ideal_log(c, GOV_STATE_HALT, ns, false);
	return ns;
}

static void ideal_aborted(void *cpu)
{
	((struct ideal_cpu *)cpu)->aborted++;
}

static void ideal_reflected(void *cpu, enum gov_adjust a)
{
	struct ideal_cpu *c = cpu;

	c->grows += a == GOV_ADJ_GROW;
	c->shrinks += a == GOV_ADJ_SHRINK;
}

static const struct idle_entry_ops ideal_ops = {
    .work = ideal_work,
    .poll_start = ideal_poll_start,
    .poll_wait = ideal_poll_wait,
    .halt = ideal_halt,
    .aborted = ideal_aborted,
    .reflected = ideal_reflected,
};

/* A CPU that has just enabled gov, with the tunables p and the tick tick_nsec. */
static void ideal_init(struct ideal_cpu *c, const struct idle_governor *gov, struct gov_params p,
		       uint64_t tick_nsec)
{
	*c = (struct ideal_cpu){.p = p};
	c->k = (struct idle_entry_setup){.gov = gov, .params = &c->p, .tick_nsec = tick_nsec};
	gov->enable(&c->g);
}

/*
 * One idle period of length d > 0: entries until one ends with work, or work is pending
 * after one (the idle loop tests for it before each entry), and the reflect of an entry
 * that ended with work (which the kernel makes at the next entry: the governor hears the
 * same things in the same order). Returns the number of entries, or 0 if the period did not
 * end within max_entries.
 */
static unsigned ideal_period_try(struct ideal_cpu *c, uint64_t d, unsigned max_entries)
{
	c->left = d;
	c->n = 0;
	while (!ideal_work(c) && !idle_entry_run(&ideal_ops, c, &c->k, &c->g, &c->seq))
		if (c->n >= max_entries)
			break;
	if (c->n > max_entries || c->left)
		return 0;
	idle_entry_reflect_last(&ideal_ops, c, &c->k, &c->g, &c->seq);
	return c->n;
}

#endif
