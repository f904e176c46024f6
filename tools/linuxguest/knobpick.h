/*
 * The Linux guest's knobs: the few of idlelab's knobs its program honours, picked out of
 * Linux's command line (where they sit beside Linux's own parameters) and parsed by the
 * kernel's own parser (kernel/knobs), so a knob means and accepts the same in both guests.
 * Pure code: the host unit tests run it (tests/unit/test_linuxguest.c).
 */
#ifndef IDLELAB_LINUXGUEST_KNOBPICK_H
#define IDLELAB_LINUXGUEST_KNOBPICK_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/knobs/knobs.h"

/* The knobs the Linux guest's program reads, in the order its config record prints them. */
extern const enum knob_id linuxguest_knobs[];
extern const size_t linuxguest_nknobs;

/* True if id is one of linuxguest_knobs. */
bool linuxguest_honours(enum knob_id id);

/*
 * Copies into out (NUL-terminated, size outlen) the tokens of cmdline whose name (the text
 * before '=') is a knob the program honours, space-separated, in their order; every other
 * token is Linux's and left out. Returns the length written, or -1 if out is too small.
 */
int linuxguest_pick(const char *cmdline, char *out, size_t outlen);

/*
 * KNOB_E_UNKNOWN, with err naming it, if cmdline holds an idlelab knob that is neither one the
 * program honours nor a Linux parameter of the same name and meaning (idle=,
 * cpuidle_haltpoll.force=, cpuidle.governor=, haltpoll.guest_halt_poll_*=): such a knob
 * would otherwise be ignored silently. KNOB_OK if there is none.
 */
int linuxguest_foreign(const char *cmdline, char *err, size_t errlen);

/*
 * Picks and parses (after linuxguest_foreign): fills *vals (defaults for knobs not given) and returns KNOB_OK, or a
 * KNOB_E_* with err holding the parser's one line; a workload the Linux guest does not run
 * is refused the same way (KNOB_E_VALUE).
 */
int linuxguest_parse(const char *cmdline, struct knob_values *vals, char *err, size_t errlen);

/*
 * What Linux's command line does to its idle loop before any cpuidle driver: "halt", "poll"
 * (idle=halt|poll|nomwait, the last one given), "cpuidle.off" (cpuidle.off=1, when no idle=
 * is given), or "none". Written into out (size outlen).
 */
void linuxguest_idle_override(const char *cmdline, char *out, size_t outlen);

#endif
