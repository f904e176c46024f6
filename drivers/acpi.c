#include <stddef.h>

#include "drivers/acpi.h"
#include "lib/string.h"

struct rsdp {
	char signature[8];
	uint8_t checksum;
	char oem[6];
	uint8_t revision;
	uint32_t rsdt;
	uint32_t length;
	uint64_t xsdt;
	uint8_t ext_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

struct sdt_header {
	char signature[4];
	uint32_t length;
	uint8_t revision, checksum;
	char oem[6], oem_table[8];
	uint32_t oem_revision, creator, creator_revision;
} __attribute__((packed));

struct madt {
	struct sdt_header h;
	uint32_t lapic_addr, flags;
} __attribute__((packed));

#define MADT_LAPIC   0
#define MADT_X2APIC  9
#define MADT_ENABLED 1u

static bool checksum_ok(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (n--)
		sum += *b++;
	return sum == 0;
}

static const struct rsdp *rsdp_valid(const void *p)
{
	const struct rsdp *r = p;

	if (memcmp(r->signature, "RSD PTR ", 8) || !checksum_ok(r, 20))
		return NULL;
	if (r->revision >= 2 && !checksum_ok(r, sizeof(*r)))
		return NULL;
	return r;
}

static const struct rsdp *scan(uintptr_t start, uintptr_t end)
{
	for (uintptr_t p = start; p + sizeof(struct rsdp) <= end; p += 16) {
		const struct rsdp *r = rsdp_valid((const void *)p);

		if (r)
			return r;
	}
	return NULL;
}

/* The BIOS places the RSDP in the first KiB of the EBDA or in 0xE0000-0xFFFFF. */
static const struct rsdp *find_rsdp(void)
{
	uintptr_t ebda = (uintptr_t)(*(const volatile uint16_t *)0x40e) << 4;
	const struct rsdp *r = NULL;

	if (ebda >= 0x80000 && ebda < 0xa0000)
		r = scan(ebda, ebda + 1024);
	return r ? r : scan(0xe0000, 0x100000);
}

static const struct madt *find_madt(const struct rsdp *r, const char **via)
{
	bool use_xsdt = r->revision >= 2 && r->xsdt;
	const struct sdt_header *root =
	    (const void *)(uintptr_t)(use_xsdt ? r->xsdt : (uint64_t)r->rsdt);
	size_t width = use_xsdt ? 8 : 4, n;

	*via = use_xsdt ? "xsdt" : "rsdt";
	if (!root || !checksum_ok(root, root->length))
		return NULL;
	n = (root->length - sizeof(*root)) / width;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *slot = (const uint8_t *)(root + 1) + i * width;
		uint64_t addr = 0;
		const struct sdt_header *t;

		memcpy(&addr, slot, width); /* entries are unaligned in the XSDT */
		t = (const void *)(uintptr_t)addr;
		if (t && !memcmp(t->signature, "APIC", 4) && checksum_ok(t, t->length))
			return (const struct madt *)t;
	}
	return NULL;
}

static void add_cpu(uint32_t id, uint32_t flags, uint32_t *ids, unsigned max, struct acpi_cpus *out)
{
	if (!(flags & MADT_ENABLED))
		return;
	for (unsigned i = 0; i < out->count; i++)
		if (ids[i] == id)
			return; /* firmware may list a CPU as both LAPIC and x2APIC */
	if (out->count == max) {
		out->skipped++;
		return;
	}
	ids[out->count++] = id;
}

bool acpi_find_cpus(const uint8_t *rsdp, uint32_t *apic_ids, unsigned max, struct acpi_cpus *out,
		    const char **why)
{
	const struct rsdp *r = rsdp ? rsdp_valid(rsdp) : NULL;
	const struct madt *m;
	const uint8_t *p, *end;

	*out = (struct acpi_cpus){0};
	out->rsdp_from = r ? "bootloader" : "bios-scan";
	if (!r)
		r = find_rsdp();
	if (!r) {
		*why = "no ACPI RSDP found (bootloader tag or BIOS areas)";
		return false;
	}
	m = find_madt(r, &out->via);
	if (!m) {
		*why = "no valid MADT (APIC) table in the RSDT/XSDT";
		return false;
	}
	end = (const uint8_t *)m + m->h.length;
	for (p = (const uint8_t *)(m + 1); p + 2 <= end && p[1] >= 2; p += p[1]) {
		uint32_t flags, id;

		if (p[0] == MADT_LAPIC && p[1] >= 8) {
			memcpy(&flags, p + 4, 4);
			add_cpu(p[3], flags, apic_ids, max, out);
		} else if (p[0] == MADT_X2APIC && p[1] >= 16) {
			memcpy(&id, p + 4, 4);
			memcpy(&flags, p + 8, 4);
			add_cpu(id, flags, apic_ids, max, out);
		}
	}
	if (!out->count) {
		*why = "the MADT lists no enabled processor";
		return false;
	}
	return true;
}
