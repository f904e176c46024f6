/*
 * cpurecorddoc: the `@idlelab cpu` record's fields as kernel/cpu_record.h defines them, built
 * for the host from that header, so the documentation and the harness's tests read the
 * table the kernel and the simulator print from, through the C compiler, not a copy.
 *
 *   cpurecorddoc           the markdown table of the fields (tools/recordsdoc puts it in
 *                          docs/records.md)
 *   cpurecorddoc --names   the field names, one a line, in the record's order
 *
 * Exit status: 0, or 2 for a usage error.
 */
#include <stdio.h>
#include <string.h>

#include "kernel/cpu_record.h"

struct field {
	const char *name, *unit, *meaning;
};

static const struct field fields[CPU_REC__COUNT] = {
#define FIELD(name, unit, meaning) {#name, unit, meaning},
    CPU_RECORD_FIELDS(FIELD)
#undef FIELD
};

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--names") == 0) {
		for (unsigned i = 0; i < CPU_REC__COUNT; i++)
			printf("%s\n", fields[i].name);
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: cpurecorddoc [--names]\n");
		return 2;
	}
	printf("| field | unit | meaning |\n| --- | --- | --- |\n");
	for (unsigned i = 0; i < CPU_REC__COUNT; i++)
		printf("| `%s` | %s | %s |\n", fields[i].name,
		       fields[i].unit[0] ? fields[i].unit : "—", fields[i].meaning);
	return 0;
}
