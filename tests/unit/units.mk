# One block per host unit test; see tests/host.mk.
# The knob parser and printers (kernel/knobs/), which most tests and tools link.
KNOB_SRCS := $(wildcard kernel/knobs/*.c)
# The governors, headers (kernel/policy/haltpoll.h, predict.h), and their tables.
GOVERNOR_SRCS := kernel/policy/governors.c $(KNOB_SRCS)
UNIT_TESTS += haltpoll
UNIT_SRCS_haltpoll := $(GOVERNOR_SRCS) tests/unit/test_haltpoll.c
UNIT_TESTS += timerqueue
UNIT_SRCS_timerqueue := lib/timerqueue.c tests/unit/test_timerqueue.c
UNIT_TESTS += histogram
UNIT_SRCS_histogram := lib/histogram.c tests/unit/test_histogram.c
UNIT_TESTS += knobs
# test_knobs.c #includes kernel/knobs/*.c under a widened knob table, so they are
# prerequisites but not separate sources.
UNIT_SRCS_knobs := tests/unit/test_knobs.c
build/host/test_knobs: $(KNOB_SRCS)
UNIT_TESTS += runqueue
UNIT_SRCS_runqueue := lib/runqueue.c tests/unit/test_runqueue.c
UNIT_TESTS += idle_policy
UNIT_SRCS_idle_policy := kernel/policy/idle_policy.c $(KNOB_SRCS) tests/unit/test_idle_policy.c
UNIT_TESTS += format
# test_format.c #includes lib/format.c under other names, to compare it with glibc's printf.
UNIT_SRCS_format := tests/unit/test_format.c
build/host/test_format: lib/format.c
# idlelab-sim's tests (tools/sim/sim.mk lists its sources)
UNIT_TESTS += sim_hostpoll
UNIT_SRCS_sim_hostpoll := tools/sim/host_poll.c tests/unit/test_sim_hostpoll.c
UNIT_TESTS += sim
UNIT_SRCS_sim := tools/sim/args.c tools/sim/costs.c tools/sim/engine.c tools/sim/events.c \
                 tools/sim/host_poll.c tools/sim/report.c tools/sim/workloads.c \
                 kernel/policy/idle_policy.c $(GOVERNOR_SRCS) lib/histogram.c \
                 kernel/workloads/sleep_draw.c tests/unit/test_sim.c
UNIT_TESTS += governors
UNIT_SRCS_governors := $(GOVERNOR_SRCS) tests/unit/test_governors.c
UNIT_TESTS += steal_gate
UNIT_SRCS_steal_gate := kernel/policy/steal_gate.c tests/unit/test_steal_gate.c
UNIT_TESTS += tsc_warp
UNIT_SRCS_tsc_warp := lib/tsc_warp.c tests/unit/test_tsc_warp.c
UNIT_TESTS += tsc_delta
UNIT_SRCS_tsc_delta := lib/tsc_delta.c lib/histogram.c tests/unit/test_tsc_delta.c
UNIT_TESTS += wake_phases
UNIT_SRCS_wake_phases := tests/unit/test_wake_phases.c
UNIT_TESTS += idle_entry
UNIT_SRCS_idle_entry := $(GOVERNOR_SRCS) tests/unit/test_idle_entry.c
# The Linux guest's program (tools/linuxguest/): its knob picking, sysfs/procfs parsing, the
# host's acknowledgement line and the settings it may switch between windows.
UNIT_TESTS += linuxguest
UNIT_SRCS_linuxguest := tools/linuxguest/knobpick.c tools/linuxguest/cpuidle.c \
	tools/linuxguest/out.c tools/linuxguest/switchable.c $(KNOB_SRCS) \
	tests/unit/test_linuxguest.c
UNIT_TESTS += window_rule
UNIT_SRCS_window_rule := tests/unit/test_window_rule.c
# tools/replay's line reader (tools/kvmreplay/).
UNIT_TESTS += replay_parse
UNIT_SRCS_replay_parse := tools/kvmreplay/trace_read.c tests/unit/test_replay_parse.c
build/host/test_replay_parse: HOST_LDLIBS += -lz
# The record spool's buffer (kernel/spool.c): batches, their pointers, the full buffer.
UNIT_TESTS += spool
UNIT_SRCS_spool := kernel/spool.c tests/unit/test_spool.c
