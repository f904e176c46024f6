/*
 * POLL-flag wakeup protocol (spec 3.4-3.5): one idle CPU, two wakers.
 *
 * The idle CPU's flag word holds NEED_RESCHED and POLLING and is only ever changed by atomic
 * read-modify-writes (R1), modelled as single atomic steps. Each waker publishes work (a
 * run-queue counter) BEFORE its RMW, then does old = fetch_or(NEED_RESCHED) and sends an IPI
 * iff old had no POLLING (otherwise the IPI is elided).
 *
 * Idle side, as our kernel does it (the simplification 3.2 allows: POLLING stays set from idle
 * entry through the poll loop and is cleared once before HLT):
 *   loop { set POLLING; poll until NEED_RESCHED (leave) or the window expires;
 *          cli; clear POLLING; re-test NEED_RESCHED (set: sti, leave);
 *          sti; hlt  -- STI's one-instruction shadow: an IPI pending at STI ends the HLT }
 *   leave: clear POLLING and NEED_RESCHED (one fetch_and), then drain the run queue, loop.
 *
 * Invariants (spec 3.5 wording):
 *  I1 No lost wakeup: the CPU never remains in HLT while its NEED_RESCHED is set or its
 *     queue is non-empty with no interrupt pending. Checked two ways, both exhaustively:
 *     (a) a monitor asserts, in every reachable state, that the CPU is never halted with
 *         NEED_RESCHED set and no IPI pending or owed (owed = a waker has decided, in its RMW
 *         step, to send one and has not yet written the ICR);
 *     (b) in the HLT wait, "timeout" (Spin: no process can move, i.e. the system is stuck
 *         for good because the wakers are bounded) asserts that all work was consumed. This
 *         also catches losses where NEED_RESCHED itself got cleared (BROKEN_EXIT_ORDER),
 *         which (a) cannot see; the "drained" LTL property states it as liveness.
 *  I2 Sound IPI elision: an IPI is skipped only if the waker's atomic RMW observed POLLING
 *     set, and every skipped IPI corresponds to a wake whose target was in the polling part
 *     of idle at the RMW instant. Asserted inside the RMW step: the literal half (old has
 *     POLLING) and the meaningful half against a ghost, will_see, that is true exactly while
 *     the idle CPU is at a point from which it will test NEED_RESCHED (or drain) again before
 *     HLT without help from an interrupt (R2 / I5).
 *
 * How Spin checks this (tests/model/check.sh): a full, non-bitstate safety search (pan built
 * with -DSAFETY -DNOCLAIM) visits every reachable state, so the monitor and the in-step
 * asserts are checked in all of them, and "timeout" fires in every reachable deadlock; invalid
 * end states are reported too. A second search (pan -a) looks for acceptance cycles of the
 * negated "drained" claim; Spin extends a terminal state by stuttering, so "stuck in HLT with
 * work > 0 for ever" is such a cycle. The wakers are bounded, so the correct model has no
 * cycles at all and needs no fairness assumption; the poll loop is a choice point, and the
 * idle process simply not being scheduled there is what models spinning.
 *
 * Broken variants (spin -D...), each of which check.sh requires Spin to catch:
 *  BROKEN            clear POLLING and HLT without re-testing NEED_RESCHED (I1 and I2 fail)
 *  BROKEN_STI        sti before the re-test: an IPI can be taken and consumed in the window
 *                    between the test and HLT, then HLT sleeps with work pending (I1 fails)
 *  BROKEN_EXIT_ORDER on leaving idle, drain the queue before clearing NEED_RESCHED: a wake
 *                    landing in between is erased (I1 (b) fails)
 * ONLY_I2 switches the I1 checks off so that check.sh can show I2 alone catches BROKEN.
 */

#define NR 1 /* NEED_RESCHED */
#define PL 2 /* POLLING */
#define NWAKERS 2
#define WAKES 2 /* wakes per waker: keeps the state space tiny, every loss needs only one */

byte flags = 0;            /* the idle CPU's flag word: NR | PL */
byte work = 0;             /* published, not yet consumed run-queue items */
bool ipi_pending = false;  /* LAPIC IRR bit of the wakeup vector (coalesces like IRR) */
byte ipi_owed = 0;         /* ghost: IPIs decided in an RMW step but not yet sent */
bool irq_on = true;        /* idle CPU's RFLAGS.IF */
bool halted = false;       /* idle CPU is inside HLT */
bool will_see = false;     /* ghost for I2, see above */
byte wakers_done = 0;
byte avoided = 0;          /* statistics: elided IPIs */
byte sent = 0;             /* statistics: sent IPIs */

ltl drained { [] ((work > 0) -> <> (work == 0)) }

/* The idle CPU's local APIC: delivers a pending IPI whenever interrupts are enabled. If the
 * CPU is in HLT this ends the HLT; otherwise the handler just consumes it (its only job,
 * making the CPU see NEED_RESCHED, was done by the waker's RMW). sti;hlt is one atomic step
 * below, so nothing can be delivered between them: that is the STI shadow. */
active proctype lapic()
{
end_lapic:
	do
	:: atomic { ipi_pending && irq_on -> ipi_pending = false; halted = false }
	od
}

active proctype idle()
{
idle_entry:
	atomic { flags = flags | PL; will_see = true }	/* fetch_or(POLLING) */

	/* Poll: interrupts on; leave when NEED_RESCHED is seen, or let the window expire at
	 * any moment (nondeterministic; not being scheduled models spinning). */
	if
	:: (flags & NR) -> goto leave
#ifdef BROKEN
	:: atomic { true -> will_see = false }	/* no test follows before HLT */
#else
	:: true
#endif
	fi;

	irq_on = false;				/* cli */
	atomic { flags = flags & ~PL }		/* fetch_and(~POLLING) */
#ifndef BROKEN
#ifdef BROKEN_STI
	irq_on = true;				/* sti too early: window opens */
#endif
	/* Re-test after the clear (same word, program order): case A of spec 3.4. */
	if
	:: (flags & NR) -> irq_on = true; goto leave	/* sti; halt aborted */
	:: else -> will_see = false		/* committed to HLT */
	fi;
#endif

	atomic { irq_on = true; halted = true }	/* sti; hlt (shadow: one step) */
	if
	:: !halted -> skip			/* an IPI ended the HLT */
	:: timeout ->
		/* I1 (b): stuck in HLT for good; only fine if nothing is left to do. */
#ifndef ONLY_I2
		assert(wakers_done == NWAKERS && work == 0 && (flags & NR) == 0);
#endif
		goto stuck_ok
	fi;
	if
	:: (flags & NR) -> goto leave
	:: else -> goto idle_entry
	fi;

leave:
#ifdef BROKEN_EXIT_ORDER
	atomic { flags = flags & ~PL }
	work = 0;				/* drain first ... */
	atomic { flags = flags & ~NR }		/* ... then clear: erases a wake in between */
#else
	atomic { flags = flags & ~(PL | NR) }	/* leave the polling part; consume the request */
	work = 0;				/* drain: everything published before any seen RMW */
#endif
	goto idle_entry;

stuck_ok:
	skip
}

proctype waker()
{
	byte i = 0;
	bool old_polling;

	do
	:: i < WAKES ->
		work++;				/* publish before the RMW (spec 3.4) */
		atomic {
			/* old = fetch_or(NEED_RESCHED); decide from the old value */
			old_polling = (flags & PL) != 0;
			flags = flags | NR;
			if
			:: old_polling ->
				assert(old_polling);	/* I2, literal: POLLING seen at the RMW */
				assert(will_see);	/* I2: target really is in the polling part */
				avoided++
			:: else -> ipi_owed++
			fi
		}
		if
		:: !old_polling -> atomic { ipi_pending = true; ipi_owed--; sent++ }	/* ICR write */
		:: else -> skip
		fi;
		i++
	:: else -> break
	od;
	wakers_done++
}

/* I1 (a): never halted with NEED_RESCHED set and no interrupt pending or on its way. Blocks
 * (validly) unless the bad state is reachable; Spin tries it in every reachable state. */
#define LOST_WAKEUP (halted && (flags & NR) && !ipi_pending && ipi_owed == 0)

#ifndef ONLY_I2
active proctype monitor()
{
end_monitor:
	atomic { LOST_WAKEUP -> assert(!LOST_WAKEUP) }
}
#endif

init
{
	atomic {
		run waker();
		run waker()
	}
}
