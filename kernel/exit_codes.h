/*
 * Every way a run can end, as the byte written to QEMU's isa-debug-exit port; QEMU then
 * exits with status (code << 1) | 1. The host decodes these in exactly one place
 * (tools/idlelab/host/qemu.py), which reads the list below: keep one X(...) per line and
 * never reuse a value. boot/entry.asm repeats BOOT_FAILED (it cannot include C).
 *
 * Code 0 is avoided on purpose: it would give status 1, which QEMU also uses for its own
 * errors. A triple fault with -no-reboot gives status 0, which the host treats as a crash.
 */
#ifndef IDLELAB_EXIT_CODES_H
#define IDLELAB_EXIT_CODES_H

#define EXIT_CODE_LIST(X)                                                                          \
	X(SUCCESS, 0x10, "the run did what was asked")                                             \
	X(TEST_FAILED, 0x11, "a self test or workload check failed")                               \
	X(BAD_KNOB, 0x12, "the command line had an unknown or invalid knob")                       \
	X(EXCEPTION, 0x13, "an unexpected CPU exception (register dump printed)")                  \
	X(WATCHDOG, 0x14, "a watchdog saw no progress within its bound")                           \
	X(BOOT_FAILED, 0x15, "a needed platform feature is missing, or a CPU did not start")       \
	X(PANIC, 0x16, "the kernel found its own state inconsistent")                              \
	X(SYNC_TIMEOUT, 0x17, "window_sync: the host did not acknowledge a window marker in time")

enum exit_code {
#define X(name, value, help) EXIT_##name = value,
	EXIT_CODE_LIST(X)
#undef X
};

#endif
