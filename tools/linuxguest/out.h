/*
 * The Linux guest's console: the `@idlelab` lines on stdout (the serial console, as init
 * hands it over), the host's acknowledgement byte on stdin, and the end of a run through
 * QEMU's isa-debug-exit with the codes of kernel/exit_codes.h, as idlelab ends its runs.
 */
#ifndef IDLELAB_LINUXGUEST_OUT_H
#define IDLELAB_LINUXGUEST_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* libc's EXIT_SUCCESS (0) would shadow the guest's code of that name: the run's codes are
 * kernel/exit_codes.h's, on both guests. */
#include <stdlib.h>
#undef EXIT_SUCCESS

#include "kernel/exit_codes.h"

/* One line, written whole by one write(). */
void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends to buf (size bytes, holding n) and returns the new length, at most size - 1: a
 * record too long for its buffer is cut, never written past it. */
int text_append(char *buf, size_t size, int n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Puts the console in raw mode (one byte at a time, no echo): the host's acknowledgement may
 * be a single byte without a newline. False if stdin is not a terminal. */
bool console_raw(void);

/* Drops bytes that arrived before they were asked for. */
void console_flush_input(void);

/* The longest settings line the host may send with an acknowledgement, as idlelab's
 * (kernel/window.h). */
#define LG_SETTINGS_MAX 512

/*
 * The host's acknowledgement of a marker, read as idlelab's kernel reads it (kernel/window.c):
 * a line, usually empty, that may hold the next window's settings (name=value ...). It ends
 * at '\n'; a control byte before any text (the host's one-byte acknowledgement,
 * qemu.ACK_BYTE) ends it empty; '\r' is dropped. Pure: fed one byte at a time.
 */
struct ack_line {
	char text[LG_SETTINGS_MAX];
	size_t n;
};

enum ack_state {
	ACK_MORE,    /* more bytes to come */
	ACK_DONE,    /* text holds the line, NUL-terminated */
	ACK_TOO_LONG /* longer than LG_SETTINGS_MAX - 1 */
};

void ack_start(struct ack_line *a);
enum ack_state ack_feed(struct ack_line *a, char ch);

/* Waits up to timeout_ns for the host's acknowledgement into *a; NULL, or what went wrong. */
const char *console_wait_ack(uint64_t timeout_ns, struct ack_line *a);

/* Prints `@idlelab exit` and ends the run with this code (QEMU exits (code << 1) | 1). */
__attribute__((noreturn)) void out_exit(enum exit_code code);

/* CLOCK_MONOTONIC in ns: the guest's clock for the markers and the workloads. */
uint64_t now_ns(void);

#endif
