#ifndef IDLELAB_ARCH_PAGING_H
#define IDLELAB_ARCH_PAGING_H

#include <stdbool.h>
#include <stdint.h>

/* Largest RAM top the identity map can cover (one PDPT). */
#define PAGING_MAX_TOP (512ull << 30)

/*
 * boot/entry.asm identity-maps [0, 4 GiB); this extends the map up to `top` so all RAM the
 * loader reported is reachable. Returns false if `top` is beyond what we can map.
 */
bool paging_map_ram(uint64_t top, bool gbpages);

#endif
