# The documentation's generated parts and its links, checked by `make test` (docs-check):
#   make docs        regenerate every generated table (knobs, exit codes, records)
#   make docs-check  fail if a generated table differs from its source or a relative link in
#                    README.md or docs/ leads nowhere
# Included by the top-level Makefile after tests/knobdoc.mk (knobs-doc, knobs-doc-check).

EXITDOC_FILES ?= docs/exit-codes.md
RECORDSDOC_FILES ?= docs/records.md
DOCLINKS_PATHS ?= README.md docs

.PHONY: docs docs-check exit-codes-doc exit-codes-doc-check doc-links-check records-doc \
	records-doc-check
exit-codes-doc:
	@for f in $(EXITDOC_FILES); do $(PYTHON) tools/exitdoc --update $$f || exit $$?; done

exit-codes-doc-check:
	@fail=0; for f in $(EXITDOC_FILES); do $(PYTHON) tools/exitdoc --check $$f || fail=1; done; exit $$fail

# tools/recordsdoc: the cpu record's fields (kernel/cpu_record.h, through a program built from
# that header) and runs.csv's columns (RunRow's fields in tools/idlelab/derive/runrow.py).
CPURECORDDOC_CC ?= cc
build/host/cpurecorddoc: tools/cpurecorddoc.c kernel/cpu_record.h lib/format.h
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(CPURECORDDOC_CC) -std=gnu11 -g -O1 -Wall -Wextra -Werror \
		-DIDLELAB_HOST -I. -o $@ $<

records-doc: build/host/cpurecorddoc
	@for f in $(RECORDSDOC_FILES); do $(PYTHON) tools/recordsdoc --update $$f || exit $$?; done

records-doc-check: build/host/cpurecorddoc
	@fail=0; for f in $(RECORDSDOC_FILES); do $(PYTHON) tools/recordsdoc --check $$f || fail=1; done; exit $$fail

doc-links-check:
	$(call quiet,CHECK,links in $(DOCLINKS_PATHS))$(PYTHON) tools/doclinks $(DOCLINKS_PATHS)

docs: knobs-doc exit-codes-doc records-doc

# Every check runs even if an earlier one fails (-k in the sub-make); the target fails if any did.
docs-check:
	@$(MAKE) --no-print-directory -k knobs-doc-check exit-codes-doc-check records-doc-check \
		doc-links-check
