#ifndef IDLELAB_KERNEL_PRINTK_H
#define IDLELAB_KERNEL_PRINTK_H

#include <stdint.h>

/*
 * Prints one line on the console (a newline is added if missing). A whole call is written
 * under one lock, so lines from different CPUs never interleave mid-line. Lines meant for
 * tools start with "@idlelab <record> key=value ...", documented in docs/records.md.
 */
void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ends the run: prints "@idlelab exit code=... name=..." and leaves through debug-exit. */
__attribute__((noreturn)) void kernel_exit(uint8_t code);

/* A kernel invariant broke: prints the reason and exits with EXIT_PANIC. */
__attribute__((noreturn)) void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
