# One block per host unit test; see tests/host.mk.
UNIT_TESTS += haltpoll
UNIT_SRCS_haltpoll := kernel/haltpoll.c tests/unit/test_haltpoll.c
UNIT_TESTS += timerqueue
UNIT_SRCS_timerqueue := kernel/timerqueue.c tests/unit/test_timerqueue.c
UNIT_TESTS += histogram
UNIT_SRCS_histogram := kernel/histogram.c tests/unit/test_histogram.c
UNIT_TESTS += knobs
# test_knobs.c #includes kernel/knobs.c under a widened knob table, so knobs.c is a
# prerequisite but not a separate source.
UNIT_SRCS_knobs := tests/unit/test_knobs.c
build/host/test_knobs: kernel/knobs.c
UNIT_TESTS += runqueue
UNIT_SRCS_runqueue := kernel/runqueue.c tests/unit/test_runqueue.c
UNIT_TESTS += idle_policy
UNIT_SRCS_idle_policy := kernel/idle_policy.c kernel/knobs.c tests/unit/test_idle_policy.c
