/*
 * Thin wrappers for the x86 instructions the kernel uses. Everything that names an x86
 * instruction, register or MSR lives under arch/x86; the rest of the kernel calls these.
 */
#ifndef IDLELAB_ARCH_CPU_H
#define IDLELAB_ARCH_CPU_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_APIC_BASE	     0x1b
#define MSR_TSC_DEADLINE     0x6e0
#define MSR_X2APIC_EOI	     0x80b /* x2APIC register 0x0b0 */
#define MSR_EFER	     0xc0000080
#define MSR_FS_BASE	     0xc0000100
#define MSR_GS_BASE	     0xc0000101
#define MSR_KVM_SYSTEM_TIME  0x4b564d01
#define MSR_KVM_POLL_CONTROL 0x4b564d05
#define MSR_KVM_STEAL_TIME   0x4b564d03 /* bit 0: enable; the rest: 64-byte aligned GPA */

#define RFLAGS_IF	     (1ul << 9)

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	__asm__ volatile("cpuid"
			 : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

/* Not ordered against earlier loads/stores; callers that time code fence themselves. */
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * The TSC, read only once every earlier instruction has completed (LFENCE): a reading that
 * is compared with another CPU's must not be taken before the load that ordered the two.
 */
static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static inline void irq_disable(void)
{
	__asm__ volatile("cli" ::: "memory");
}

static inline void irq_enable(void)
{
	__asm__ volatile("sti" ::: "memory");
}

static inline uint64_t irq_save(void)
{
	uint64_t flags;

	__asm__ volatile("pushfq; pop %0; cli" : "=r"(flags)::"memory");
	return flags;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		irq_enable();
}

/*
 * STI's interrupt shadow covers exactly the next instruction, so an interrupt that became
 * pending while interrupts were off is taken only once HLT has begun and ends it: there is
 * no window in which a wake-up IPI is serviced between the caller's last check and HLT.
 * Out of line (arch/x86/halt.asm) so that the HLT has one address: a host that drops the
 * shadow delivers the interrupt on it, and the interrupt entry then returns past it
 * (trap.c). A call the compiler does not see: the routine clobbers no register.
 */
void arch_safe_halt(void);
extern const char arch_safe_halt_hlt[];
/* A self test's broken shadow: an IRET to arch_safe_halt's HLT with interrupts on, so an
 * interrupt pending is taken on the HLT before it runs. Returns with interrupts on. */
void arch_safe_halt_shadowless(void);
static inline void safe_halt(void)
{
	__asm__ volatile("call arch_safe_halt" ::: "memory");
}

/* Halts with interrupts off: only NMI, INIT or SMI can end it. Used on fatal paths. */
static inline __attribute__((noreturn)) void halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt" ::: "memory");
}

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint64_t read_cr2(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline uint64_t read_cr3(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

static inline void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory");
}

/* A full barrier: orders earlier stores against later loads (MFENCE). */
static inline void mb(void)
{
	__asm__ volatile("mfence" ::: "memory");
}

static inline void barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

#endif
