#ifndef IDLELAB_DRIVERS_DEBUG_EXIT_H
#define IDLELAB_DRIVERS_DEBUG_EXIT_H

#include <stdint.h>

/* Ends the VM through QEMU's isa-debug-exit device; never returns. */
__attribute__((noreturn)) void debug_exit(uint8_t code);

#endif
