# build/idlelab-replay (tools/kvmreplay/), built by the top-level `make`: tools/replay's
# engine. It runs the simulator's transcription of kvm_vcpu_halt (tools/sim/host_poll.c) and,
# for --guest, the kernel's haltpoll governor (kernel/policy/).
REPLAY_SRCS := $(wildcard tools/kvmreplay/*.c) tools/sim/host_poll.c kernel/policy/governors.c \
               $(wildcard kernel/knobs/*.c)

build/idlelab-replay: $(REPLAY_SRCS) $(wildcard tools/kvmreplay/*.h tools/sim/host_poll.h \
                        kernel/policy/*.h kernel/knobs/*.h) \
                      tools/kvmreplay/replay.mk
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(SIM_CC) $(SIM_CFLAGS) -o $@ $(REPLAY_SRCS) -lz
