/*
 * The kernel's static branches: the branches hot paths take by a knob read once at boot,
 * each a NOP until its key is turned on (the sites and their patching: arch/x86/static_branch.h).
 * The idle loop's reads of its knobs, made on every entry, then cost what the old
 * per-configuration copies of the loop did, without the copies. Each key mirrors a field of
 * its owner's configuration, which stays the one definition (its setup turns the key on
 * from that field).
 */
#ifndef IDLELAB_KERNEL_STATIC_BRANCH_H
#define IDLELAB_KERNEL_STATIC_BRANCH_H

#include <stdbool.h>

#include "arch/x86/static_branch.h"

/*
 * The keys, each kept because it pays: beside each, what the same test as a load and a
 * compare costs more, in guest instructions per pingpong round trip (make wakepath-insns'
 * counter, 1000 round trips, mean of 4 alternated boots, 2026-12-04; issue 45).
 */
enum static_branch_key {
	BRANCH_TIMELINE, /* timeline=N, N > 0 (kernel/timeline.c) */
	/* idle_config.policy == IDLE_HALTPOLL, == IDLE_POLL (kernel/idle_setup.c): the two
	 * together, idle=poll +6, idle=haltpoll +4, idle=halt +6 */
	BRANCH_IDLE_HALTPOLL,
	BRANCH_IDLE_POLL,
	BRANCH_GOV_PREDICT,  /* idle_config.gov == &gov_predict: idle=haltpoll +2, predict +2 */
	BRANCH_POLLFLAG_OFF, /* !idle_config.pollflag: idle=poll +4, idle=haltpoll +4 */
	BRANCH_STEAL_GATE,   /* idle_config.steal_threshold != 0: idle=haltpoll +2 */
	/* windows= given (kernel/reconfigure.c): each idle entry checks for new settings; off
	 * in every boot without it, so the wake path's counts are those above */
	BRANCH_RECONFIGURE,
};

/* True once `key` is on (a jump); before, a NOP that falls through to false. */
static inline __attribute__((always_inline)) bool static_branch_on(enum static_branch_key key)
{
	arch_static_branch(key, on);
	return false;
	// cppcheck-suppress unusedLabel ; the asm goto above jumps here once patched
on:
	return true;
}

/* The boot CPU, before any other CPU starts and before any of the sites can run: `key`'s
 * sites jump from now on if `on`; a key left off stays a NOP. */
static inline void static_branch_set(enum static_branch_key key, bool on)
{
	if (on)
		arch_static_branches_set(key, true);
}

/* Between windows (kernel/reconfigure.c), every other CPU parked at the quiesce barrier:
 * `key`'s sites jump from now on if `on`, fall through if not. */
static inline void static_branch_switch(enum static_branch_key key, bool on)
{
	arch_static_branches_set(key, on);
}

#endif
