/*
 * Settings that change between the measured windows of one boot (windows= given): the host
 * sends them with its acknowledgement of a marker (window.c), and they are applied here while
 * the spinners hold every CPU, by writing the haltpoll governor's parameters in sysfs, as
 * idlelab's kernel applies its own (kernel/reconfigure.c). Linux's governor reads them at the
 * next idle entry and keeps each CPU's current window, as a sysfs write by hand would.
 */
#ifndef IDLELAB_LINUXGUEST_RECONFIGURE_H
#define IDLELAB_LINUXGUEST_RECONFIGURE_H

#include <stdbool.h>

/* A window_apply_fn: takes the line for window `window`, or ends the run with BAD_KNOB
 * (`@idlelab error what=settings`) for a knob that does not switch here or a kernel without
 * the governor, TEST_FAILED for a parameter that cannot be written. */
void reconfigure_apply(const char *line, unsigned window);

/* Once the CPUs run again: `@idlelab settings window=K ...` if the host sent settings for
 * window K since the last call; true if it printed one (the caller then prints the idle
 * record the window runs with). */
bool reconfigure_print(unsigned window);

#endif
