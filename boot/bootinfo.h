/* What the kernel keeps from the boot loader, copied out before low memory is reused. */
#ifndef IDLELAB_BOOT_BOOTINFO_H
#define IDLELAB_BOOT_BOOTINFO_H

#include <stdbool.h>
#include <stdint.h>

#define BOOT_CMDLINE_MAX 2048

struct boot_info {
	const char *protocol; /* "multiboot1" or "multiboot2" */
	char cmdline[BOOT_CMDLINE_MAX];
	bool cmdline_truncated;
	uint64_t ram_top; /* end of the highest usable RAM range */
	uint64_t ram_bytes;
	bool has_rsdp; /* the loader handed us a copy of the ACPI RSDP */
	uint8_t rsdp[36];
};

extern struct boot_info boot_info;

/* Returns false if magic matches neither protocol. */
bool bootinfo_parse(uint32_t magic, uint64_t info);

#endif
