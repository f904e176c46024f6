#ifndef IDLELAB_KERNEL_PANIC_TEST_H
#define IDLELAB_KERNEL_PANIC_TEST_H

/* Raises the CPU exception the panic_test knob names; returns only for "none". */
void panic_test_run(int which);

#endif
