/*
 * Multiboot1 (QEMU -kernel) and multiboot2 (GRUB) boot information, reduced to what the
 * kernel needs. The multiboot1 command line begins with the kernel's file name, which we
 * drop so both protocols hand the knob parser the same text.
 */
#include <stddef.h>

#include "boot/bootinfo.h"
#include "lib/string.h"

#define MB1_BOOT_MAGIC	 0x2badb002
#define MB2_BOOT_MAGIC	 0x36d76289
#define MB1_FLAG_CMDLINE (1u << 2)
#define MB1_FLAG_MMAP	 (1u << 6)
#define MEM_AVAILABLE	 1

enum mb2_tag {
	MB2_TAG_END = 0,
	MB2_TAG_CMDLINE = 1,
	MB2_TAG_MMAP = 6,
	MB2_TAG_ACPI_OLD = 14,
	MB2_TAG_ACPI_NEW = 15,
};

struct boot_info boot_info;

/*
 * QEMU's multiboot1 loader passes "<kernel path> <arguments>", and a path may hold spaces,
 * so the first word is not always the path. The host tools (tools/idlelab/host/qemu.py) append
 * "-- " before the arguments: the last standalone "--" ends the loader's part, whatever the
 * path holds (no knob is spelled "--", so the arguments never contain one). Without it (a
 * hand-written QEMU command line) the first word is taken as the path.
 */
static const char *after_loader_path(const char *s)
{
	const char *args = 0;

	for (const char *p = s; *p; p++)
		if (p[0] == '-' && p[1] == '-' && (p == s || p[-1] == ' ') &&
		    (p[2] == ' ' || p[2] == '\0'))
			args = p + 2;
	if (args)
		return args;
	while (*s && *s != ' ')
		s++;
	return s;
}

static void set_cmdline(const char *s, bool has_loader_path)
{
	size_t n = 0;

	if (has_loader_path)
		s = after_loader_path(s);
	while (*s == ' ')
		s++;
	while (n < BOOT_CMDLINE_MAX - 1 && s[n]) {
		boot_info.cmdline[n] = s[n];
		n++;
	}
	boot_info.cmdline[n] = '\0';
	boot_info.cmdline_truncated = s[n] != '\0';
}

static void add_ram(uint64_t base, uint64_t len, uint32_t type)
{
	if (type != MEM_AVAILABLE || !len)
		return;
	boot_info.ram_bytes += len;
	if (base + len > boot_info.ram_top)
		boot_info.ram_top = base + len;
}

struct mb1_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
	uint32_t mods_count, mods_addr, syms[4], mmap_length, mmap_addr;
} __attribute__((packed));

struct mb1_mmap_entry {
	uint32_t size;
	uint64_t addr, len;
	uint32_t type;
} __attribute__((packed));

static void parse_mb1(const struct mb1_info *mb)
{
	boot_info.protocol = "multiboot1";
	if (mb->flags & MB1_FLAG_CMDLINE)
		set_cmdline((const char *)(uintptr_t)mb->cmdline, true);
	if (!(mb->flags & MB1_FLAG_MMAP))
		return;
	for (uint64_t p = mb->mmap_addr; p < (uint64_t)mb->mmap_addr + mb->mmap_length;) {
		const struct mb1_mmap_entry *e = (const void *)(uintptr_t)p;

		add_ram(e->addr, e->len, e->type);
		p += e->size + sizeof(e->size);
	}
}

struct mb2_tag_header {
	uint32_t type, size;
};

struct mb2_mmap {
	struct mb2_tag_header h;
	uint32_t entry_size;
	uint32_t entry_version; /* cppcheck-suppress unusedStructMember ; layout only */
};

struct mb2_mmap_entry {
	uint64_t addr, len;
	uint32_t type, reserved;
};

static void parse_mb2_mmap(const struct mb2_mmap *m)
{
	const uint8_t *p = (const uint8_t *)(m + 1), *end = (const uint8_t *)m + m->h.size;

	for (; p + sizeof(struct mb2_mmap_entry) <= end; p += m->entry_size) {
		const struct mb2_mmap_entry *e = (const void *)p;

		add_ram(e->addr, e->len, e->type);
	}
}

static void parse_mb2(uint64_t info)
{
	uint32_t total = *(const uint32_t *)(uintptr_t)info;

	boot_info.protocol = "multiboot2";
	for (uint64_t p = info + 8; p < info + total;) {
		const struct mb2_tag_header *t = (const void *)(uintptr_t)p;
		size_t rsdp_len = t->size - sizeof(*t);

		if (t->type == MB2_TAG_END)
			break;
		switch (t->type) {
		case MB2_TAG_CMDLINE:
			set_cmdline((const char *)(t + 1), false);
			break;
		case MB2_TAG_MMAP:
			parse_mb2_mmap((const struct mb2_mmap *)t);
			break;
		case MB2_TAG_ACPI_OLD:
		case MB2_TAG_ACPI_NEW:
			/* Prefer the ACPI 2.0 copy if the loader gives both. */
			if (boot_info.has_rsdp && t->type == MB2_TAG_ACPI_OLD)
				break;
			if (rsdp_len > sizeof(boot_info.rsdp))
				rsdp_len = sizeof(boot_info.rsdp);
			memcpy(boot_info.rsdp, t + 1, rsdp_len);
			boot_info.has_rsdp = true;
			break;
		}
		p += (t->size + 7) & ~7u;
	}
}

bool bootinfo_parse(uint32_t magic, uint64_t info)
{
	if (magic == MB1_BOOT_MAGIC)
		parse_mb1((const struct mb1_info *)(uintptr_t)info);
	else if (magic == MB2_BOOT_MAGIC)
		parse_mb2(info);
	else
		return false;
	return true;
}
