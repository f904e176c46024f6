/*
 * Settings that change between measured windows inside one boot (windows= given): the host
 * sends them with its acknowledgement of a window marker, and they are applied here with
 * every other CPU parked at the barrier (kernel/window.c).
 */
#ifndef IDLELAB_KERNEL_RECONFIGURE_H
#define IDLELAB_KERNEL_RECONFIGURE_H

#include <stdbool.h>

/*
 * Applies a settings line for window `window` (kernel/knobs/switchable.h says what it may
 * hold); a line the guest cannot take ends the boot with EXIT_BAD_KNOB and one error record.
 * Returns true: something was set. BSP only, every other CPU parked.
 */
bool reconfigure_apply(const char *line, unsigned window);
/* Once the CPUs run again: `@idlelab settings window=K ...` and the `@idlelab idle` record
 * of the settings window K runs with, if the host sent any for it since the last call. */
void reconfigure_print(unsigned window);

#endif
