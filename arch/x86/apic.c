#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/trap.h"
#include "arch/x86/vectors.h"

#define APIC_BASE_EXTD	 (1ull << 10)
#define APIC_BASE_ENABLE (1ull << 11)
#define APIC_BASE_ADDR	 0xfffff000ull

#define REG_ID		 0x020
#define REG_TPR		 0x080
#define REG_EOI		 0x0b0
#define REG_SVR		 0x0f0
#define REG_ICR_LO	 0x300
#define REG_ICR_HI	 0x310
#define REG_LVT_TIMER	 APIC_REG_LVT_TIMER
#define REG_LVT_LINT0	 0x350
#define REG_LVT_LINT1	 0x360
#define REG_LVT_ERROR	 0x370

#define SVR_ENABLE	 (1u << 8)
#define LVT_MASKED	 (1u << 16)
#define ICR_PENDING	 (1u << 12)
#define ICR_ASSERT	 (1u << 14)
#define ICR_INIT	 (5u << 8)
#define ICR_STARTUP	 (6u << 8)

bool apic_x2apic_mode;
static volatile uint32_t *xapic;

uint32_t apic_reg_read(uint32_t reg)
{
	if (apic_x2apic_mode)
		return (uint32_t)rdmsr(0x800 + (reg >> 4));
	return xapic[reg / 4];
}

bool apic_irr_pending(uint8_t vector)
{
	return apic_reg_read(APIC_REG_IRR + vector / 32 * 0x10) >> (vector % 32) & 1;
}

void apic_reg_write(uint32_t reg, uint32_t v)
{
	if (apic_x2apic_mode)
		wrmsr(0x800 + (reg >> 4), v);
	else
		xapic[reg / 4] = v;
}

static void ignore_spurious(struct trap_frame *f)
{
	(void)f; /* spurious interrupts must not be acknowledged */
}

void apic_init_cpu(void)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);

	apic_x2apic_mode = cpu_features.x2apic;
	if (apic_x2apic_mode) {
		/* xAPIC must be enabled before EXTD may be set. */
		wrmsr(MSR_APIC_BASE, base | APIC_BASE_ENABLE);
		wrmsr(MSR_APIC_BASE, base | APIC_BASE_ENABLE | APIC_BASE_EXTD);
	} else {
		wrmsr(MSR_APIC_BASE, base | APIC_BASE_ENABLE);
		xapic = (volatile uint32_t *)(uintptr_t)(base & APIC_BASE_ADDR);
	}
	apic_reg_write(REG_TPR, 0);
	apic_reg_write(REG_LVT_TIMER, LVT_MASKED);
	apic_reg_write(REG_LVT_LINT0, LVT_MASKED);
	apic_reg_write(REG_LVT_LINT1, LVT_MASKED);
	apic_reg_write(REG_LVT_ERROR, LVT_MASKED);
	apic_reg_write(REG_SVR, SVR_ENABLE | VEC_APIC_SPURIOUS);
	irq_register(VEC_APIC_SPURIOUS, ignore_spurious);
}

uint32_t apic_id(void)
{
	uint32_t id = apic_reg_read(REG_ID);

	return apic_x2apic_mode ? id : id >> 24;
}

void apic_eoi(void)
{
	apic_reg_write(REG_EOI, 0);
}

/*
 * Neither x2APIC ICR writes (WRMSR to 0x830) nor xAPIC MMIO stores are ordered by the CPU
 * against earlier stores to ordinary memory from the target's point of view, so a waker's
 * run-queue update could otherwise still sit in the store buffer when the IPI lands.
 *
 * In xAPIC mode an IPI takes two register writes, the destination and then the command
 * that sends it, so they run with interrupts off: an interrupt between them whose handler,
 * or the thread it preempts to, sends an IPI of its own would leave its destination in
 * ICR_HI, and our IPI would go to that CPU instead. (The target of the lost IPI keeps
 * IPI_PENDING set, so no later wake sends it one either: with hz=0 it hangs.) x2APIC
 * writes both halves with one WRMSR.
 */
static void send_icr(uint32_t dest, uint32_t low)
{
	uint64_t flags;

	mb();
	if (apic_x2apic_mode) {
		wrmsr(0x800 + (REG_ICR_LO >> 4), ((uint64_t)dest << 32) | low);
		return;
	}
	flags = irq_save();
	while (apic_reg_read(REG_ICR_LO) & ICR_PENDING)
		cpu_relax();
	apic_reg_write(REG_ICR_HI, dest << 24);
	apic_reg_write(REG_ICR_LO, low);
	irq_restore(flags);
}

void apic_send_ipi(uint32_t dest_apic_id, uint8_t vector)
{
	send_icr(dest_apic_id, ICR_ASSERT | vector);
}

void apic_send_init(uint32_t dest_apic_id)
{
	send_icr(dest_apic_id, ICR_ASSERT | ICR_INIT);
}

void apic_send_sipi(uint32_t dest_apic_id, uint8_t page)
{
	send_icr(dest_apic_id, ICR_ASSERT | ICR_STARTUP | page);
}

#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_CMD  0xa0
#define PIC2_DATA 0xa1

void pic_disable(void)
{
	/* ICW1-4: cascade, vectors 0x20/0x28, 8086 mode; then mask everything. */
	outb(PIC1_CMD, 0x11);
	outb(PIC2_CMD, 0x11);
	outb(PIC1_DATA, VEC_PIC_BASE);
	outb(PIC2_DATA, VEC_PIC_BASE + 8);
	outb(PIC1_DATA, 4);
	outb(PIC2_DATA, 2);
	outb(PIC1_DATA, 1);
	outb(PIC2_DATA, 1);
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
	irq_register(VEC_PIC_SPURIOUS_MASTER, ignore_spurious);
	irq_register(VEC_PIC_SPURIOUS_SLAVE, ignore_spurious);
}
