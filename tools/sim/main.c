/*
 * idlelab-sim: predicts what idling costs (VM exits, KVM's halt polls, host CPU) for a guest
 * configuration, by running the guest's own governor code against a model of KVM's halt
 * polling and a cost table. docs/simulator.md shows how to use it.
 */
#include <string.h>

#include "tools/sim/sim.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: idlelab-sim [knob=value ...] [smp=N] [halt_poll_ns=T] "
	    "[halt_poll_ns_grow=N]\n"
	    "       [halt_poll_ns_grow_start=T] [halt_poll_ns_shrink=N] "
	    "[kvm_cap_halt_poll=none|T]\n"
	    "       [costs=here|here:RESULTS|hardware|FILE] [trace=0|1|2] [halt_poll_fixed=0|1]\n"
	    "Guest knobs are the kernel's (idle=, workload=, duration=, ...; "
	    "docs/knobs.md).\n");
}

int main(int argc, char **argv)
{
	static struct sim_config cfg;
	int rc;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	rc = sim_parse_args(argc, argv, &cfg, stderr);
	if (rc)
		return rc;
	return sim_run(&cfg, stdout);
}
