#include "kernel/percpu.h"

struct cpu cpus[MAX_CPUS];
unsigned int ncpus = 1;

void percpu_init(unsigned int id)
{
	struct cpu *c = &cpus[id];

	c->self = c;
	c->id = id;
	arch_set_this_cpu(c);
}
