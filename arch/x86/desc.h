/* Descriptor tables: a GDT and TSS per CPU (the TSS carries the IST stack), one shared IDT. */
#ifndef IDLELAB_ARCH_DESC_H
#define IDLELAB_ARCH_DESC_H

#include <stdint.h>

struct tss {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

#define IST_STACK_SIZE 8192

struct arch_cpu {
	uint64_t gdt[5]; /* null, kernel code, kernel data, TSS (two slots) */
	struct tss tss;
	/* #DF, NMI and #MC run here, so a blown kernel stack still produces a dump. */
	uint8_t ist_stack[IST_STACK_SIZE] __attribute__((aligned(16)));
};

#define SEL_KERNEL_CODE 0x08
#define SEL_KERNEL_DATA 0x10
#define SEL_TSS		0x18

/* Builds the shared IDT; once, on the BSP, before any CPU loads it. */
void idt_build(void);
/* Loads this CPU's GDT, TSS and the shared IDT. */
void desc_load(struct arch_cpu *a);

#endif
