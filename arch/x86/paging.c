#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"

#define PTE_PRESENT 0x1ull
#define PTE_WRITE   0x2ull
#define PTE_LARGE   0x80ull
#define GIB	    (1ull << 30)
#define FOUR_GIB    (4 * GIB)
/* Without 1 GiB pages each GiB needs a page directory: enough for 64 GiB of RAM. */
#define SPARE_PDS 60

extern uint64_t boot_pml4[512];
extern uint64_t boot_pd[4 * 512];

static uint64_t spare_pd[SPARE_PDS][512] __attribute__((aligned(4096)));

bool paging_map_ram(uint64_t top, bool gbpages)
{
	uint64_t *pdpt = (uint64_t *)(uintptr_t)(boot_pml4[0] & ~0xfffull);
	unsigned used = 0;

	if (top > PAGING_MAX_TOP)
		return false;
	for (uint64_t gib = FOUR_GIB; gib < top; gib += GIB) {
		unsigned slot = (unsigned)(gib / GIB);

		if (gbpages) {
			pdpt[slot] = gib | PTE_PRESENT | PTE_WRITE | PTE_LARGE;
			continue;
		}
		if (used == SPARE_PDS)
			return false;
		for (unsigned i = 0; i < 512; i++)
			spare_pd[used][i] =
			    (gib + ((uint64_t)i << 21)) | PTE_PRESENT | PTE_WRITE | PTE_LARGE;
		pdpt[slot] = (uint64_t)(uintptr_t)spare_pd[used] | PTE_PRESENT | PTE_WRITE;
		used++;
	}
	/* Only not-present entries were filled in, and those are never cached: no flush. */
	return true;
}

/* The first 2 MiB in 4 KiB pages, the first of them absent. */
static uint64_t low_pt[512] __attribute__((aligned(4096)));

void paging_unmap_null_page(void)
{
	for (unsigned i = 1; i < 512; i++)
		low_pt[i] = ((uint64_t)i << 12) | PTE_PRESENT | PTE_WRITE;
	low_pt[0] = 0;
	boot_pd[0] = (uint64_t)(uintptr_t)low_pt | PTE_PRESENT | PTE_WRITE;
	/* the old 2 MiB entry may be cached anywhere in the range: flush it all */
	write_cr3(read_cr3());
}
