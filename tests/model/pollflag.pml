/*
 * The reschedule wake-up protocol with POLL-flag IPI elision and IPI_PENDING, as implemented
 * in kernel/sched.c and kernel/idle.c (docs/haltpoll-spec.md §3.1-3.5): one target CPU, two
 * remote wakers.
 * Every step below names the kernel code it mirrors (file:function), so that the model can be
 * compared with the kernel line by line.
 *
 * State (kernel/percpu.h): the target's flag word, struct cpu.flags, with NEED_RESCHED (NR),
 * POLLING (PL) and IPI_PENDING (IP); every change is an atomic read-modify-write, modelled as
 * one atomic step (the waker's CAS loop as its one successful CAS). "work" counts threads a
 * waker has pushed on the target's wake list that no schedule() has taken yet. schedule()
 * takes them all at once, as the kernel's exchange of the list head does (it then runs one
 * and the rest are run by the schedule() that the running thread reaches by blocking or being
 * preempted); what matters for the protocol, that NEED_RESCHED is cleared before the list is
 * taken, is kept.
 *
 * The target: process "idle" is the whole CPU. It runs the idle thread's loop
 * (sched.c:sched_idle_loop around idle.c:idle_until_work) and, when schedule() found work,
 * "a thread" (any non-idle thread: it computes with IF on, possibly for ever, and may block,
 * i.e. call thread_block() -> schedule(); the kernel's thread_block() mostly takes the
 * idle-in-place case itself, block_in_place(): idle_in_place() idles until NEED_RESCHED, then
 * take_woken() clears it and takes the list, the same steps in the same order as idle, then
 * schedule(), here).
 * Interrupt handlers run on the same
 * process: at each point where IF is on, the CPU may accept the reschedule IPI and jump to
 * sched.c:resched_interrupt, which returns to the interrupted point (irq_ret).
 *
 * The target's local APIC, for the reschedule vector: irr = its IRR bit (one bit: an IPI
 * arriving while it is set merges into it), isr = its ISR bit. The CPU accepts the interrupt
 * when IF is on and the vector is not in service: IRR -> ISR, IF cleared by the interrupt gate
 * (arch/x86/desc.c GATE_INTERRUPT), HLT ends. apic_eoi() clears ISR. So an IPI sent after
 * acceptance -- even while the handler runs, between its IPI_PENDING clear and apic_eoi() --
 * lands in the cleared IRR and is taken after the handler's IRET: not a merge. (If IRR were
 * only cleared at EOI, that window would be a merge.) Acceptance is optional while the idle
 * loop runs, which models delivery latency (a sent but unaccepted IPI is "in flight", and a
 * second send would merge with it); a running thread cannot keep computing past a pending
 * IPI, and in HLT accepting it is the only way on.
 *
 * Configurations (spin -D...): IDLE=HALTPOLL (default; the governor chooses poll or halt
 * freely at every entry), IDLE=HALT (halt only), IDLE=POLL (poll without a window);
 * POLLFLAG=1 (default) or 0 (the pollflag knob off: POLLING is never set).
 *
 * Properties, checked exhaustively by tests/model/check.sh:
 *  I1 No lost wake-up. (a) The monitor asserts in every reachable state that the CPU is never
 *     in HLT with NEED_RESCHED set and no IPI pending or owed (owed: a waker has decided, in
 *     its CAS, to send one and has not yet written the ICR). (b) Where the CPU can wait for
 *     ever (HLT; idle=poll's poll loop), "timeout" (Spin: no process can move: the wakers are
 *     done, nothing is pending) asserts that all work was picked and NEED_RESCHED is clear;
 *     this also sees losses where NEED_RESCHED itself was erased, which (a) cannot. (c) LTL
 *     "drained": work is always eventually picked, under weak fairness (a waker that can move
 *     eventually does). Since a thread may compute for ever, (c) also requires that a wake
 *     aimed at a busy CPU preempts it through the IPI (sched_irq_exit -> schedule()).
 *  I2 Sound elision: when a waker counts ipi_avoided, POLLING was set in the value its CAS
 *     replaced, and the CPU was at a point from which it will test NEED_RESCHED again before
 *     it halts or runs a thread, with no help from an interrupt (WILL_SEE). Asserted in the
 *     CAS step.
 *  Exact accounting: no IPI is ever sent while the previous one is still in IRR (asserted at
 *     the send: it would merge), and when all is quiet (b) ipi_sent == ipi_received.
 *  R2 POLLING is never set while the CPU runs a non-idle thread (monitor).
 *
 * Broken variants (spin -D...), which check.sh requires Spin to catch:
 *  BROKEN            the poll state, when its window expires, clears POLLING and halts
 *                    directly, with no NEED_RESCHED re-test (I1 and I2 fail)
 *  BROKEN_STI        halt_state enables interrupts before its NEED_RESCHED test: an IPI
 *                    taken between the test and HLT is consumed and HLT sleeps (I1 fails)
 *  BROKEN_EXIT_ORDER schedule() picks from the run queue before it clears NEED_RESCHED: a
 *                    wake landing in between is erased (I1 (b) and (c) fail)
 *  BROKEN_IPI_LEAK   resched_interrupt does not clear IPI_PENDING: later wakers believe an
 *                    IPI is in flight and send none (I1 fails: lost wake-up)
 *  BROKEN_MERGE      the waker ignores IPI_PENDING: a second IPI can merge into a pending one
 *                    (no-merge assertion fails)
 *  BROKEN_R2         the poll state leaves POLLING set when it returns because work arrived
 *                    (idle.c:poll_end) (R2)
 *  BROKEN_IRQ_EXIT   sched_irq_exit never calls schedule(): a busy thread is not preempted
 *                    (I1 (c) fails)
 * ONLY_I2 switches the I1 checks off so that check.sh can show I2 alone catches BROKEN.
 *
 * -DLOCAL_WAKE lets the running thread wake a thread of its own CPU (sched.c:thread_wake ->
 * sched_resched_cpu, c == me: NEED_RESCHED set, no IPI, no schedule()); check.sh then checks
 * "remote_drained": a remote wake is never stuck behind that local NEED_RESCHED. (It was,
 * when wakers also skipped the IPI for a NEED_RESCHED already set; -DBROKEN_NR_SKIP.)
 */

#define NR 1 /* CPU_NEED_RESCHED (kernel/percpu.h) */
#define PL 2 /* CPU_POLLING */
#define IP 4 /* CPU_IPI_PENDING */
#define NWAKERS 2
#ifndef WAKES
#define WAKES 2 /* wakes per waker (check.sh default); -DWAKES=n for a deeper search */
#endif

#define HALTPOLL 0
#define HALT 1
#define POLL 2
#ifndef IDLE
#define IDLE HALTPOLL
#endif
#ifndef POLLFLAG
#define POLLFLAG 1
#endif

byte flags = 0;             /* the idle CPU's cpus[c].flags: NR | PL | IP */
byte work = 0;              /* queued on its run queue, not yet picked by schedule() */
bool irr = false;           /* LAPIC IRR bit of VEC_RESCHED */
bool isr = false;           /* LAPIC ISR bit of VEC_RESCHED */
byte ipi_owed = 0;          /* ghost: IPIs decided by a CAS, ICR not yet written */
bool irq_on = false;        /* RFLAGS.IF of the idle CPU */
bool halted = false;        /* the idle CPU is inside HLT */
bool hlt_committed = false; /* ghost: past its last NEED_RESCHED test before HLT */
bool running = false;       /* c->current != c->idle: a non-idle thread runs */
byte wakers_done = 0;
byte sent = 0;              /* stats.ipi_sent, summed over the wakers */
byte received = 0;          /* stats.ipi_received of the idle CPU */
byte avoided = 0;           /* stats.ipi_avoided, summed over the wakers */
#ifdef LOCAL_WAKE
byte rwork = 0;             /* the part of work that remote wakers queued */
bool local_woken = false;   /* the one local wake happened */
#endif

/* I2: the idle CPU will test NEED_RESCHED again (idle.c:idle_until_work, poll_wait's loop
 * or halt_state) before it halts or runs a thread, without needing an interrupt. */
#define WILL_SEE (!running && !hlt_committed)

ltl drained { [] ((work > 0) -> <> (work == 0)) }
#ifdef LOCAL_WAKE
ltl remote_drained { [] ((rwork > 0) -> <> (rwork == 0)) }
#define PICK_REMOTE rwork = 0
#else
#define PICK_REMOTE skip
#endif

/* sched.c:schedule, up to the switch. "picked": the run-queue pick found a thread. */
inline schedule()
{
#ifndef BROKEN_EXIT_ORDER
	atomic { flags = flags & ~NR };			/* __atomic_fetch_and(&c->flags, ~CPU_NEED_RESCHED) */
#endif
	atomic { picked = (work > 0); work = 0; PICK_REMOTE };	/* take_woken(): xchg; pick_next() */
#ifdef BROKEN_EXIT_ORDER
	atomic { flags = flags & ~NR };			/* cleared too late */
#endif
}

/* Nothing can move any more: the wakers are done and no interrupt is pending. */
inline quiet_checks()
{
	assert(wakers_done == NWAKERS);
#ifndef ONLY_I2
	assert(work == 0 && (flags & NR) == 0);		/* I1 (b) */
#endif
	assert(sent == received)			/* exact accounting */
}

/* Where an interrupt can be taken, and so where resched_interrupt returns to. */
#define AT_LOOP 1	/* the idle loop, between irq_enable() and the next irq_disable() */
#define AT_POLL0 2	/* poll_start, between irq_enable() and the fetch_or */
#define AT_POLL 3	/* poll_wait's loop */
#define AT_HLT 4	/* HLT */
#define AT_THREAD 5	/* a non-idle thread */
#define AT_STI1 6	/* BROKEN_STI: halt_state, before its test */
#define AT_STI2 7	/* BROKEN_STI: halt_state, between its test and HLT */

/* IF is on: the CPU accepts the pending reschedule IPI (hardware: IRR -> ISR; the interrupt
 * gate clears IF) and runs its handler, which returns to "at". An option, not forced: not
 * taking it yet models delivery latency (see the header). */
inline accept(at)
{
	atomic { irq_on && irr && !isr -> irr = false; isr = true; irq_on = false; irq_ret = at };
	goto resched_interrupt
}

active proctype idle()
{
	bool picked = false;	/* schedule(): next != c->idle */
	bool found = false;	/* poll_start(): work found at once */
	byte irq_ret = 0;	/* the interrupted context, AT_* */

loop:					/* sched_idle_loop / idle_until_work: */
	irq_on = false;				/* irq_disable() */
	if
	:: (flags & NR) ->			/* if (flags_load(c) & CPU_NEED_RESCHED) */
		schedule();			/*     schedule() */
		if
		:: picked -> picked = false; goto thread_runs	/* arch_switch to next */
		:: else -> goto loop_sti	/* next == prev: returns */
		fi
	:: else -> skip
	fi;
#if IDLE == HALTPOLL
	if					/* idle_entry_run: gov->select() */
	:: goto poll_state
	:: goto halt_state
	fi;
#elif IDLE == POLL
	goto poll_state;			/* poll_start(), poll_wait(c, NO_LIMIT, ...) */
#else
	goto halt_state;			/* halt_state(c) */
#endif

#if IDLE != HALT
poll_state:				/* idle.c:poll_start (called with interrupts off) */
	irq_on = true;				/* irq_enable() */
poll_window:
	do
	:: accept(AT_POLL0)
	:: break
	od;
#if POLLFLAG
	atomic { flags = flags | PL };		/* if (pf) fetch_or(POLLING) */
	found = (flags & NR) != 0;		/* immediate = flags_load(c) & NEED_RESCHED */
#endif
poll_loop:
	do					/* while (!work) { */
#if POLLFLAG
	:: found -> break
#endif
	:: !found && (flags & NR) -> break	/*   if (flags_load(c) & CPU_NEED_RESCHED) break (work) */
	:: accept(AT_POLL)			/*   an IPI while polling (interrupts on) */
#if IDLE == HALTPOLL
#ifdef BROKEN
	:: !found ->				/*   window expired: clear POLLING and HLT, no re-test */
		hlt_committed = true; irq_on = false;
		atomic { flags = flags & ~PL };
		goto hlt
#else
	:: !found -> break			/*   if (now - t0 > limit) break (window expired) */
#endif
#else
	:: !found && timeout ->			/*   idle=poll: polls for ever once quiet */
		quiet_checks(); goto quiet
#endif
	od;
	irq_on = false;				/* irq_disable() */
#if POLLFLAG
#ifdef BROKEN_R2
	if
	:: found || (flags & NR) -> skip	/* "work: nothing to clear" (wrong) */
	:: else -> atomic { flags = flags & ~PL }
	fi;
#else
	atomic { flags = flags & ~PL };		/* if (pollflag) fetch_and(~POLLING) */
#endif
#endif
	found = false;
	goto loop_sti;				/* return to idle_entry_run / idle_until_work */
#endif

#if IDLE != POLL
halt_state:				/* idle.c:halt_state (called with interrupts off) */
#ifdef BROKEN_STI
	irq_on = true;				/* sti too early */
sti1_window:
	do
	:: accept(AT_STI1)
	:: break
	od;
#endif
	if
	:: (flags & NR) -> goto loop_sti	/* flags_load & NEED_RESCHED: halts_aborted++, return */
	:: atomic { !(flags & NR) -> hlt_committed = true }	/* clear: on to HLT */
	fi;
#ifdef BROKEN_STI
sti2_window:				/* the window between the test and HLT */
	do
	:: accept(AT_STI2)
	:: break
	od;
#endif
hlt:
	atomic { irq_on = true; halted = true };	/* safe_halt(): sti; hlt -- STI shadow: one step */
	if
	:: atomic {				/* a pending IPI ends HLT; safe_halt returns after its handler */
		irr && !isr -> irr = false; isr = true; irq_on = false;
		halted = false; hlt_committed = false; irq_ret = AT_HLT
	   };
	   goto resched_interrupt
	:: timeout -> quiet_checks(); goto quiet	/* in HLT for good */
	fi;
#endif

thread_runs:				/* sched.c:schedule switched to a thread: it runs with IF on
					   (sched_thread_start: irq_enable / thread_block: irq_restore) */
	atomic { running = true; irq_on = true };
thread_window:
	do
	:: accept(AT_THREAD)			/* resched_interrupt -> sched_irq_exit -> schedule() */
	:: !irr -> skip				/* it computes, possibly for ever (a pending IPI, with
						   IF on, is taken or the thread blocks first) */
#ifdef LOCAL_WAKE
	:: !local_woken ->			/* sched.c:thread_wake of a thread of this CPU: */
		work++;				/*   wake_list_push() */
		atomic { flags = flags | NR };	/*   sched_resched_cpu, c == me: fetch_or only */
		local_woken = true
#endif
	:: break				/* the thread calls thread_block() */
	od;
	irq_on = false;				/* thread_block: irq_save() */
	schedule();				/* thread_block: schedule() */
	if
	:: picked -> picked = false; goto thread_runs	/* the next thread */
	:: else -> running = false		/* next == c->idle: arch_switch back into sched_idle_loop */
	fi;

loop_sti:
	irq_on = true;				/* sched_idle_loop: irq_enable(); (after schedule() too) */
loop_window:					/* IF on until the next irq_disable() */
	do
	:: accept(AT_LOOP)
	:: break
	od;
	goto loop;

resched_interrupt:			/* sched.c:resched_interrupt (IF off) */
#ifndef BROKEN_IPI_LEAK
	atomic { flags = flags & ~IP };		/* __atomic_fetch_and(&c->flags, ~CPU_IPI_PENDING) */
#endif
	atomic { isr = false; received++ };	/* apic_eoi(); c->stats.ipi_received++ */
	if					/* sched.c:sched_irq_exit */
#ifdef BROKEN_IRQ_EXIT
	:: false ->				/*   never reschedules */
#else
	:: running && (flags & NR) ->		/*   current != idle && NEED_RESCHED: */
#endif
		schedule(); picked = false	/*   schedule(); prev requeued: a thread runs */
	:: else -> skip				/*   in the idle loop: just return */
	fi;
	if					/* IRET: IF back on, resume the interrupted context */
	:: atomic { irq_ret == AT_LOOP -> irq_ret = 0; irq_on = true }; goto loop_window
	:: atomic { irq_ret == AT_THREAD -> irq_ret = 0; irq_on = true }; goto thread_window
#if IDLE != HALT
	:: atomic { irq_ret == AT_POLL0 -> irq_ret = 0; irq_on = true }; goto poll_window
	:: atomic { irq_ret == AT_POLL -> irq_ret = 0; irq_on = true }; goto poll_loop
#endif
#if IDLE != POLL
	:: atomic { irq_ret == AT_HLT -> irq_ret = 0; irq_on = true }; goto loop_window
						/* safe_halt returns; halt_state: irq_disable(); return;
						   idle_until_work: no flag access between, folded */
#ifdef BROKEN_STI
	:: atomic { irq_ret == AT_STI1 -> irq_ret = 0; irq_on = true }; goto sti1_window
	:: atomic { irq_ret == AT_STI2 -> irq_ret = 0; irq_on = true }; goto sti2_window
#endif
#endif
	fi;

quiet:
	skip
}

proctype waker()
{
	byte i = 0;
	byte old = 0;
	bool send = false;

	do
	:: i < WAKES ->
		work++;				/* sched.c:thread_wake: wake_list_push(), before the flags CAS */
#ifdef LOCAL_WAKE
		rwork++;
#endif
		atomic {			/* sched.c:sched_resched_cpu: the CAS loop's successful CAS */
			old = flags;
#ifdef BROKEN_MERGE
			send = !(old & PL);
#elif defined(BROKEN_NR_SKIP)
			send = !(old & (NR | IP | PL));
#else
			send = !(old & (IP | PL));
#endif
			if
			:: send -> flags = old | NR | IP; ipi_owed++
			:: else -> flags = old | NR
			fi;
			if
			:: !send && (old & PL) ->	/* if (!send) { if (old & CPU_POLLING) */
				assert(old & PL);	/* I2: POLLING was set in the replaced value */
				assert(WILL_SEE);	/* I2: and the idle CPU will see NEED_RESCHED */
				avoided++		/* me->stats.ipi_avoided++ */
			:: else -> skip
			fi
		}
		if
		:: send ->			/* me->stats.ipi_sent++; apic_send_ipi(VEC_RESCHED) */
			atomic { assert(!irr); irr = true; ipi_owed--; sent++ }
		:: else -> skip
		fi;
		d_step { old = 0; send = false; i++ }
	:: else -> break
	od;
	wakers_done++
}

/* I1 (a) and R2: state invariants. Each branch blocks (validly) unless its bad state is
 * reachable; Spin tries them in every reachable state. */
#define LOST_WAKEUP (halted && (flags & NR) && !irr && ipi_owed == 0)
#define R2_BROKEN (running && (flags & PL))

active proctype monitor()
{
end_monitor:
	if
#ifndef ONLY_I2
	:: atomic { LOST_WAKEUP -> assert(!LOST_WAKEUP) }
#endif
	:: atomic { R2_BROKEN -> assert(!R2_BROKEN) }
	fi
}

init
{
	atomic {
		run waker();
		run waker()
	}
}
