#ifndef IDLELAB_KERNEL_TRAP_REPORT_H
#define IDLELAB_KERNEL_TRAP_REPORT_H

/* Once, on the BSP, before interrupts or faults can matter: registers the trap hooks. */
void trap_report_init(void);

#endif
