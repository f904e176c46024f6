# The Linux guest (tools/linuxguest/; `--guest linux`, `guest=linux` in a matrix): Debian's
# kernel, the nested host's copy (build/nested/image/vmlinuz), with an initramfs of
# busybox-static and the guest's static program. Included by the top-level Makefile.
#   build/linuxguest/idlelab-linux  the program (static: the initramfs has no libc)
#   build/linuxguest/initrd.img     the initramfs
#   build/host/linuxguest-knobcheck the guest's refusal of a settings line, on the host (the
#                                   bench's check before a boot: bench/workplan.py)

LINUXGUEST_CC     ?= gcc
LINUXGUEST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -DIDLELAB_HOST -I. -pthread
LINUXGUEST_KNOBCHECK_SRCS := tools/linuxguest/knobcheck.c tools/linuxguest/switchable.c \
	$(wildcard kernel/knobs/*.c)
LINUXGUEST_SRCS   := $(filter-out tools/linuxguest/knobcheck.c,$(wildcard tools/linuxguest/*.c)) \
	lib/histogram.c $(wildcard kernel/knobs/*.c)

build/linuxguest/idlelab-linux: $(LINUXGUEST_SRCS) $(wildcard tools/linuxguest/*.h) \
		$(wildcard kernel/knobs/*.h) lib/histogram.h kernel/exit_codes.h tools/linuxguest/linuxguest.mk
	@mkdir -p $(@D)
	$(call quiet,CC,$@)$(LINUXGUEST_CC) $(LINUXGUEST_CFLAGS) -static -o $@ $(LINUXGUEST_SRCS)

build/host/linuxguest-knobcheck: $(LINUXGUEST_KNOBCHECK_SRCS) tools/linuxguest/switchable.h \
		$(wildcard kernel/knobs/*.h) tools/linuxguest/linuxguest.mk
	@mkdir -p $(@D)
	$(call quiet,HOSTCC,$@)$(LINUXGUEST_CC) $(LINUXGUEST_CFLAGS) -o $@ $(LINUXGUEST_KNOBCHECK_SRCS)

build/linuxguest/initrd.img: build/linuxguest/idlelab-linux tools/linuxguest/init \
		tools/linuxguest/mkinitramfs
	@tools/linuxguest/mkinitramfs $< $@

.PHONY: linux-guest
linux-guest: deps build/linuxguest/initrd.img nested-host

# The Linux guest's own kernel (`--linux-kernel haltpoll-gov`, `linux_kernel=haltpoll-gov` in a
# matrix): Debian's linux-source with the haltpoll governor, which Debian's kernel lacks
# (tools/linuxguest/kernel/). Built only by this target, never by `make test`: 8 minutes
# on two busy cores (2026-12-02). Rebuilt when the fragment, the package version or the
# scripts change.
#   build/linuxguest/bzImage-haltpoll-gov  the kernel
#   build/linuxguest/kernel/               its source and object trees and logs
LINUXGUEST_KERNEL_INPUTS := $(addprefix tools/linuxguest/kernel/,build checkconfig exit-codes \
	haltpoll-gov.config source-package)

build/linuxguest/bzImage-haltpoll-gov: $(LINUXGUEST_KERNEL_INPUTS)
	@mkdir -p $(@D)
	@tools/linuxguest/kernel/build $@

.PHONY: linux-guest-kernel
linux-guest-kernel: deps build/linuxguest/initrd.img build/linuxguest/bzImage-haltpoll-gov
