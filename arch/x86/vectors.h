/* The interrupt vector map, in one place. */
#ifndef IDLELAB_ARCH_VECTORS_H
#define IDLELAB_ARCH_VECTORS_H

#define VEC_PIC_BASE		0x20 /* legacy 8259, remapped and masked: only spurious IRQ 7/15 */
#define VEC_PIC_SPURIOUS_MASTER (VEC_PIC_BASE + 7)
#define VEC_PIC_SPURIOUS_SLAVE	(VEC_PIC_BASE + 15)
#define VEC_BENCH		0xe0 /* bench=exits: its own IPIs, never the scheduler's */
#define VEC_TIMER		0xef /* local APIC timer: sleeps and the tick */
#define VEC_RESCHED		0xf0 /* another CPU queued work here */
#define VEC_QUIESCE		0xf1 /* stop at the window barrier (kernel/quiesce.c) */
#define VEC_APIC_SPURIOUS	0xff

#endif
