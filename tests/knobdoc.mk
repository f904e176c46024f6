# tools/knobdoc: the knob tables of the documentation, generated from kernel/knobs/knob_table.h:
# every knob in docs/knobs.md, the ones people use most in README.md (their begin marker names
# them). Included by the top-level Makefile; usable alone too
# (make -f tests/knobdoc.mk knobs-doc-check).
#   make knobs-doc        rewrite the tables between <!-- knobs:begin/end --> in those files
#   make knobs-doc-check  fail, with a diff, if a table there differs from the knob table
# readme-knobs and readme-knobs-check are the old names of the two, kept for old habits.
# The harness (tools/idlelab/bench/workplan.py) and tools/mkiso run `knobdoc --check-cmdline` to refuse
# a command line the kernel would refuse, before anything boots.

KNOBDOC_CC     ?= cc
KNOBDOC_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -DIDLELAB_HOST -I.
KNOBDOC_FILES  ?= docs/knobs.md README.md

KNOBDOC_KNOB_SRCS := $(wildcard kernel/knobs/*.c)
build/host/knobdoc: tools/knobdoc.c $(KNOBDOC_KNOB_SRCS) $(wildcard kernel/knobs/*.h) \
                    lib/string.h lib/format.h boot/bootinfo.h
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(KNOBDOC_CC) $(KNOBDOC_CFLAGS) -o $@ tools/knobdoc.c $(KNOBDOC_KNOB_SRCS)

.PHONY: knobs-doc knobs-doc-check readme-knobs readme-knobs-check
knobs-doc: build/host/knobdoc
	@for f in $(KNOBDOC_FILES); do build/host/knobdoc --update $$f || exit $$?; done

# Every file is checked even if an earlier one is stale; the target fails if any was.
knobs-doc-check: build/host/knobdoc
	@fail=0; for f in $(KNOBDOC_FILES); do build/host/knobdoc --check $$f || fail=1; done; exit $$fail

readme-knobs: knobs-doc
readme-knobs-check: knobs-doc-check
