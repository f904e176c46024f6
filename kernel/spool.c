/*
 * The spool's buffer, append-only between rewinds.
 *
 * Invariant: bytes [0, used) hold batches whose pointer lines are printed or will be; a
 * batch is never overwritten before the host read it. The host reads a batch when its
 * pointer line reaches it, before it handles any later console line (host/qemu.py), and
 * acknowledges a window marker only after handling the marker's line; so once a marker is
 * acknowledged every batch printed before it has been read, and window.c rewinds there.
 * Without acknowledgements (window_sync=0) nothing rewinds and a full buffer sends the rest
 * to the console.
 */
#include <stdint.h>

#include "kernel/spool.h"
#include "lib/format.h"

static char spool_buf[SPOOL_BYTES] __attribute__((aligned(4096)));
static size_t used;  /* end of the last byte written */
static size_t start; /* the open batch's first byte */
static bool active, full;

void spool_open(void)
{
	if (full)
		return;
	start = used;
	active = true;
}

bool spool_active(void)
{
	return active;
}

bool spool_put(const char *line, size_t n)
{
	if (!active)
		return false;
	if (n > SPOOL_BYTES - used) {
		full = true;
		return false;
	}
	for (size_t i = 0; i < n; i++)
		spool_buf[used + i] = line[i];
	used += n;
	return true;
}

size_t spool_close(char *line)
{
	int n;

	if (!active)
		return 0;
	active = false;
	if (used == start)
		return 0;
	/* Identity-mapped (linker.ld): the address is the guest-physical one the host reads. */
	n = snprintf(line, SPOOL_LINE_MAX, "@idlelab spool at=0x%lx bytes=%lu\n",
		     (uint64_t)(uintptr_t)(spool_buf + start), (uint64_t)(used - start));
	return (size_t)n;
}

void spool_rewind(void)
{
	if (!active)
		used = start = 0;
	full = false;
}
