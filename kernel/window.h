/*
 * Measurement-window markers: `@idlelab window state=open|close what= t_ns= sync=` at the
 * edges of what the guest measures; the host reads KVM's counters when it sees each line.
 * kernel/window.c says how window_sync=1 makes the two sides' counts meet exactly.
 */
#ifndef IDLELAB_KERNEL_WINDOW_H
#define IDLELAB_KERNEL_WINDOW_H

#include "kernel/stats.h"

/* The window's first edge: *s gets the counters at the edge. */
void window_open(struct stats_snapshot *s, const char *what);
/* The window's last edge: *s gets the counters at the edge. */
void window_close(struct stats_snapshot *s, const char *what);

#endif
