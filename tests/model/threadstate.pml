/*
 * A thread's state word and its wake-ups, as kernel/sched.c implements them: thread_block()
 * and thread_wake() decide on one word (state | WAKE_PENDING) by compare-and-swap, and a
 * BLOCKED thread is queued on its CPU's wake list by the one waker whose CAS made it
 * RUNNABLE. One thread waits for events with the usual `while (!cond) thread_block();`;
 * two wakers each post an event (cond) and then call thread_wake().
 *
 * Checked: a woken thread is queued at most once (queued <= 1), and no wake-up is lost:
 * when both wakers are done, the thread is not left BLOCKED, unqueued, with an event it has
 * not seen (assertion in the monitor; and, as liveness, it eventually sees every event).
 * The broken variants must be caught: BROKEN_SPLIT keeps WAKE_PENDING in a word of its own,
 * read and written separately from the state (the race the one word exists to close);
 * BROKEN_NOCAS lets a waker test for BLOCKED and then write RUNNABLE in two steps.
 *
 * Memory order. x86 is not sequentially consistent: a store may wait in its CPU's store
 * buffer past that CPU's later loads (TSO), and only a locked instruction or a fence drains
 * it. So a waker's post of its event is buffered here (sb[i]) and reaches `events` only when
 * drained: at any moment, at latest at the waker's next CAS or fence, and before it is done.
 * A waker that finds a wake already pending takes no locked instruction, so without the fence
 * of thread_wake() its event could still be buffered while the thread consumes the pending
 * wake, re-tests the condition and blocks: BROKEN_NOFENCE leaves the fence out.
 */
#define RUNNABLE 1
#define RUNNING	 2
#define BLOCKED	 3
#define PEND	 8

byte state = RUNNING;	/* low bits: the state; PEND: WAKE_PENDING */
bool pend_split;	/* BROKEN_SPLIT only: the pending flag as a separate word */
byte queued;		/* entries for the thread on its CPU's wake list / run queue */
byte events;		/* events posted (the condition the thread waits on) */
byte seen;		/* events the thread has consumed */
byte done;		/* wakers finished */
bool sb[2];		/* waker i's event still in its store buffer */

/* The store buffer of waker i reaches memory. */
inline drain(i) {
	atomic { if :: sb[i] -> sb[i] = false; events++ :: else -> skip fi }
}

inline cas(expect, new, ok) {
	atomic {
		if
		:: state == expect -> state = new; ok = true
		:: else -> expect = state; ok = false
		fi
	}
}

/* The thread's CPU: it runs the thread, or (thread BLOCKED) its scheduler picks the queued
 * thread, which sets RUNNING again keeping PEND (schedule(): state_set). */
active proctype cpu()
{
	byte old;
	bool ok;
loop:
	if
	:: seen < events -> seen = events	/* the condition holds: consume it */
	:: seen == events && done == 2 -> goto out
	:: seen == events ->			/* thread_block() */
#ifdef BROKEN_SPLIT
		if
		:: pend_split -> pend_split = false; goto loop
		:: else -> state = BLOCKED
		fi;
#else
		old = state;
again:
		if
		:: (old & PEND) -> cas(old, old & ~PEND, ok); if :: ok -> goto loop :: else -> goto again fi
		:: else -> cas(old, BLOCKED, ok); if :: !ok -> goto again :: else fi
		fi;
#endif
		/* schedule(): off the CPU until the wake list hands the thread back */
		atomic { queued > 0 -> queued--; state = (state & PEND) | RUNNING }
	fi;
	goto loop;
out:
	skip
}

active [2] proctype waker()
{
	byte old;
	bool ok;

	byte me = _pid - 1;	/* cpu() is pid 0 */

	sb[me] = true;		/* post the event: into the store buffer */
	if :: drain(me) :: skip fi;	/* it may reach memory at once, or later */
#ifdef BROKEN_SPLIT
	if
	:: state == BLOCKED -> state = RUNNABLE; queued++
	:: else -> pend_split = true
	fi;
#elif defined(BROKEN_NOCAS)
	if
	:: (state & ~PEND) == BLOCKED -> state = RUNNABLE; queued++
	:: else -> atomic { state = state | PEND }
	fi;
#else
	old = state;
#ifndef BROKEN_NOFENCE
	if :: (old & PEND) -> drain(me); old = state :: else fi	/* the fence, and look again */
#endif
retry:
	if
	:: (old & ~PEND) == BLOCKED -> drain(me); cas(old, RUNNABLE, ok);	/* locked */
		if :: ok -> queued++ :: else -> goto retry fi	/* wake_list_push */
	:: (old & ~PEND) != BLOCKED && (old & PEND) -> skip
	:: (old & ~PEND) != BLOCKED && !(old & PEND) -> drain(me); cas(old, old | PEND, ok);
		if :: !ok -> goto retry :: else fi
	fi;
#endif
	drain(me);		/* the buffer empties eventually; the checks start after */
	done++
}

/* Safety: never queued twice; never a lost wake-up once the wakers are done. */
active proctype monitor()
{
	do
	:: assert(queued <= 1)
	:: assert(!(done == 2 && (state & ~PEND) == BLOCKED && queued == 0 && seen < events))
	od
}

ltl seen_all { <>(seen == 2) }
