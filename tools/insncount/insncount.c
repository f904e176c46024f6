/*
 * insncount: a QEMU TCG plugin that counts the guest instructions each vCPU executes and
 * logs, at every probe mark (arch/x86/probe.h: `nopl 0x1d1eXXXX(%rax)`), the vCPU, the
 * mark's id and that vCPU's count so far. The host (tools/idlelab/wakepath/insncount.py) turns the
 * log into instructions per phase of the wake-up path: a count, unlike a time, is the same
 * on every run and every machine, so a change to the path shows as a number.
 *
 * Every instruction gets a callback: exact counts, even when a translation block is left
 * early by an interrupt or an exception. Only short runs are meant to be counted.
 *
 *   qemu-system-x86_64 ... -accel tcg -plugin build/host/libinsncount.so,out=FILE
 *
 * FILE: one line per mark, "vcpu id count"; then one "total vcpu count" line per vCPU.
 * With profile=PFILE also a flat profile of the kernel image: "address count" per executed
 * instruction address, to see where a path spends its instructions. window=A:B profiles only
 * from the mark with id A to the one with id B (on any vCPU: the measurement window), and
 * skip=C:D leaves out, per vCPU, what it executes from mark C to mark D (its waiting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/insncount/qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_VCPUS 64
#define PROBE_HI  0x1d1eu /* the upper half of a probe NOP's displacement */
#define MAX_MARKS (1u << 22)

/* Each vCPU's count, on a cache line of its own: each is written by its own vCPU thread. */
static struct {
	uint64_t n;
} __attribute__((aligned(64))) counts[MAX_VCPUS];

struct mark {
	uint32_t vcpu, id;
	uint64_t count;
};

static struct mark *marks;
static uint64_t nmarks; /* atomically reserved slots; past MAX_MARKS marks are dropped */
static uint64_t dropped;
static char out_path[4096];
static char profile_path[4096];
/* Executions per instruction address of the kernel image, which is linked at 1 MiB. */
#define PROFILE_BASE 0x100000u
#define PROFILE_SIZE (4u << 20)
static uint64_t *profile;
static uint32_t window_from, window_to, skip_from, skip_to; /* mark ids; 0: none */
static int profiling = 1;				    /* inside the window (or no window) */
static struct {
	int on;
} __attribute__((aligned(64))) skipping[MAX_VCPUS]; /* each written by its own vCPU only */

static void count_insn(unsigned int vcpu, void *udata)
{
	(void)udata;
	if (vcpu < MAX_VCPUS)
		counts[vcpu].n++;
}

static void count_insn_at(unsigned int vcpu, void *udata)
{
	count_insn(vcpu, 0);
	if (__atomic_load_n(&profiling, __ATOMIC_RELAXED) && vcpu < MAX_VCPUS && !skipping[vcpu].on)
		__atomic_fetch_add(&profile[(uintptr_t)udata], 1, __ATOMIC_RELAXED);
}

/* After the mark's own instruction was counted (or not): the profile's gates. */
static void gate_profile(unsigned int vcpu, uint32_t id)
{
	if (id == window_from)
		__atomic_store_n(&profiling, 1, __ATOMIC_RELAXED);
	else if (id == window_to)
		__atomic_store_n(&profiling, 0, __ATOMIC_RELAXED);
	if (id == skip_from)
		skipping[vcpu].on = 1;
	else if (id == skip_to)
		skipping[vcpu].on = 0;
}

/* Runs after count_insn for the same NOP, so the count includes the mark itself. */
static void log_mark(unsigned int vcpu, void *udata)
{
	uint64_t slot = __atomic_fetch_add(&nmarks, 1, __ATOMIC_RELAXED);

	if (vcpu < MAX_VCPUS)
		gate_profile(vcpu, (uint32_t)(uintptr_t)udata);
	if (slot >= MAX_MARKS || vcpu >= MAX_VCPUS) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	marks[slot] = (struct mark){vcpu, (uint32_t)(uintptr_t)udata, counts[vcpu].n};
}

/* `0f 1f 80 <disp32>` with the displacement's upper half PROBE_HI: returns its id, or 0. */
static uint32_t probe_id(const struct qemu_plugin_insn *insn)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != 7 || b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80)
		return 0;
	memcpy(&disp, b + 3, sizeof(disp));
	return (disp >> 16) == PROBE_HI ? (disp & 0xffff) : 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	for (size_t i = 0; i < qemu_plugin_tb_n_insns(tb); i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t mark = probe_id(insn);

		uint64_t off = qemu_plugin_insn_vaddr(insn) - PROFILE_BASE;

		if (profile && off < PROFILE_SIZE)
			qemu_plugin_register_vcpu_insn_exec_cb(
			    insn, count_insn_at, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)off);
		else
			qemu_plugin_register_vcpu_insn_exec_cb(insn, count_insn,
							       QEMU_PLUGIN_CB_NO_REGS, 0);
		if (mark)
			qemu_plugin_register_vcpu_insn_exec_cb(
			    insn, log_mark, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mark);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	uint64_t n = __atomic_load_n(&nmarks, __ATOMIC_RELAXED);
	FILE *f = fopen(out_path, "w");

	(void)id;
	(void)udata;
	if (n > MAX_MARKS)
		n = MAX_MARKS;
	if (!f) {
		qemu_plugin_outs("insncount: cannot write the output file\n");
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		fprintf(f, "%u %u %llu\n", marks[i].vcpu, marks[i].id,
			(unsigned long long)marks[i].count);
	for (unsigned v = 0; v < MAX_VCPUS; v++)
		if (counts[v].n)
			fprintf(f, "total %u %llu\n", v, (unsigned long long)counts[v].n);
	if (dropped)
		fprintf(f, "dropped %llu\n", (unsigned long long)dropped);
	fclose(f);
	if (!profile)
		return;
	f = fopen(profile_path, "w");
	if (!f) {
		qemu_plugin_outs("insncount: cannot write the profile file\n");
		return;
	}
	for (uint64_t i = 0; i < PROFILE_SIZE; i++)
		if (profile[i])
			fprintf(f, "%llx %llu\n", (unsigned long long)(PROFILE_BASE + i),
				(unsigned long long)profile[i]);
	fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
					   char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0)
			snprintf(out_path, sizeof(out_path), "%s", argv[i] + 4);
		else if (strncmp(argv[i], "profile=", 8) == 0)
			snprintf(profile_path, sizeof(profile_path), "%s", argv[i] + 8);
		else if (strncmp(argv[i], "window=", 7) == 0) {
			if (sscanf(argv[i] + 7, "%u:%u", &window_from, &window_to) != 2 ||
			    !window_from || !window_to) {
				fprintf(stderr, "insncount: window=A:B wants two mark ids\n");
				return -1;
			}
			profiling = 0;
		} else if (strncmp(argv[i], "skip=", 5) == 0) {
			if (sscanf(argv[i] + 5, "%u:%u", &skip_from, &skip_to) != 2 || !skip_from ||
			    !skip_to) {
				fprintf(stderr, "insncount: skip=C:D wants two mark ids\n");
				return -1;
			}
		} else {
			fprintf(stderr, "insncount: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path[0]) {
		fprintf(stderr, "insncount: give out=FILE\n");
		return -1;
	}
	marks = calloc(MAX_MARKS, sizeof(*marks));
	if (profile_path[0])
		profile = calloc(PROFILE_SIZE, sizeof(*profile));
	if (!marks || (profile_path[0] && !profile))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, 0);
	return 0;
}
