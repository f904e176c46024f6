/* Just enough ACPI to enumerate CPUs: RSDP -> RSDT or XSDT -> MADT. */
#ifndef IDLELAB_DRIVERS_ACPI_H
#define IDLELAB_DRIVERS_ACPI_H

#include <stdbool.h>
#include <stdint.h>

struct acpi_cpus {
	unsigned count;	       /* enabled processors found */
	unsigned skipped;      /* enabled processors beyond the caller's array */
	const char *via;       /* "rsdt" or "xsdt" */
	const char *rsdp_from; /* "bootloader" or "bios-scan" */
};

/*
 * Fills apic_ids[] with the APIC IDs of enabled processors, in MADT order. `rsdp` is the
 * copy a multiboot2 loader handed over, or NULL to search the BIOS areas. On failure
 * returns false and sets *why to a human-readable reason.
 */
bool acpi_find_cpus(const uint8_t *rsdp, uint32_t *apic_ids, unsigned max, struct acpi_cpus *out,
		    const char **why);

#endif
