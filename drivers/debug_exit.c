#include "arch/x86/cpu.h"
#include "drivers/debug_exit.h"

#define DEBUG_EXIT_PORT 0xf4

void debug_exit(uint8_t code)
{
	outl(DEBUG_EXIT_PORT, code);
	/* Without the device (a hand-started QEMU, real hardware) the port write is ignored:
	 * stop here rather than run on after an exit was requested. */
	halt_forever();
}
