/*
 * The one definition of every boot knob. The parser, the `help` output, the docs' knob tables
 * (tools/knobdoc) and the `@idlelab config` line are all generated from KNOB_TABLE, so a
 * knob's name, type, default, range and help text exist in exactly one place.
 *
 * How to add a knob: append one entry to KNOB_TABLE
 *
 *   K(ident, "cmdline.name", TYPE, default, min, max, choices, "help text")
 *
 *   ident     C identifier; kernel code reads it as knob(KNOB_ident)
 *   name      what is typed on the command line: no spaces, tabs or '='; dots are fine
 *   TYPE      BOOL, INT, MASK (an INT that is a bit mask, printed in hex), TIME (stored in
 *             ns) or ENUM (stored as the choice's index)
 *   default   value when the knob is not given; write times with KNOB_US/KNOB_MS/KNOB_S
 *   min, max  inclusive range. BOOL: always 0, 1. ENUM: always 0, 0 (the choices are the range).
 *             MASK: min >= 0
 *   choices   ENUM: a KNOB_CHOICES_* list defined above the table; otherwise KNOB_NO_CHOICES
 *   help      one line, shown by `help` and in docs/knobs.md
 *
 *   K(hz, "hz", INT, 250, 1, 1000, KNOB_NO_CHOICES, "timer interrupts per second")
 *
 * An ENUM knob adds its choice list right here too; each X(CONSTANT, "name") yields both the
 * C constant (in enum knob_choice_<ident>, in order from 0) and the string the parser takes:
 *
 *   #define KNOB_CHOICES_IDLE(X) X(IDLE_AUTO, "auto") X(IDLE_HALT, "halt") X(IDLE_POLL, "poll")
 *   K(idle, "idle", ENUM, IDLE_AUTO, 0, 0, KNOB_CHOICES_IDLE, "idle loop strategy")
 *
 * Kernel code then writes `if (knob(KNOB_idle) == IDLE_POLL)`. table.c rejects at compile
 * time a default outside its range, a wrong BOOL/ENUM range and over-long text. Afterwards
 * run `make knobs-doc` so docs/knobs.md shows the new knob (`make knobs-doc-check` fails
 * until it does).
 */
#ifndef IDLELAB_KERNEL_KNOB_TABLE_H
#define IDLELAB_KERNEL_KNOB_TABLE_H

#include <stdint.h>

#include "kernel/policy/haltpoll.h"

/* Times are stored in nanoseconds. */
#define KNOB_NS(n) ((int64_t)(n))
#define KNOB_US(n) ((int64_t)(n)*1000)
#define KNOB_MS(n) ((int64_t)(n)*1000000)
#define KNOB_S(n)  ((int64_t)(n)*1000000000)

/* timeline=: the most events a CPU records (kernel/timeline.c keeps a static pool). */
#define TIMELINE_MAX 4096

/* windows=: at most this many per boot (the host keeps a sample per marker). */
#define WINDOWS_MAX 10000
/* window_gap='s default, measured on the nested host from the kvm_halt_poll_ns trace
 * (docs/windows.md): KVM's and the guest's windows settle within it after any switch. */
#define WINDOW_GAP_DEFAULT_MS 50

/* The choices column of every non-ENUM knob. */
#define KNOB_NO_CHOICES(X)

#define KNOB_CHOICES_PANIC_TEST(X)                                                                 \
	X(PANIC_TEST_NONE, "none")                                                                 \
	X(PANIC_TEST_UD, "ud")                                                                     \
	X(PANIC_TEST_DE, "de")                                                                     \
	X(PANIC_TEST_PF, "pf")                                                                     \
	X(PANIC_TEST_GP, "gp")                                                                     \
	X(PANIC_TEST_NULL, "null")

// clang-format off
#define KNOB_CHOICES_HZ(X) X(HZ_0, "0") X(HZ_100, "100") X(HZ_250, "250") X(HZ_1000, "1000")

#define KNOB_CHOICES_SELFTEST(X) \
	X(SELFTEST_NONE, "none") X(SELFTEST_SCHED, "sched") X(SELFTEST_WAKEUP, "wakeup")

#define KNOB_CHOICES_IDLE(X) \
	X(IDLE_AUTO, "auto") X(IDLE_HALT, "halt") X(IDLE_POLL, "poll") X(IDLE_HALTPOLL, "haltpoll")

#define KNOB_CHOICES_HOSTPOLL(X) X(HOSTPOLL_AUTO, "auto") X(HOSTPOLL_ON, "on") X(HOSTPOLL_OFF, "off")

#define KNOB_CHOICES_BENCH(X) X(BENCH_NONE, "none") X(BENCH_SCHED, "sched") X(BENCH_EXITS, "exits")

#define KNOB_CHOICES_WORKLOAD(X) \
	X(WORKLOAD_NONE, "none") X(WORKLOAD_PINGPONG, "pingpong") X(WORKLOAD_PERIODIC, "periodic") \
	X(WORKLOAD_IDLE, "idle") X(WORKLOAD_RANDOM, "random") X(WORKLOAD_PIPELINE, "pipeline")

#define KNOB_CHOICES_GOVERNOR(X) X(GOVERNOR_HALTPOLL, "haltpoll") X(GOVERNOR_PREDICT, "predict")

#define KNOB_CHOICES_PINGPONG_MODE(X) X(PINGPONG_BLOCK, "block") X(PINGPONG_SPIN, "spin")

#define KNOB_CHOICES_DIST(X) X(DIST_EXP, "exp") X(DIST_UNIFORM, "uniform") X(DIST_BIMODAL, "bimodal")

#define KNOB_TABLE(K) \
	K(help, "help", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "print every knob with its type, default and range, then exit") \
	K(panic_test, "panic_test", ENUM, PANIC_TEST_NONE, 0, 0, KNOB_CHOICES_PANIC_TEST, \
	  "raise a deliberate CPU exception after boot (ud: invalid opcode, de: divide error, " \
	  "pf: page fault at an unmapped address, gp: general protection, null: a read through " \
	  "a null struct pointer, which the absent page 0 turns into a page fault) to test the " \
	  "exception dump") \
	K(verbose, "verbose", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "print extra boot diagnostics") \
	K(boot_timeout, "boot_timeout", TIME, KNOB_S(5), KNOB_MS(10), KNOB_S(600), KNOB_NO_CHOICES, \
	  "how long the BSP waits for each application processor to come online before " \
	  "failing the boot") \
	K(hz, "hz", ENUM, HZ_250, 0, 0, KNOB_CHOICES_HZ, \
	  "periodic tick rate per CPU; 0 = tickless: a CPU's timer is programmed only for its " \
	  "next real expiry, so an idle CPU takes no timer interrupts") \
	K(selftest, "selftest", ENUM, SELFTEST_NONE, 0, 0, KNOB_CHOICES_SELFTEST, \
	  "run an in-guest self test after boot and exit with its verdict (sched: cross-CPU " \
	  "wake-up ring, sleep accuracy floor, tick/tickless timer counts, IPI accounting; " \
	  "wakeup: cross-CPU wake-ups at random offsets around the poll window, none may be " \
	  "lost)") \
	K(bench, "bench", ENUM, BENCH_NONE, 0, 0, KNOB_CHOICES_BENCH, \
	  "run a benchmark after boot and print its numbers (sched: cross-CPU wake-up round " \
	  "trip and timer lateness; exits: ns per op of instructions, VM exits, IPIs, wakes " \
	  "and the timer); never a pass/fail verdict") \
	K(iters, "iters", INT, 2000, 1, 100000000, KNOB_NO_CHOICES, \
	  "samples a benchmark takes (round trips, sleeps, timed batches), or wake-ups " \
	  "selftest=wakeup fires, or pingpong's round trips when no bench= runs first") \
	K(watchdog, "watchdog", TIME, KNOB_S(120), KNOB_S(1), KNOB_S(3600), KNOB_NO_CHOICES, \
	  "a self test or benchmark still running after this long fails with exit code " \
	  "WATCHDOG; selftest=wakeup counts its wake-ups as progress, so there the bound is " \
	  "on a silence (no wake-up fired for this long; a hang ends within twice it), not " \
	  "on the run's length") \
	K(idle, "idle", ENUM, IDLE_AUTO, 0, 0, KNOB_CHOICES_IDLE, \
	  "idle policy: halt (plain HLT), poll (never halt; an experiment that pins a host " \
	  "CPU), haltpoll (adaptive guest polling, Linux's cpuidle-haltpoll), auto (haltpoll " \
	  "if KVM gives the REALTIME hint or cpuidle_haltpoll.force=1, else halt)") \
	K(haltpoll_force, "cpuidle_haltpoll.force", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "let idle=auto choose haltpoll without the host's REALTIME hint (Linux's knob)") \
	K(governor, "cpuidle.governor", ENUM, GOVERNOR_HALTPOLL, 0, 0, KNOB_CHOICES_GOVERNOR, \
	  "idle=haltpoll's governor (Linux's boot parameter): haltpoll (Linux's, exact) or " \
	  "predict (haltpoll, except on haltpoll's plateau: there a halt timed to end just " \
	  "before the predicted wake-up, then a short poll)") \
	K(guest_halt_poll_ns, "haltpoll.guest_halt_poll_ns", TIME, \
	  KNOB_NS(HALTPOLL_DEFAULT_POLL_NS), 0, KNOB_NS(4294967295), KNOB_NO_CHOICES, \
	  "largest guest poll window, and the line between short and long sleeps") \
	K(guest_halt_poll_grow, "haltpoll.guest_halt_poll_grow", INT, HALTPOLL_DEFAULT_GROW, 0, \
	  4294967295, KNOB_NO_CHOICES, "window multiplier after a short halt the poll missed") \
	K(guest_halt_poll_shrink, "haltpoll.guest_halt_poll_shrink", INT, HALTPOLL_DEFAULT_SHRINK, \
	  0, 4294967295, KNOB_NO_CHOICES, "window divisor after a long halt; 0 drops the window to 0") \
	K(guest_halt_poll_grow_start, "haltpoll.guest_halt_poll_grow_start", TIME, \
	  KNOB_NS(HALTPOLL_DEFAULT_GROW_START), 0, KNOB_NS(4294967295), KNOB_NO_CHOICES, \
	  "first non-zero window; a shrunk window below it collapses to 0") \
	K(guest_halt_poll_allow_shrink, "haltpoll.guest_halt_poll_allow_shrink", BOOL, 1, 0, 1, \
	  KNOB_NO_CHOICES, "0: long halts never shrink the window") \
	K(haltpoll_legacy_shrink, "haltpoll.legacy_shrink", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "shrink by division only, as Linux did before 6.9 (the window decays through every " \
	  "fraction instead of collapsing to 0 below grow_start)") \
	K(steal_threshold, "haltpoll.steal_threshold", INT, 0, 0, 100, KNOB_NO_CHOICES, \
	  "suspend guest polling on a CPU while its steal time over the last 10 ms interval " \
	  "is above this % (kvm-steal-time; the CPU halts instead); 0 = off") \
	K(latency_req_zero, "cpuidle.latency_req_zero", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "act as if a PM QoS request of 0 us were active: haltpoll always polls (select row 1, " \
	  "including Linux's W=0 fallback that stores TICK_NSEC/16 into the window)") \
	K(pollflag, "pollflag", BOOL, 1, 0, 1, KNOB_NO_CHOICES, \
	  "a polling CPU advertises POLLING so wakers skip the IPI; off: always send it") \
	K(workload, "workload", ENUM, WORKLOAD_NONE, 0, 0, KNOB_CHOICES_WORKLOAD, \
	  "what to run and measure after boot: pingpong (pairs hand a token across CPUs), " \
	  "periodic (each CPU sleeps a constant period), idle (nothing; only the tick), random " \
	  "(sleeps drawn from dist=), pipeline (a token travels a ring of all CPUs)") \
	K(duration, "duration", TIME, KNOB_S(1), KNOB_MS(1), KNOB_S(3600), KNOB_NO_CHOICES, \
	  "length of a workload's measured window (pingpong: unless iters= is given)") \
	K(warmup, "warmup", TIME, KNOB_MS(100), 0, KNOB_S(600), KNOB_NO_CHOICES, \
	  "how long a workload runs before its measured window opens") \
	K(cpus, "cpus", MASK, 0, 0, 0x7fffffffffffffff, KNOB_NO_CHOICES, \
	  "bit mask of the CPUs a workload uses (0x5 = CPUs 0 and 2); 0 = all; the rest idle") \
	K(pairs, "pairs", INT, 1, 1, 32, KNOB_NO_CHOICES, \
	  "pingpong: thread pairs; pair k uses the 2k-th and (2k+1)-th CPU of cpus=") \
	K(pingpong_mode, "pingpong.mode", ENUM, PINGPONG_BLOCK, 0, 0, KNOB_CHOICES_PINGPONG_MODE, \
	  "pingpong: block (hand the token through thread_wake and thread_block: the wake-up " \
	  "path under test) or spin (both threads spin on the token, no scheduler, no idle: " \
	  "the floor of a cross-CPU round trip on this machine)") \
	K(think, "think", TIME, 0, 0, KNOB_S(1), KNOB_NO_CHOICES, \
	  "pingpong: the initiator sleeps this long between round trips, so the other side " \
	  "idles longer") \
	K(period, "period", TIME, KNOB_US(250), KNOB_US(1), KNOB_S(10), KNOB_NO_CHOICES, \
	  "periodic: each CPU's sleep period") \
	K(dist, "dist", ENUM, DIST_EXP, 0, 0, KNOB_CHOICES_DIST, \
	  "random: sleep-length distribution (exp: mean; uniform: mean +- spread; bimodal: " \
	  "mean - spread or mean + spread, half each)") \
	K(mean, "mean", TIME, KNOB_US(500), KNOB_US(1), KNOB_S(10), KNOB_NO_CHOICES, \
	  "random: mean sleep length") \
	K(spread, "spread", TIME, KNOB_US(250), 0, KNOB_S(10), KNOB_NO_CHOICES, \
	  "random: half-width of uniform, or the offset of bimodal's two modes") \
	K(seed, "seed", INT, 1, 0, 0x7fffffffffffffff, KNOB_NO_CHOICES, \
	  "random: PRNG seed; the same seed gives the same sleep sequence per CPU") \
	K(wakeup_bound, "selftest.wakeup_bound", TIME, KNOB_MS(200), KNOB_MS(1), KNOB_S(60), \
	  KNOB_NO_CHOICES, "selftest=wakeup: a wake-up whose measured latency exceeds this " \
	  "counts as late (one not seen within 50 times this long, as lost); either fails " \
	  "the run") \
	K(windows, "windows", INT, 1, 1, WINDOWS_MAX, KNOB_NO_CHOICES, \
	  "measured windows per boot, each numbered, with its own markers and records " \
	  "(given, even as 1); window_sync=1: the host may switch settings before each") \
	K(window_gap, "window_gap", TIME, KNOB_MS(WINDOW_GAP_DEFAULT_MS), 0, KNOB_S(60), \
	  KNOB_NO_CHOICES, "windows= given: how long the workload runs unmeasured before each " \
	  "window, after its settings changed, so the guest's and KVM's poll windows adapt") \
	K(window_hold, "window_hold", TIME, 0, 0, KNOB_S(10), KNOB_NO_CHOICES, \
	  "after each measurement-window marker, CPU 0 busy-waits this long without halting " \
	  "so the host can read KVM's counters at the marker") \
	K(window_sync, "window_sync", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "at each measurement-window marker every CPU stops at a barrier (no HLT), the guest " \
	  "snapshots its counters, prints the marker and waits for the host's acknowledgement " \
	  "(a byte on COM1) before any CPU resumes; off: no waiting (a plain boot)") \
	K(window_sync_timeout, "window_sync_timeout", TIME, KNOB_S(5), KNOB_MS(1), KNOB_S(600), \
	  KNOB_NO_CHOICES, "window_sync=1: how long the guest waits for the CPUs to reach the " \
	  "barrier and for the host's acknowledgement before failing with SYNC_TIMEOUT") \
	K(record_spool, "record_spool", BOOL, 0, 0, 1, KNOB_NO_CHOICES, \
	  "a workload's records after each window go to guest memory, the console carries a " \
	  "`spool` line pointing at them: only for a host that reads guest RAM (the bench " \
	  "harness shares it and puts them back in place); without one they are not seen") \
	K(hostpoll, "hostpoll", ENUM, HOSTPOLL_AUTO, 0, 0, KNOB_CHOICES_HOSTPOLL, \
	  "MSR_KVM_POLL_CONTROL per CPU: auto writes 0 (host must not poll) where the guest " \
	  "polls (idle=haltpoll or poll) and 1 elsewhere; on/off force 1/0") \
	K(timeline, "timeline", INT, 0, 0, TIMELINE_MAX, KNOB_NO_CHOICES, \
	  "events each CPU records from the opening of a workload's window (thread runs, poll, " \
	  "halt, idle ends, wakes, IPIs, sleeps) until full or the window closes, printed after " \
	  "the result as `timeline` records (tools/timeline draws them); 0 = off")
// clang-format on

#endif
