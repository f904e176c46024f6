# One block per host unit test; see tests/host.mk.
UNIT_TESTS += knobs
# test_knobs.c #includes kernel/knobs.c under a widened knob table, so knobs.c is a
# prerequisite but not a separate source.
UNIT_SRCS_knobs := tests/unit/test_knobs.c
build/host/test_knobs: kernel/knobs.c
