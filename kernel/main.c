/*
 * Boot: the BSP arrives here from boot/entry.asm in long mode, brings up its own CPU, reads
 * the knobs, finds the other CPUs through ACPI and starts them one at a time, checking each
 * one's TSC against its own (kernel/tsc_sync.c), then prints the boot records the host tools
 * read.
 */
#include "arch/x86/apic.h"
#include "arch/x86/apic_timer.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpufeat.h"
#include "arch/x86/desc.h"
#include "arch/x86/paging.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "boot/bootinfo.h"
#include "drivers/acpi.h"
#include "drivers/serial.h"
#include "kernel/exit_codes.h"
#include "kernel/idle.h"
#include "kernel/init.h"
#include "kernel/knobs/knobs.h"
#include "kernel/panic_test.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/quiesce.h"
#include "kernel/sched.h"
#include "kernel/timeline.h"
#include "kernel/timer.h"
#include "kernel/trap_report.h"
#include "kernel/tsc_sync.h"

#define KSTACK_SIZE 16384

static uint8_t ap_stacks[MAX_CPUS][KSTACK_SIZE] __attribute__((aligned(16)));

static void emit_line(const char *line, void *ctx)
{
	(void)ctx;
	printk("%s", line);
}

static void read_knobs(void)
{
	char err[256];

	knobs_set_defaults(&knobs);
	/* Before parsing: a cut-off line could end in a knob that parses, with the wrong value. */
	if (boot_info.cmdline_truncated) {
		printk("idlelab: command line longer than %d bytes", BOOT_CMDLINE_MAX - 1);
		printk("@idlelab error what=cmdline msg=\"command line longer than %d bytes\"",
		       BOOT_CMDLINE_MAX - 1);
		kernel_exit(EXIT_BAD_KNOB);
	}
	if (knobs_parse(boot_info.cmdline, &knobs, err, sizeof(err)) != 0) {
		printk("idlelab: %s", err);
		printk("@idlelab error what=knob msg=\"%s\"", err);
		kernel_exit(EXIT_BAD_KNOB);
	}

	if (knob(KNOB_help)) {
		printk("idlelab knobs (name=value on the kernel command line):");
		knobs_print_help(emit_line, 0);
		kernel_exit(EXIT_SUCCESS);
	}
}

/* Everything a CPU needs for itself; the BSP and every AP run it. */
static void cpu_bringup(void)
{
	struct cpu *c = this_cpu();

	desc_load(&c->arch);
	apic_init_cpu();
	c->apic_id = apic_id();
}

/* After this the CPU's context is its idle thread and its timer interrupts are live. */
static void cpu_start_scheduling(void)
{
	timer_init_cpu();
	sched_init_cpu();
	idle_init_cpu();
}

static void announce_online(void)
{
	struct cpu *c = this_cpu();

	printk("@idlelab online cpu=%u apic_id=%u", c->id, c->apic_id);
	__atomic_store_n(&c->online, true, __ATOMIC_RELEASE);
}

static __attribute__((noreturn)) void ap_main(uint64_t id)
{
	percpu_init((unsigned)id);
	cpu_bringup();
	cpu_start_scheduling();
	announce_online();
	tsc_sync_join();
	sched_idle_loop();
}

static void find_cpus(void)
{
	uint32_t ids[MAX_CPUS];
	struct acpi_cpus found;
	const char *why;
	unsigned next = 1;
	uint32_t me = this_cpu()->apic_id;

	if (!acpi_find_cpus(boot_info.has_rsdp ? boot_info.rsdp : 0, ids, MAX_CPUS, &found, &why)) {
		printk("idlelab: cannot enumerate CPUs: %s", why);
		kernel_exit(EXIT_BOOT_FAILED);
	}
	if (found.skipped)
		printk("idlelab: %u CPUs beyond MAX_CPUS=%d are left offline", found.skipped,
		       MAX_CPUS);
	/* The BSP is CPU 0 wherever the MADT lists it. */
	for (unsigned i = 0; i < found.count; i++)
		if (ids[i] != me)
			cpus[next++].apic_id = ids[i];
	if (next != found.count) {
		printk("idlelab: the MADT does not list the boot CPU (APIC ID %u)", me);
		kernel_exit(EXIT_BOOT_FAILED);
	}
	ncpus = found.count;
	printk("idlelab: ACPI via %s (RSDP from %s): %u CPUs", found.via, found.rsdp_from, ncpus);
}

static void start_aps(void)
{
	uint64_t timeout = ns_to_tsc((uint64_t)knob(KNOB_boot_timeout));

	for (unsigned i = 1; i < ncpus; i++) {
		uint64_t deadline;

		smp_start_ap(cpus[i].apic_id, i, ap_stacks[i] + KSTACK_SIZE, ap_main);
		deadline = rdtsc() + timeout;
		while (!__atomic_load_n(&cpus[i].online, __ATOMIC_ACQUIRE)) {
			if ((int64_t)(rdtsc() - deadline) > 0) {
				printk("idlelab: CPU %u (APIC ID %u) did not come online within "
				       "boot_timeout",
				       i, cpus[i].apic_id);
				kernel_exit(EXIT_BOOT_FAILED);
			}
			cpu_relax();
		}
		if (!tsc_sync_check(i, (uint64_t)knob(KNOB_boot_timeout))) {
			printk("idlelab: CPU %u did not join the TSC check within boot_timeout", i);
			kernel_exit(EXIT_BOOT_FAILED);
		}
	}
}

static void print_boot_records(void)
{
	const struct cpu_features *f = &cpu_features;

	if (f->hypervisor)
		printk("@idlelab hypervisor sig=%s kvm=%d features=0x%x hints=0x%x pollctl=%d "
		       "pv_ipi=%d pv_sched_yield=%d realtime=%d",
		       f->hv_sig[0] ? f->hv_sig : "none", f->kvm, f->kvm_features, f->kvm_hints,
		       kvm_has(KVM_FEATURE_POLL_CONTROL), kvm_has(KVM_FEATURE_PV_SEND_IPI),
		       kvm_has(KVM_FEATURE_PV_SCHED_YIELD),
		       f->kvm && (f->kvm_hints >> KVM_HINTS_REALTIME) & 1);
	if (!f->invariant_tsc)
		printk("idlelab: CPUID does not report an invariant TSC; assuming it is one "
		       "(time would drift if the host changed the TSC rate)");
	tsc_sync_report();
	printk("@idlelab boot cpus=%u tsc_hz=%lu tsc_src=%s x2apic=%d tsc_deadline=%d "
	       "invariant_tsc=%d tsc_sync=%d tsc_skew_ns=%lu kvm=%d pollctl=%d realtime=%d "
	       "protocol=%s ram_mb=%lu",
	       ncpus, tsc_hz, tsc_source, apic_x2apic_mode, f->tsc_deadline, f->invariant_tsc,
	       tsc_sync.agree, tsc_sync.skew_ns, f->kvm, kvm_has(KVM_FEATURE_POLL_CONTROL),
	       f->kvm && (f->kvm_hints >> KVM_HINTS_REALTIME) & 1, boot_info.protocol,
	       boot_info.ram_bytes >> 20);
	if (knob(KNOB_verbose))
		printk("idlelab: cpu vendor %s, 1GiB pages %d, hypervisor leaves up to 0x%x, "
		       "RAM %lu MiB usable up to 0x%lx",
		       f->vendor, f->gbpages, f->hv_max_leaf, boot_info.ram_bytes >> 20,
		       boot_info.ram_top);
	knobs_print_config(emit_line, 0);
	idle_print_record();
}

void kmain(uint32_t magic, uint64_t info);
void kmain(uint32_t magic, uint64_t info)
{
	percpu_init(0);
	serial_init();
	if (!bootinfo_parse(magic, info)) {
		printk("idlelab: unknown boot protocol (magic 0x%x)", magic);
		kernel_exit(EXIT_BOOT_FAILED);
	}
	printk("idlelab: booted via %s, cmdline \"%s\"", boot_info.protocol, boot_info.cmdline);
	idt_build();
	trap_report_init();
	quiesce_init();
	cpufeat_detect();
	cpu_bringup();
	pic_disable();
	read_knobs();
	if (!paging_map_ram(boot_info.ram_top, cpu_features.gbpages)) {
		printk("idlelab: cannot identity-map RAM up to 0x%lx", boot_info.ram_top);
		kernel_exit(EXIT_BOOT_FAILED);
	}
	if (!tsc_calibrate()) {
		printk("idlelab: cannot determine the TSC frequency (no CPUID leaf, kvmclock or "
		       "PIT)");
		kernel_exit(EXIT_BOOT_FAILED);
	}
	if (!apic_timer_setup()) {
		printk("idlelab: the local APIC timer does not count");
		kernel_exit(EXIT_BOOT_FAILED);
	}
	find_cpus();
	paging_unmap_null_page();
	idle_setup();
	timeline_setup();
	cpu_start_scheduling();
	announce_online();
	start_aps();
	print_boot_records();
	panic_test_run((int)knob(KNOB_panic_test));
	init_start();
	sched_idle_loop();
}
