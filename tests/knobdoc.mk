# tools/knobdoc: the README knob table, generated from kernel/knobs/knob_table.h. Included by the
# top-level Makefile; usable alone too (make -f tests/knobdoc.mk readme-knobs-check).
#   make readme-knobs        rewrite the table between <!-- knobs:begin/end --> in README.md
#   make readme-knobs-check  fail, with a diff, if README.md's table is stale
# The harness (tools/idlelab/workplan.py) and tools/mkiso run `knobdoc --check-cmdline` to refuse
# a command line the kernel would refuse, before anything boots.

KNOBDOC_CC     ?= cc
KNOBDOC_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -DIDLELAB_HOST -I.
KNOBDOC_README ?= README.md

KNOBDOC_KNOB_SRCS := $(wildcard kernel/knobs/*.c)
build/host/knobdoc: tools/knobdoc.c $(KNOBDOC_KNOB_SRCS) $(wildcard kernel/knobs/*.h) \
                    lib/string.h lib/format.h boot/bootinfo.h
	@mkdir -p $(@D)
	$(KNOBDOC_CC) $(KNOBDOC_CFLAGS) -o $@ tools/knobdoc.c $(KNOBDOC_KNOB_SRCS)

.PHONY: readme-knobs readme-knobs-check
readme-knobs: build/host/knobdoc
	build/host/knobdoc --update $(KNOBDOC_README)

readme-knobs-check: build/host/knobdoc
	build/host/knobdoc --check $(KNOBDOC_README)
