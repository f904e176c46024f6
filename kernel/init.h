#ifndef IDLELAB_KERNEL_INIT_H
#define IDLELAB_KERNEL_INIT_H

/* Starts the thread that runs what the knobs ask for (self test, benchmark) on CPU 0. */
void init_start(void);

#endif
