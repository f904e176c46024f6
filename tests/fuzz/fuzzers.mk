# One block per libFuzzer target; see tests/host.mk.
FUZZERS += knobs
# fuzz_knobs.c #includes kernel/knobs/*.c under a widened knob table, so they are
# prerequisite but not a separate source.
FUZZ_SRCS_knobs := tests/fuzz/fuzz_knobs.c
build/host/fuzz_knobs: $(wildcard kernel/knobs/*.c)
