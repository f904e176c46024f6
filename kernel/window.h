/*
 * Measurement-window markers: `@idlelab window state=open|close|set what= t_ns= sync=
 * [window=K]` at the edges of what the guest measures; the host reads KVM's counters when it
 * sees each line and, at close and set, may send the next window's settings.
 * kernel/window.c says how window_sync=1 makes the two sides' counts meet exactly.
 */
#ifndef IDLELAB_KERNEL_WINDOW_H
#define IDLELAB_KERNEL_WINDOW_H

#include <stdbool.h>

#include "kernel/stats.h"

/* The longest settings line the host may send with an acknowledgement. */
#define WINDOW_SETTINGS_MAX 512

/* The window's first edge: *s gets the counters at the edge. `window` counts from 1 and is
 * printed when windows= is given. */
void window_open(struct stats_snapshot *s, const char *what, unsigned window);
/*
 * The window's last edge: *s gets the counters at the edge. With apply, the host's
 * acknowledgement may carry the next window's settings; apply(line, window) runs with every
 * CPU parked and returns whether anything changed. apply must refuse what it cannot take.
 */
void window_close(struct stats_snapshot *s, const char *what, unsigned window,
		  bool (*apply)(const char *line, unsigned window));
/* A `state=set` marker before the first window's gap, whose acknowledgement carries that
 * window's settings (no counters). */
void window_settings(const char *what, unsigned window,
		     bool (*apply)(const char *line, unsigned window));

#endif
