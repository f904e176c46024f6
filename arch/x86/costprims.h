/*
 * The primitives bench=exits times (kernel/selftest/bench_exits.c), in the manner of
 * kvm-unit-tests' x86/vmexit.c. Each cost_*_batch() runs COST_*_BATCH copies of one
 * instruction (or pair) unrolled with .rept, so no loop instruction sits between them;
 * the caller reads cost_tsc() before and after a batch and divides by the batch size.
 *
 * Batch sizes: long enough that the two timing reads around a batch (an empty sample:
 * ~2.5 us under this machine's nested KVM, ~10 ns under TCG) are at most a few % of it,
 * short enough that one sample stays well under a millisecond under KVM, where ring 0 is
 * emulated (docs/platform-notes.md; bench=exits measured ~0.5 us a simple instruction and
 * ~1-2 us a CPUID or WRMSR there).
 */
#ifndef IDLELAB_ARCH_COSTPRIMS_H
#define IDLELAB_ARCH_COSTPRIMS_H

#include <stdint.h>

#include "arch/x86/cpu.h"

#define COST_STR_(x)	      #x
#define COST_STR(x)	      COST_STR_(x)

#define COST_ALU_BATCH	      1024
#define COST_PAUSE_BATCH      256
#define COST_RDTSC_BATCH      256
#define COST_LOCKED_RMW_BATCH 128
#define COST_CLI_STI_BATCH    128
#define COST_CPUID_BATCH      64
#define COST_WRMSR_BATCH      64
#define COST_LOAD_BATCH	      512
#define COST_CALL_BATCH	      128
#define COST_PUSHF_BATCH      128
#define COST_EOI_BATCH	      64
#define COST_DEADLINE_BATCH   64

/*
 * The TSC, read after every earlier instruction has completed (LFENCE), so a batch is
 * not timed before it is done. Used on both sides of a sample.
 */
static inline uint64_t cost_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* A plain ALU op: add immediate to a register, a dependency chain through one register. */
static inline void cost_alu_batch(void)
{
	uint64_t x = 0;

	__asm__ volatile(".rept " COST_STR(COST_ALU_BATCH) "\n\tadd $1, %0\n\t.endr" : "+r"(x));
}

static inline void cost_pause_batch(void)
{
	__asm__ volatile(".rept " COST_STR(COST_PAUSE_BATCH) "\n\tpause\n\t.endr" ::: "memory");
}

static inline void cost_rdtsc_batch(void)
{
	__asm__ volatile(".rept " COST_STR(COST_RDTSC_BATCH) "\n\trdtsc\n\t.endr" ::: "rax", "rdx");
}

/* LOCK ADD on a quadword the caller owns (its own cache line: no other CPU touches it). */
static inline void cost_locked_rmw_batch(uint64_t *p)
{
	__asm__ volatile(".rept " COST_STR(COST_LOCKED_RMW_BATCH) "\n\tlock addq $1, %0\n\t.endr"
			 : "+m"(*p)
			 :
			 : "memory", "cc");
}

/*
 * A load whose address is the previous load's result: *p holds p, so each copy waits for the
 * one before (a load-to-use chain, not loads in flight side by side). The wake-up path is
 * mostly loads and stores of per-CPU and thread words; here what one costs.
 */
static inline void cost_load_batch(uint64_t *p)
{
	uint64_t *q = p;

	__asm__ volatile(".rept " COST_STR(COST_LOAD_BATCH) "\n\tmov (%0), %0\n\t.endr"
			 : "+r"(q)
			 :
			 : "memory");
}

/* A call of a function that only returns (cost_ret_stub, costprims.c), and its RET: the
 * pair every non-inlined function on a hot path costs at least. */
void cost_ret_stub(void);
static inline void cost_call_batch(void)
{
	__asm__ volatile(".rept " COST_STR(COST_CALL_BATCH) "\n\tcall cost_ret_stub\n\t.endr" ::
			     : "memory");
}

/* PUSHF and the POP of it into a register: irq_save()'s reading of the flags. */
static inline void cost_pushf_batch(void)
{
	uint64_t f;

	__asm__ volatile(".rept " COST_STR(COST_PUSHF_BATCH) "\n\tpushfq\n\tpop %0\n\t.endr"
			 : "=r"(f)
			 :
			 : "memory");
}

/* CLI then STI, COST_CLI_STI_BATCH times: leaves interrupts enabled. */
static inline void cost_cli_sti_batch(void)
{
	__asm__ volatile(".rept " COST_STR(COST_CLI_STI_BATCH) "\n\tcli\n\tsti\n\t.endr" ::
			     : "memory");
}

/*
 * CPUID leaf 0. CPUID overwrites EAX with the highest leaf, so each copy is preceded by one
 * XOR that reloads EAX = 0 (an ALU op, not subtracted); leaf 0 has no subleaf, so ECX is
 * left as it is.
 */
static inline void cost_cpuid_batch(void)
{
	__asm__ volatile(
	    ".rept " COST_STR(COST_CPUID_BATCH) "\n\txor %%eax, %%eax\n\tcpuid\n\t.endr" ::
		: "rax", "rbx", "rcx", "rdx", "memory");
}

/* MSR_KVM_POLL_CONTROL as it stands; only where CPUID offers KVM_FEATURE_POLL_CONTROL. */
static inline uint64_t cost_pollctl_read(void)
{
	return rdmsr(MSR_KVM_POLL_CONTROL);
}

/* WRMSR of v to MSR_KVM_POLL_CONTROL, COST_WRMSR_BATCH times (WRMSR leaves ECX, EAX, EDX
 * as they were, so nothing is reloaded between copies). */
static inline void cost_pollctl_write_batch(uint64_t v)
{
	__asm__ volatile(
	    ".rept " COST_STR(COST_WRMSR_BATCH) "\n\twrmsr\n\t.endr" ::"c"(MSR_KVM_POLL_CONTROL),
	    "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
	    : "memory");
}

/* x2APIC EOI writes with nothing in service (interrupts off, so nothing can be), the write
 * every interrupt handler ends with: an exit where the host does not virtualise EOI. */
static inline void cost_eoi_batch(void)
{
	__asm__ volatile(
	    ".rept " COST_STR(COST_EOI_BATCH) "\n\twrmsr\n\t.endr" ::"c"(MSR_X2APIC_EOI), "a"(0),
	    "d"(0)
	    : "memory");
}

/* The deadline the timer has programmed (0: none), to be put back after the batch below. */
static inline uint64_t cost_deadline_read(void)
{
	return rdmsr(MSR_TSC_DEADLINE);
}

static inline void cost_deadline_restore(uint64_t deadline)
{
	wrmsr(MSR_TSC_DEADLINE, deadline);
}

/* TSC-deadline writes of one deadline, the arming every timer does: an exit on KVM, which
 * re-arms its own timer for it each time. */
static inline void cost_deadline_batch(uint64_t deadline)
{
	__asm__ volatile(
	    ".rept " COST_STR(COST_DEADLINE_BATCH) "\n\twrmsr\n\t.endr" ::"c"(MSR_TSC_DEADLINE),
	    "a"((uint32_t)deadline), "d"((uint32_t)(deadline >> 32))
	    : "memory");
}

#endif
