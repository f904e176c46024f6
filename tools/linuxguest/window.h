/*
 * The measurement window's edges, as idlelab's kernel marks them (kernel/window.c). With
 * window_sync=1 every CPU is first brought into a busy loop (a pinned spinner thread per
 * CPU), so no vCPU can halt; the guest then snapshots its counters, prints the marker, waits
 * for the host's acknowledgement byte and only then lets the spinners go. The host reads
 * KVM's counters between the marker and its acknowledgement: both sides count the same
 * window.
 */
#ifndef IDLELAB_LINUXGUEST_WINDOW_H
#define IDLELAB_LINUXGUEST_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/linuxguest/cpuidle.h"

/* Starts the spinners (parked until a marker) when window_sync=1. False with a reason. */
bool window_init(unsigned ncpus, bool sync, uint64_t timeout_ns, char *why, size_t whylen);

/* One edge: "open" or "close". Snapshots into *s; ends the run on a timeout or an unreadable
 * counter (SYNC_TIMEOUT / TEST_FAILED, after an `@idlelab error` record). Returns the
 * marker's time (now_ns()). */
uint64_t window_edge(const char *state, const char *what, const struct idle_layout *l,
		     struct idle_snap *s);

#endif
