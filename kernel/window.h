/*
 * Measurement-window markers. The guest prints `@idlelab window state=open|close t_ns=...`
 * at the edges of what it measures; the host reads KVM's counters when it sees each line.
 * With window_hold=, CPU 0 then busy-waits (no HLT, so no halt exits of its own) long
 * enough for that read to land while the guest is between the two snapshots' edges.
 */
#ifndef IDLELAB_KERNEL_WINDOW_H
#define IDLELAB_KERNEL_WINDOW_H

#include "kernel/stats.h"

/* Prints the open marker, holds, then snapshots the guest counters into *s. */
void window_open(struct stats_snapshot *s, const char *what);
/* Snapshots into *s, prints the close marker, then holds. */
void window_close(struct stats_snapshot *s, const char *what);

#endif
