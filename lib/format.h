/*
 * printf-style formatting into a buffer. The kernel implementation (lib/format.c) supports
 * %d %i %u %x %X %o %c %s %p %% with the l/ll/z length modifiers, '-', '0' flags and a field
 * width; that is the contract code shared with the host may rely on.
 */
#ifndef IDLELAB_LIB_FORMAT_H
#define IDLELAB_LIB_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

#ifdef IDLELAB_HOST
#include <stdio.h>
#else
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif

#endif
