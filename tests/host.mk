# Host-side builds of the kernel's pure policy code: cmocka unit tests (ASan + UBSan) and
# libFuzzer targets. Each test registers itself in tests/unit/units.mk:
#   UNIT_TESTS += NAME
#   UNIT_SRCS_NAME := kernel/foo.c tests/unit/test_NAME.c
# and each fuzzer in tests/fuzz/fuzzers.mk the same way (FUZZERS, FUZZ_SRCS_NAME).

HOST_CC      ?= cc
HOST_CFLAGS  := -std=gnu11 -g -O1 -Wall -Wextra -Werror -DIDLELAB_HOST -I. \
                -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
HOST_LDLIBS  := -lcmocka -lm
FUZZ_CC      ?= clang
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -Wall -Wextra -Werror -DIDLELAB_HOST -I. \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 10

UNIT_TESTS :=
FUZZERS :=
include tests/unit/units.mk
include tests/fuzz/fuzzers.mk

UNIT_BINS := $(addprefix build/host/test_,$(UNIT_TESTS))
FUZZ_BINS := $(addprefix build/host/fuzz_,$(FUZZERS))

.SECONDEXPANSION:
build/host/test_%: $$(UNIT_SRCS_$$*) $$(wildcard kernel/*.h kernel/*/*.h lib/*.h tests/unit/*.h tools/*/*.h) | build/host
	$(call quiet,HOSTCC,$@)$(HOST_CC) $(HOST_CFLAGS) -o $@ $(UNIT_SRCS_$*) $(HOST_LDLIBS)

build/host/fuzz_%: $$(FUZZ_SRCS_$$*) $$(wildcard kernel/*.h kernel/*/*.h lib/*.h) | build/host
	$(call quiet,HOSTCC,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRCS_$*)

build/host:
	@mkdir -p $@

.PHONY: unit fuzz
# Every unit binary runs even if an earlier one fails; the target fails if any did.
unit: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do echo "== $$t"; ASAN_OPTIONS=detect_leaks=1 $$t || fail=1; done; exit $$fail

# Bounded fuzzing: each target runs FUZZ_SECONDS from its seed corpus; any crash fails.
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZERS); do \
	  mkdir -p build/host/corpus_$$f; \
	  echo "== fuzz_$$f for $(FUZZ_SECONDS)s"; \
	  build/host/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=build/host/crash_$$f- build/host/corpus_$$f tests/fuzz/corpus_$$f \
	    2>build/host/fuzz_$$f.log || { tail -40 build/host/fuzz_$$f.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units' build/host/fuzz_$$f.log; \
	done
