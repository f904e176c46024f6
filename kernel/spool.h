/*
 * The record spool: a workload's records written to guest memory instead of the console, for
 * a host that reads guest RAM (record_spool=1; the bench harness shares the guest's RAM with
 * itself, host/spool.py). The console then carries one `@idlelab spool at= bytes=` line per
 * batch, and the host puts the batch's lines back where that line stands. Under the nested
 * host every console character is a VM exit of ~0.1-0.2 ms: a window's ~1.4 KB of records
 * cost more than the window's gap; in memory they cost nothing the host has to emulate.
 *
 * These functions keep no lock: printk.c calls them under the console lock.
 */
#ifndef IDLELAB_KERNEL_SPOOL_H
#define IDLELAB_KERNEL_SPOOL_H

#include <stdbool.h>
#include <stddef.h>

/* Room for a batch: a window's records are ~1.4 KB, a timeline=4096 dump ~50 KB a CPU. A
 * batch that outgrows it is cut there and the rest goes to the console: nothing is lost. */
#define SPOOL_BYTES (1024 * 1024)
/* The longest `@idlelab spool` line spool_close() formats. */
#define SPOOL_LINE_MAX 64

/* A batch starts: lines spool_put() takes from now on go to memory. */
void spool_open(void);
bool spool_active(void);
/* Appends a line (with its '\n'); false if it does not fit, and the batch is then full:
 * the caller closes it and prints the line, and the rest of the batch, on the console. */
bool spool_put(const char *line, size_t n);
/* Ends the batch: its pointer line into `line` (SPOOL_LINE_MAX), its length; 0 when the
 * batch holds nothing (no line to print). */
size_t spool_close(char *line);
/* The host has read every batch so far: the next starts at the buffer's beginning. */
void spool_rewind(void);

#endif
