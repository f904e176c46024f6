#include "arch/x86/desc.h"

struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t offset_mid;
	uint32_t offset_hi;
	uint32_t reserved;
} __attribute__((packed));

struct table_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define GATE_INTERRUPT 0x8e /* present, DPL 0, 64-bit interrupt gate: IF cleared on entry */
#define VEC_NMI	       2
#define VEC_DF	       8
#define VEC_MC	       18

extern const uint64_t isr_table[256]; /* arch/x86/isr.asm */

static struct idt_gate idt[256] __attribute__((aligned(16)));

void idt_build(void)
{
	for (int v = 0; v < 256; v++) {
		uint64_t h = isr_table[v];

		idt[v] = (struct idt_gate){
		    .offset_lo = (uint16_t)h,
		    .selector = SEL_KERNEL_CODE,
		    .ist = (v == VEC_NMI || v == VEC_DF || v == VEC_MC) ? 1 : 0,
		    .type_attr = GATE_INTERRUPT,
		    .offset_mid = (uint16_t)(h >> 16),
		    .offset_hi = (uint32_t)(h >> 32),
		};
	}
}

static void tss_descriptor(uint64_t *slot, const struct tss *tss)
{
	uint64_t base = (uint64_t)tss, limit = sizeof(*tss) - 1;

	slot[0] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		  (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	slot[1] = base >> 32;
}

void desc_load(struct arch_cpu *a)
{
	struct table_ptr gdtr = {sizeof(a->gdt) - 1, (uint64_t)a->gdt};
	struct table_ptr idtr = {sizeof(idt) - 1, (uint64_t)idt};

	a->gdt[0] = 0;
	a->gdt[1] = 0x00af9a000000ffffull; /* 64-bit code */
	a->gdt[2] = 0x00cf92000000ffffull; /* data */
	a->tss.ist[0] = (uint64_t)(a->ist_stack + IST_STACK_SIZE);
	a->tss.iomap_base = sizeof(a->tss); /* no I/O bitmap */
	tss_descriptor(&a->gdt[3], &a->tss);

	__asm__ volatile("lgdt %0\n\t"
			 "pushq %1\n\t"
			 "leaq 1f(%%rip), %%rax\n\t"
			 "pushq %%rax\n\t"
			 "lretq\n"
			 "1:\n\t"
			 "mov %2, %%ds\n\t"
			 "mov %2, %%es\n\t"
			 "mov %2, %%ss\n\t"
			 "ltr %w3\n\t"
			 "lidt %4"
			 :
			 : "m"(gdtr), "i"(SEL_KERNEL_CODE), "r"(SEL_KERNEL_DATA), "r"(SEL_TSS),
			   "m"(idtr)
			 : "rax", "memory");
}
