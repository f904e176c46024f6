/*
 * Host unit tests for tools/replay's line reader (tools/kvmreplay/trace_read.c): the lines
 * the three recorders print for KVM's two halt events, with the columns each may add (a
 * thread name with spaces and dashes, tracefs's record-tgid column and flags, perf's PID/TID,
 * a clock without units), and the lines it must refuse (cut short) or pass by (other events).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/named_cases.h"
#include "tools/kvmreplay/trace_read.h"

struct line_case {
	const char *name;
	const char *line;
	int result; /* rp_parse_line's: 1 ours, 0 not ours, -1 cut short */
	enum rp_format grammar;
	int tid;
	uint64_t t_ns;
	bool wakeup, waited, valid, grow;
	uint64_t halt_ns;
	int vcpu;
	uint32_t old, new;
};

/* clang-format off */
static const struct line_case cases[] = {
	{"tracefs wake-up with flags", "     CPU 1/KVM-4001    [001] d..1. 12.000035: kvm_vcpu_wakeup: wait time 17757 ns, polling valid\n",
	 1, RP_FMT_TRACEFS, 4001, 12000035000, true, true, true, false, 17757, 0, 0, 0},
	{"tracefs change with the tgid column", "  CPU 0/KVM-77 (   70) [000] ..... 5.5: kvm_halt_poll_ns: vcpu 0: halt_poll_ns 20000 (grow 10000)",
	 1, RP_FMT_TRACEFS, 77, 5500000000, false, false, false, true, 0, 0, 10000, 20000},
	{"trace-cmd report, no flags", "  CPU 3/KVM-9-1234  [002]  100.123456789: kvm_halt_poll_ns:     vcpu 3: halt_poll_ns 0 (shrink 40000)",
	 1, RP_FMT_TRACEFS, 1234, 100123456789, false, false, false, false, 0, 3, 40000, 0},
	{"perf script, PID/TID", "       CPU 0/KVM 1200/1203 [001]  7.000001:        kvm:kvm_vcpu_wakeup: poll time 900 ns, polling invalid",
	 1, RP_FMT_PERF, 1203, 7000001000, true, false, false, false, 900, 0, 0, 0},
	{"a counter clock", "  CPU 0/KVM-5 [000] d.... 123456789: kvm_vcpu_wakeup: poll time 1 ns, polling valid",
	 1, RP_FMT_TRACEFS, 5, 123456789, true, false, true, false, 1, 0, 0, 0},
	{.name = "another event", .line = "  CPU 0/KVM-5 [000] d.... 1.0: kvm_exit: reason HLT rip 0x1000", .result = 0},
	{.name = "a header line", .line = "# entries-in-buffer/entries-written: 10/10   #P:2", .result = 0},
	{.name = "a wake-up cut short", .line = "  CPU 0/KVM-5 [000] d.... 1.0: kvm_vcpu_wakeup: wait time 12", .result = -1},
	{.name = "a change cut short", .line = "  CPU 0/KVM-5 [000] d.... 1.0: kvm_halt_poll_ns: vcpu 0: halt_poll_ns 2000", .result = -1},
	{.name = "no thread id", .line = "  CPU 0/KVM [000] d.... 1.0: kvm_vcpu_wakeup: wait time 12 ns, polling valid", .result = -1},
	{.name = "no timestamp", .line = "  CPU 0/KVM-5 [000] d.... kvm_vcpu_wakeup: wait time 12 ns, polling valid", .result = -1},
};
/* clang-format on */

static void test_line(void **state)
{
	const struct line_case *c = *state;
	struct rp_event e = {0};

	assert_int_equal(rp_parse_line(c->line, strlen(c->line), &e), c->result);
	if (c->result != 1)
		return;
	assert_int_equal(e.grammar, c->grammar);
	assert_int_equal(e.tid, c->tid);
	assert_int_equal(e.t_ns, c->t_ns);
	assert_int_equal(e.wakeup, c->wakeup);
	if (c->wakeup) {
		assert_int_equal(e.waited, c->waited);
		assert_int_equal(e.valid, c->valid);
		assert_int_equal(e.halt_ns, c->halt_ns);
	} else {
		assert_int_equal(e.grow, c->grow);
		assert_int_equal(e.vcpu, c->vcpu);
		assert_int_equal(e.old, c->old);
		assert_int_equal(e.new, c->new);
	}
}

int main(void)
{
	struct named_tests t = {0};

	ADD_CASES(&t, cases, test_line);
	return RUN_NAMED_TESTS("replay_parse", &t);
}
