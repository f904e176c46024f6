/*
 * The first thread: runs the self test, benchmark or workload the knobs select, under the
 * watchdog, and ends the run with its verdict.
 */
#include "kernel/selftest/bench.h"
#include "kernel/exit_codes.h"
#include "kernel/init.h"
#include "kernel/knobs/knobs.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/selftest/selftest.h"
#include "kernel/watchdog.h"
#include "kernel/workloads/workload.h"

static void init_main(void *arg)
{
	bool ok = true;

	(void)arg;
	watchdog_start((uint64_t)knob(KNOB_watchdog), "init");
	if (knob(KNOB_selftest) == SELFTEST_SCHED)
		ok = selftest_sched();
	else if (knob(KNOB_selftest) == SELFTEST_WAKEUP)
		ok = selftest_wakeup();
	if (knob(KNOB_bench) == BENCH_SCHED)
		bench_sched();
	else if (knob(KNOB_bench) == BENCH_EXITS)
		bench_exits();
	if (ok && knob(KNOB_workload) != WORKLOAD_NONE)
		ok = workload_run();
	watchdog_stop();
	kernel_exit(ok ? EXIT_SUCCESS : EXIT_TEST_FAILED);
}

void init_start(void)
{
	if (!thread_create(init_main, 0, 0, "init"))
		panic("cannot create the init thread");
}
