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

/*
 * Makes the page at address 0 absent, so a null pointer dereference faults (and is dumped)
 * instead of reading the BIOS data area and going on with garbage. Called once the boot
 * code is done with real-mode memory (ACPI's EBDA pointer at 0x40e), before the other CPUs
 * start, so only this CPU can hold the old translation.
 */
void paging_unmap_null_page(void);

#endif
