/*
 * The branches the hot paths take by a knob read once at boot, each a NOP until its switch is
 * turned on (arch/x86/static_branch.h): the idle loop's reads of its knobs, made on every
 * entry, then cost what the old per-configuration copies of the loop did, without the copies.
 * Each switch mirrors a field of its owner's configuration, which stays the one definition
 * (its setup turns the switch on from that field).
 */
#ifndef IDLELAB_KERNEL_BOOT_SWITCH_H
#define IDLELAB_KERNEL_BOOT_SWITCH_H

#include <stdbool.h>

#include "arch/x86/static_branch.h"

enum boot_switch {
	SWITCH_TIMELINE,      /* timeline=N, N > 0 (kernel/timeline.c) */
	SWITCH_IDLE_HALTPOLL, /* idle_config.policy == IDLE_HALTPOLL (kernel/idle_setup.c) */
	SWITCH_IDLE_POLL,     /* idle_config.policy == IDLE_POLL */
	SWITCH_GOV_TABLE,     /* idle_config.gov is not the default governor */
	SWITCH_POLLFLAG_OFF,  /* !idle_config.pollflag */
	SWITCH_STEAL_GATE,    /* idle_config.steal_threshold != 0 */
};

/* True once `s` is on (a jump); before, a NOP that falls through to false. */
static inline __attribute__((always_inline)) bool boot_switch_on(enum boot_switch s)
{
	arch_static_branch(s, on);
	return false;
	// cppcheck-suppress unusedLabel ; the asm goto above jumps here once patched
on:
	return true;
}

/* The boot CPU, before any other CPU starts and before any of the sites can run. */
static inline void boot_switch_set(enum boot_switch s, bool on)
{
	if (on)
		arch_static_branches_enable(s);
}

#endif
