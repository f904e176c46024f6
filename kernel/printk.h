#ifndef IDLELAB_KERNEL_PRINTK_H
#define IDLELAB_KERNEL_PRINTK_H

#include <stdint.h>

/*
 * Prints one line on the console (a newline is added if missing). A whole call is written
 * under one lock, so lines from different CPUs never interleave mid-line. Lines meant for
 * tools start with "@idlelab <record> key=value ...", documented in docs/records.md.
 */
void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * record_spool=1: the lines printed between console_spool_begin() and console_spool_end() go
 * to guest memory as one batch, and the console carries a line pointing at it (kernel/spool.h).
 * Without the knob both do nothing. console_spool_rewind(): the host has read every batch so
 * far (it acknowledged a marker printed after them).
 */
void console_spool_begin(void);
void console_spool_end(void);
void console_spool_rewind(void);

/* Ends the run: prints "@idlelab exit code=... name=..." and leaves through debug-exit. */
__attribute__((noreturn)) void kernel_exit(uint8_t code);

/* A kernel invariant broke: prints the reason and exits with EXIT_PANIC. */
__attribute__((noreturn)) void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
