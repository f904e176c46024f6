# Host-side pieces of the measurement harness. Included by the top-level Makefile; usable
# alone too (make -f tools/harness.mk harness-lib).
#   build/host/libhaltpoll_cap.so  LD_PRELOAD shim that sets KVM_CAP_HALT_POLL on QEMU's VM
#                                  (tools/haltpoll_cap.c; driven by
#                                  tools/idlelab/host/haltpollcap.py)
#   build/host/hog                 neighbour=hog:N: N threads that spin and count their loops
#                                  (tools/hog.c; driven by tools/idlelab/host/neighbour.py)

HARNESS_CC     ?= gcc
HARNESS_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -pthread

build/host/libhaltpoll_cap.so: tools/haltpoll_cap.c tools/harness.mk
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(HARNESS_CC) $(HARNESS_CFLAGS) -o $@ tools/haltpoll_cap.c -ldl

.PHONY: harness-lib
harness-lib: build/host/libhaltpoll_cap.so build/host/libinsncount.so build/host/hog

# The TCG plugin that counts guest instructions between probe marks (tools/insncount).
build/host/libinsncount.so: tools/insncount/insncount.c tools/insncount/qemu_plugin_api.h
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(HARNESS_CC) $(HARNESS_CFLAGS) -I. -o $@ tools/insncount/insncount.c

build/host/hog: tools/hog.c tools/harness.mk
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(HARNESS_CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -pthread \
		-o $@ tools/hog.c
