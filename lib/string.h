/*
 * The few string and memory routines the kernel needs. On the host (unit tests, fuzzers)
 * the same names come from libc, so policy code that includes this header compiles
 * unchanged in both worlds.
 */
#ifndef IDLELAB_LIB_STRING_H
#define IDLELAB_LIB_STRING_H

#include <stddef.h>

#ifdef IDLELAB_HOST
#include <string.h>
#else
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
#endif

#endif
