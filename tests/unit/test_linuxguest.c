/* Unit tests for the Linux guest's pure parts (tools/linuxguest/): picking idlelab's knobs out
 * of Linux's command line and parsing them with the kernel's parser, naming idle states by
 * how they idle, reading /proc/interrupts rows, reading the host's acknowledgement line, and
 * the settings that may switch between windows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tools/linuxguest/cpuidle.h"
#include "tools/linuxguest/knobpick.h"
#include "tools/linuxguest/out.h"
#include "tools/linuxguest/switchable.h"

static void picks_only_the_honoured_knobs(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(linuxguest_pick("console=ttyS0 panic=-1 workload=pingpong idle=halt "
					 "cpuidle_haltpoll.force=1 duration=300ms  window_sync=1",
					 out, sizeof(out)),
			 strlen("workload=pingpong duration=300ms window_sync=1"));
	assert_string_equal(out, "workload=pingpong duration=300ms window_sync=1");
}

static void a_name_must_match_whole(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(linuxguest_pick("workloads=1 xcpus=3 cpus period", out, sizeof(out)), 11);
	assert_string_equal(out, "cpus period");
	assert_int_equal(linuxguest_pick("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(linuxguest_pick(NULL, out, sizeof(out)), 0);
}

static void too_small_an_output_is_refused(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(linuxguest_pick("workload=pingpong", out, sizeof(out)), -1);
	assert_int_equal(linuxguest_pick("cpus=1", out, 7), 6);
	assert_int_equal(linuxguest_pick("cpus=1", out, 6), -1);
}

static void parses_with_the_kernels_parser(void **state)
{
	struct knob_values k;
	char err[KNOB_ERR_MAX];

	(void)state;
	assert_int_equal(linuxguest_parse("console=ttyS0 idle=halt workload=periodic period=50us "
					  "cpus=0x2",
					  &k, err, sizeof(err)),
			 KNOB_OK);
	assert_int_equal(k.v[KNOB_workload], WORKLOAD_PERIODIC);
	assert_int_equal(k.v[KNOB_period], 50000);
	assert_int_equal(k.v[KNOB_cpus], 2);
	assert_false(k.given[KNOB_idle]); /* Linux's idle=, not the program's */
	assert_true(k.given[KNOB_period]);
	assert_false(k.given[KNOB_duration]);
	assert_int_equal(k.v[KNOB_duration], knob_defs[KNOB_duration].def);
}

static void refuses_bad_values_and_other_workloads(void **state)
{
	struct knob_values k;
	char err[KNOB_ERR_MAX];

	(void)state;
	assert_int_equal(linuxguest_parse("quiet duration=fast", &k, err, sizeof(err)),
			 KNOB_E_VALUE);
	assert_non_null(strstr(err, "duration"));
	assert_int_equal(linuxguest_parse("window_sync=1 window_sync=0", &k, err, sizeof(err)),
			 KNOB_E_DUPLICATE);
	assert_int_equal(linuxguest_parse("workload=random", &k, err, sizeof(err)), KNOB_E_VALUE);
	assert_non_null(strstr(err, "workload=random"));
	assert_int_equal(k.v[KNOB_workload], WORKLOAD_NONE); /* defaults after a refusal */
}

static void idlelab_knobs_linux_lacks_are_refused(void **state)
{
	struct knob_values k;
	char err[KNOB_ERR_MAX];

	(void)state;
	assert_int_equal(linuxguest_parse("workload=pingpong pairs=2", &k, err, sizeof(err)),
			 KNOB_E_UNKNOWN);
	assert_non_null(strstr(err, "pairs:"));
	assert_int_equal(linuxguest_parse("hz=0", &k, err, sizeof(err)), KNOB_E_UNKNOWN);
	/* Linux's own parameters of the same names pass, whatever Linux makes of them */
	assert_int_equal(
	    linuxguest_parse("idle=halt cpuidle_haltpoll.force=1 cpuidle.governor=menu "
			     "haltpoll.guest_halt_poll_ns=300000 quiet",
			     &k, err, sizeof(err)),
	    KNOB_OK);
}

static void reads_linuxs_idle_override(void **state)
{
	char out[16];

	(void)state;
	linuxguest_idle_override("console=ttyS0 workload=idle", out, sizeof(out));
	assert_string_equal(out, "none");
	linuxguest_idle_override("idle=halt quiet", out, sizeof(out));
	assert_string_equal(out, "halt");
	linuxguest_idle_override("idle=halt idle=poll", out, sizeof(out)); /* the last one */
	assert_string_equal(out, "poll");
	linuxguest_idle_override("cpuidle.off=1", out, sizeof(out));
	assert_string_equal(out, "cpuidle.off");
	linuxguest_idle_override("cpuidle.off=1 idle=halt", out, sizeof(out));
	assert_string_equal(out, "halt");
	linuxguest_idle_override("cpuidle.off=0 xidle=halt idle=", out, sizeof(out));
	assert_string_equal(out, "none");
}

static void names_states_by_how_they_idle(void **state)
{
	(void)state;
	assert_int_equal(idle_kind_of("POLL", "CPUIDLE CORE POLL IDLE"), STATE_POLL);
	assert_int_equal(idle_kind_of("haltpoll", "default architecture idle"), STATE_HALT);
	/* Debian's 6.1 kernel, under the nested KVM host */
	assert_int_equal(idle_kind_of("haltpoll idle", "default architecture idle"), STATE_HALT);
	assert_int_equal(idle_kind_of("haltpoll idler", "x"), STATE_OTHER);
	assert_int_equal(idle_kind_of("C1", "ACPI HLT"), STATE_HALT);
	assert_int_equal(idle_kind_of("C1", "ACPI FFH MWAIT 0x0"), STATE_OTHER);
	assert_int_equal(idle_kind_of("C1E", "MWAIT 0x01"), STATE_OTHER);
}

static const char interrupts[] = "           CPU0       CPU1       \n"
				 "  0:         36          0   IO-APIC   2-edge      timer\n"
				 "LOC:      12345        678   Local timer interrupts\n"
				 "RES:         10         20   Rescheduling interrupts\n"
				 "CAL:          1          2   Function call interrupts\n"
				 "TLB:          3          4   TLB shootdowns\n";

static void reads_interrupt_rows(void **state)
{
	uint64_t ipi[2] = {0}, timer[2] = {0};

	(void)state;
	assert_true(irq_row_add(interrupts, "RES", 2, ipi));
	assert_true(irq_row_add(interrupts, "CAL", 2, ipi));
	assert_int_equal(ipi[0], 11);
	assert_int_equal(ipi[1], 22);
	assert_true(irq_row_add(interrupts, "LOC", 2, timer));
	assert_int_equal(timer[0], 12345);
	assert_int_equal(timer[1], 678);
	assert_false(irq_row_add(interrupts, "PMI", 2, timer));
	/* a row with fewer counts than CPUs (the text is not this VM's) */
	assert_false(irq_row_add(interrupts, "RES", 3, ipi));
	/* a label matches whole, up to its colon */
	assert_false(irq_row_add("LOCX: 1 2\n", "LOC", 2, timer));
}

static void appending_never_runs_past_the_buffer(void **state)
{
	char buf[8];
	int n;

	(void)state;
	n = text_append(buf, sizeof(buf), 0, "ab");
	n = text_append(buf, sizeof(buf), n, "%d", 123);
	assert_int_equal(n, 5);
	assert_string_equal(buf, "ab123");
	n = text_append(buf, sizeof(buf), n, "xyzw"); /* 9 would not fit: cut at 7 */
	assert_int_equal(n, 7);
	assert_string_equal(buf, "ab123xy");
	assert_int_equal(text_append(buf, sizeof(buf), n, "more"), 7);
	assert_string_equal(buf, "ab123xy");
	assert_int_equal(text_append(buf, sizeof(buf), 50, "x"), 7); /* a length past the end */
}

static enum ack_state feed(struct ack_line *a, const char *bytes, size_t n)
{
	enum ack_state st = ACK_MORE;

	ack_start(a);
	for (size_t i = 0; i < n && st == ACK_MORE; i++)
		st = ack_feed(a, bytes[i]);
	return st;
}

static void reads_the_hosts_acknowledgement_line(void **state)
{
	static struct ack_line a;
	static char longer[LG_SETTINGS_MAX + 1];

	(void)state;
	/* the host's one byte (qemu.ACK_BYTE) with no settings */
	assert_int_equal(feed(&a, "\x06", 1), ACK_DONE);
	assert_string_equal(a.text, "");
	assert_int_equal(feed(&a, "\n", 1), ACK_DONE);
	assert_string_equal(a.text, "");
	/* a settings line; a '\r' is dropped, a control byte after text is kept as text */
	assert_int_equal(feed(&a, "haltpoll.guest_halt_poll_ns=2ms\r\n", 33), ACK_DONE);
	assert_string_equal(a.text, "haltpoll.guest_halt_poll_ns=2ms");
	assert_int_equal(feed(&a, "\rab", 3), ACK_MORE);
	assert_string_equal(a.text, "ab");
	/* nothing past the buffer: the longest line that fits, then one byte more */
	memset(longer, 'x', sizeof(longer) - 1);
	longer[LG_SETTINGS_MAX - 1] = '\n';
	assert_int_equal(feed(&a, longer, LG_SETTINGS_MAX), ACK_DONE);
	assert_int_equal(strlen(a.text), LG_SETTINGS_MAX - 1);
	memset(longer, 'x', sizeof(longer) - 1);
	assert_int_equal(feed(&a, longer, LG_SETTINGS_MAX), ACK_TOO_LONG);
}

static void only_the_haltpoll_tunables_switch(void **state)
{
	struct knob_values k;
	char err[KNOB_ERR_MAX];

	(void)state;
	assert_int_equal(linuxguest_parse_switch("haltpoll.guest_halt_poll_ns=2ms "
						 "haltpoll.guest_halt_poll_allow_shrink=0",
						 &k, err, sizeof(err)),
			 KNOB_OK);
	assert_true(k.given[KNOB_guest_halt_poll_ns] && k.given[KNOB_guest_halt_poll_allow_shrink]);
	assert_false(k.given[KNOB_guest_halt_poll_grow]);
	assert_int_equal(k.v[KNOB_guest_halt_poll_ns], 2000000);
	assert_int_equal(linuxguest_parse_switch("", &k, err, sizeof(err)), KNOB_OK);
	/* boot-time settings are refused, naming the knob */
	assert_int_equal(linuxguest_parse_switch("haltpoll.guest_halt_poll_ns=2ms idle=halt", &k,
						 err, sizeof(err)),
			 KNOB_E_FIXED);
	assert_non_null(strstr(err, "idle cannot change"));
	assert_int_equal(linuxguest_parse_switch("cpuidle_haltpoll.force=1", &k, err, sizeof(err)),
			 KNOB_E_FIXED);
	assert_non_null(strstr(err, "cpuidle_haltpoll.force"));
	/* idlelab switches its governor and pollflag; the Linux guest does not */
	assert_int_equal(linuxguest_parse_switch("cpuidle.governor=haltpoll", &k, err, sizeof(err)),
			 KNOB_E_FIXED);
	assert_int_equal(linuxguest_parse_switch("pollflag=0", &k, err, sizeof(err)), KNOB_E_FIXED);
	/* a bad value is the parser's own error */
	assert_int_equal(
	    linuxguest_parse_switch("haltpoll.guest_halt_poll_ns=soon", &k, err, sizeof(err)),
	    KNOB_E_VALUE);
	assert_int_equal(linuxguest_parse_switch("haltpoll.no_such=1", &k, err, sizeof(err)),
			 KNOB_E_UNKNOWN);
}

static void writes_values_as_linux_takes_them(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(linuxguest_param_text(KNOB_guest_halt_poll_ns, 300000, buf, sizeof(buf)),
			 6);
	assert_string_equal(buf, "300000");
	linuxguest_param_text(KNOB_guest_halt_poll_grow_start, 100000, buf, sizeof(buf));
	assert_string_equal(buf, "100000");
	linuxguest_param_text(KNOB_guest_halt_poll_allow_shrink, 0, buf, sizeof(buf));
	assert_string_equal(buf, "N");
	linuxguest_param_text(KNOB_guest_halt_poll_allow_shrink, 1, buf, sizeof(buf));
	assert_string_equal(buf, "Y");
	assert_int_equal(linuxguest_param_text(KNOB_idle, 1, buf, sizeof(buf)), -1);
	assert_string_equal(linuxguest_param_of(KNOB_guest_halt_poll_shrink),
			    "guest_halt_poll_shrink");
	assert_null(linuxguest_param_of(KNOB_haltpoll_force));
}

static void windows_are_the_programs_knobs(void **state)
{
	struct knob_values k;
	char err[KNOB_ERR_MAX];

	(void)state;
	assert_int_equal(linuxguest_parse("workload=idle windows=3 window_gap=20ms window_sync=1",
					  &k, err, sizeof(err)),
			 KNOB_OK);
	assert_int_equal(k.v[KNOB_windows], 3);
	assert_true(k.given[KNOB_windows]);
	assert_int_equal(k.v[KNOB_window_gap], 20000000);
	assert_int_equal(linuxguest_parse("workload=idle", &k, err, sizeof(err)), KNOB_OK);
	assert_false(k.given[KNOB_windows]);
	assert_int_equal(linuxguest_parse("windows=0", &k, err, sizeof(err)), KNOB_E_RANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(picks_only_the_honoured_knobs),
	    cmocka_unit_test(a_name_must_match_whole),
	    cmocka_unit_test(too_small_an_output_is_refused),
	    cmocka_unit_test(parses_with_the_kernels_parser),
	    cmocka_unit_test(refuses_bad_values_and_other_workloads),
	    cmocka_unit_test(idlelab_knobs_linux_lacks_are_refused),
	    cmocka_unit_test(reads_linuxs_idle_override),
	    cmocka_unit_test(names_states_by_how_they_idle),
	    cmocka_unit_test(reads_interrupt_rows),
	    cmocka_unit_test(appending_never_runs_past_the_buffer),
	    cmocka_unit_test(reads_the_hosts_acknowledgement_line),
	    cmocka_unit_test(only_the_haltpoll_tunables_switch),
	    cmocka_unit_test(writes_values_as_linux_takes_them),
	    cmocka_unit_test(windows_are_the_programs_knobs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
