#ifndef IDLELAB_DRIVERS_SERIAL_H
#define IDLELAB_DRIVERS_SERIAL_H

#include <stddef.h>

void serial_init(void);
/* Not locked: printk serialises callers. */
void serial_write(const char *s, size_t n);
/* The next received byte, or -1 if none has arrived (the host side of COM1 is QEMU's stdin). */
int serial_try_read(void);

#endif
