/*
 * linuxguest-knobcheck: the Linux guest's own refusal of a settings line, on the host, so a
 * bench refuses before anything boots what the guest would refuse between two windows
 * (bench/workplan.check_arms), by the guest's one list (tools/linuxguest/switchable.c).
 *
 *   linuxguest-knobcheck --check-switchable TEXT
 *
 * Exit status: 0 the guest takes TEXT; 1 it would refuse it (its one-line error on stdout);
 * 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "tools/linuxguest/switchable.h"

int main(int argc, char **argv)
{
	struct knob_values vals;
	char err[KNOB_ERR_MAX];

	if (argc != 3 || strcmp(argv[1], "--check-switchable") != 0) {
		fprintf(stderr, "usage: %s --check-switchable TEXT\n", argv[0]);
		return 2;
	}
	if (linuxguest_parse_switch(argv[2], &vals, err, sizeof(err)) == KNOB_OK)
		return 0;
	printf("%s\n", err);
	return 1;
}
