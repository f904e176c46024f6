/*
 * The measurement window's edges, as idlelab's kernel marks them (kernel/window.c). With
 * window_sync=1 every CPU is first brought into a busy loop (a pinned spinner thread per
 * CPU), so no vCPU can halt; the guest then snapshots its counters, prints the marker, waits
 * for the host's acknowledgement and only then lets the spinners go. The host reads KVM's
 * counters between the marker and its acknowledgement: both sides count the same window.
 * With windows= given the markers are numbered (window=K), and the acknowledgement of a `set`
 * or `close` marker may carry the next window's settings, applied while the spinners still
 * hold every CPU (docs/windows.md).
 */
#ifndef IDLELAB_LINUXGUEST_WINDOW_H
#define IDLELAB_LINUXGUEST_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/linuxguest/cpuidle.h"

/* Starts the spinners (parked until a marker) when window_sync=1; `numbered`: windows= was
 * given, so each marker says its window. False with a reason. */
bool window_init(unsigned ncpus, bool sync, bool numbered, uint64_t timeout_ns, char *why,
		 size_t whylen);

/* Takes a settings line for window `window` while every CPU is held; ends the run itself if it
 * cannot take it. */
typedef void window_apply_fn(const char *line, unsigned window);

/*
 * One edge: "open", "close" or "set" (before the first window's gap: no counters, s NULL).
 * Snapshots into *s; with window_sync=1 and apply, a settings line in the host's
 * acknowledgement is applied before any CPU goes on (at a close, for window + 1); a line where
 * apply is NULL ends the run. Ends it too on a timeout or an unreadable counter (SYNC_TIMEOUT
 * / TEST_FAILED, after an `@idlelab error` record). Returns the marker's time (now_ns()).
 */
uint64_t window_edge(const char *state, const char *what, unsigned window,
		     const struct idle_layout *l, struct idle_snap *s, window_apply_fn *apply);

#endif
