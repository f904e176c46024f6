# idlelab-sim (tools/sim/): the simulator, built by the top-level `make` (it includes this
# file). It compiles the guest's pure policy code (kernel/policy/) as the host unit tests do,
# and prints its cpu records from the kernel's table of their fields (kernel/cpu_record.h).
SIM_CC     ?= cc
SIM_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -DIDLELAB_HOST -I. \
              -DSIM_SRCDIR='"$(CURDIR)"'
# The guest's own code the simulator runs, and the simulator's files.
SIM_GUEST_SRCS := kernel/policy/governors.c kernel/policy/idle_policy.c $(wildcard kernel/knobs/*.c) \
                  lib/histogram.c kernel/workloads/sleep_draw.c
SIM_SRCS := $(filter-out tools/sim/main.c,$(wildcard tools/sim/*.c)) $(SIM_GUEST_SRCS)

build/idlelab-sim: tools/sim/main.c $(SIM_SRCS) $(wildcard tools/sim/*.h kernel/policy/*.h kernel/knobs/*.h lib/*.h) \
                    kernel/cpu_record.h tools/sim/sim.mk
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(SIM_CC) $(SIM_CFLAGS) -o $@ tools/sim/main.c $(SIM_SRCS) -lm
