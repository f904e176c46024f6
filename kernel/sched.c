/*
 * The scheduler. Each thread is pinned to one CPU. Each CPU owns a FIFO run queue that only
 * it touches, in schedule() with interrupts off; other CPUs (and its own interrupt
 * handlers) hand it woken threads through its wake list, a lock-free stack they push onto
 * and schedule() empties in one exchange. No lock is taken anywhere on the wake-up path.
 *
 * A thread's state and its pending-wake bit share one word, changed only by compare-and-
 * swap: a waker that finds the thread BLOCKED makes it RUNNABLE and queues it; one that
 * finds it RUNNING or RUNNABLE sets WAKE_PENDING, and the thread's next thread_block()
 * consumes that instead of blocking. Because both sides decide on the same word, a wake
 * can neither slip between the thread's "nothing pending" and its BLOCKED, nor be queued
 * twice.
 *
 * The wake-up protocol (no wake-up is lost):
 *   waker:  push t on c's wake list, then atomically set NEED_RESCHED in c->flags; send
 *           the reschedule IPI iff the old value had neither IPI_PENDING nor POLLING, and
 *           in that case set IPI_PENDING in the same atomic step. (POLLING: the target is
 *           spinning on NEED_RESCHED; see kernel/idle.c.) A NEED_RESCHED already set is no
 *           reason to skip the IPI: a thread that woke a thread of its own CPU leaves it
 *           set and runs on, perhaps for a long time.
 *   target: schedule() atomically clears NEED_RESCHED *before* it empties its wake list and
 *           picks the next thread; the IPI handler clears IPI_PENDING, then reschedules if
 *           NEED_RESCHED is set; the idle loop tests NEED_RESCHED with interrupts off and
 *           halts with `sti; hlt`, so a pending IPI ends the halt.
 * Unless the target is polling, an interrupt reaches it after the waker's update (sent now,
 * or already in flight), and its handler (or the idle loop it returns to) sees NEED_RESCHED.
 * If the target is polling it sees NEED_RESCHED itself. And if the update comes before the
 * target's clear, the push came before it too, so the target's exchange, which follows its
 * clear, takes t. (tests/model/pollflag.pml checks this: its `work` is the wake list.)
 *
 * IPI_PENDING keeps at most one reschedule IPI in flight per CPU. Besides saving VM exits,
 * that makes the counters exact: two IPIs of one vector can merge in the target's IRR, so
 * without it "IPIs sent" could exceed "IPIs received" on a correct kernel.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/switch.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/vectors.h"
#include "kernel/idle.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/spinlock.h"
#include "kernel/timeline.h"
#include "kernel/timer.h"

/* The low byte of struct thread.state; WAKE_PENDING rides above it in the same word. */
enum thread_state {
	T_FREE,
	T_RUNNABLE, /* on its CPU's wake list or run queue */
	T_RUNNING,
	T_BLOCKED,
	T_DEAD, /* exited; its slot is freed once its CPU has switched away */
};
#define T_STATE	     0xffu
#define WAKE_PENDING 0x100u /* a wake arrived while the thread was not blocked */

struct thread {
	uint64_t rsp;	     /* saved by arch_switch */
	struct rq_link link; /* must stay the second member: see link_thread() */
	uint32_t state;	     /* enum thread_state | WAKE_PENDING; CAS only once shared */
	unsigned cpu;
	struct cpu *home;	  /* &cpus[cpu], for the waker */
	struct thread *wake_next; /* link in a CPU's wake list */
	void (*fn)(void *);
	void *arg;
	const char *name;
	struct timer sleep_timer;
	struct thread *next_free;
};

static struct thread threads[MAX_THREADS];
static uint8_t stacks[MAX_THREADS][THREAD_STACK] __attribute__((aligned(16)));
static struct thread idle_threads[MAX_CPUS];
static uint64_t tick_period; /* TSC cycles; 0 with hz=0 */
/* Each CPU's tick timer, touched only by that CPU: a line each. */
static struct tick {
	struct timer t;
} __attribute__((aligned(CACHELINE))) ticks[MAX_CPUS];
static struct thread *free_list;
static bool pool_ready;
static struct spinlock pool_lock;

static uint32_t state_load(const struct thread *t)
{
	return __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
}

static bool state_cas(struct thread *t, uint32_t *old, uint32_t new)
{
	return __atomic_compare_exchange_n(&t->state, old, new, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/*
 * RUNNABLE <-> RUNNING, keeping WAKE_PENDING: only the owning CPU makes this change and a
 * waker only ever adds WAKE_PENDING to such a thread, so one atomic xor does it, no loop.
 */
#define RUNNABLE_XOR_RUNNING (T_RUNNABLE ^ T_RUNNING)
static void state_flip_running(struct thread *t)
{
	__atomic_fetch_xor(&t->state, RUNNABLE_XOR_RUNNING, __ATOMIC_ACQ_REL);
}

static struct thread *link_thread(struct rq_link *l)
{
	return (struct thread *)((char *)l - __builtin_offsetof(struct thread, link));
}

static struct thread *pool_get(void)
{
	uint64_t flags = spin_lock_irqsave(&pool_lock);
	struct thread *t;

	if (!pool_ready) {
		for (int i = MAX_THREADS - 1; i >= 0; i--) {
			threads[i].next_free = free_list;
			free_list = &threads[i];
		}
		pool_ready = true;
	}
	t = free_list;
	if (t)
		free_list = t->next_free;
	spin_unlock_irqrestore(&pool_lock, flags);
	return t;
}

static void pool_put(struct thread *t)
{
	uint64_t flags = spin_lock_irqsave(&pool_lock);

	t->state = T_FREE;
	t->next_free = free_list;
	free_list = t;
	spin_unlock_irqrestore(&pool_lock, flags);
}

struct thread *thread_self(void)
{
	return this_cpu()->current;
}

unsigned thread_cpu(const struct thread *t)
{
	return t->cpu;
}

/* sched_resched_cpu() from a caller that knows its own CPU: inline on the wake-up path. */
static inline void resched(struct cpu *c, struct cpu *me)
{
	uint32_t old, new;
	bool send;

	if (c == me) {
		__atomic_fetch_or(&c->flags, CPU_NEED_RESCHED, __ATOMIC_SEQ_CST);
		return;
	}
	old = __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
	do {
		send = !(old & (CPU_IPI_PENDING | CPU_POLLING));
		new = old | CPU_NEED_RESCHED | (send ? CPU_IPI_PENDING : 0);
	} while (!__atomic_compare_exchange_n(&c->flags, &old, new, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	if (!send) {
		/* I2: the target was polling at our RMW, so it will see NEED_RESCHED itself
		 * (and would have even if no other IPI were due) */
		if (old & CPU_POLLING)
			me->stats.ipi_avoided++;
		timeline_rec((old & CPU_POLLING) ? TL_IPI_AVOIDED : TL_IPI_PENDING, c->id);
		return;
	}
#ifdef IDLELAB_FAULT_DROP_WAKE_IPI
	/* The fault build (build/idlelab-drop-ipi.elf): every Nth wake IPI is lost, as a
	 * broken wake path would lose it, and the target is left as if none were pending, so
	 * the next wake-up reaches it again; the tests' verdicts must blame the guest. */
	static uint64_t wake_ipis;
	if (__atomic_add_fetch(&wake_ipis, 1, __ATOMIC_RELAXED) % IDLELAB_FAULT_DROP_WAKE_IPI ==
	    0) {
		__atomic_fetch_and(&c->flags, ~CPU_IPI_PENDING, __ATOMIC_SEQ_CST);
		return;
	}
#endif
	me->stats.ipi_sent++;
	timeline_rec(TL_IPI_SENT, c->id);
	apic_send_ipi(c->apic_id, VEC_RESCHED);
}

void sched_resched_cpu(struct cpu *c)
{
	resched(c, this_cpu());
}

static void count_wakeup(const struct cpu *c, struct cpu *me)
{
	if (c == me)
		me->stats.wakeups_local++;
	else
		me->stats.wakeups_remote++;
}

/* Hands t to its CPU: the push that the target's schedule() will find (see the top). */
static void wake_list_push(struct cpu *c, struct thread *t)
{
	struct thread *head = __atomic_load_n(&c->wake_list, __ATOMIC_RELAXED);

	do
		t->wake_next = head;
	while (!__atomic_compare_exchange_n(&c->wake_list, &head, t, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/*
 * The timeline's hooks are calls when enabled, so what is live across one is kept in a
 * callee-saved register (saved and restored on every wake): the hook comes first, and
 * the counters before the resched that ends the wake, so that little is.
 */
void thread_wake(struct thread *t)
{
	struct cpu *c, *me;
	uint32_t old;

	timeline_rec(TL_WAKE, t->cpu);
	c = t->home;
	me = this_cpu();
	old = state_load(t);
	/*
	 * A wake already pending lets this one return without a locked instruction, so nothing
	 * would order the caller's store to the condition (say, a token) before the thread's
	 * consumption of that wake and its re-test of the condition: x86 lets the store wait in
	 * the store buffer past our load, the thread re-tests the old value and blocks, and no
	 * wake is left to end it. A full fence before looking again closes that: if the wake is
	 * still pending afterwards, the thread's consuming CAS, and its re-test, come after our
	 * store is visible. (The other paths end in a CAS on the state, itself a full barrier.)
	 * The spin models assume sequential consistency and cannot see this; the hang it caused
	 * (pingpong, TCG, about one run in five after an unrelated change of timing) could.
	 */
	if (old & WAKE_PENDING) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		old = state_load(t);
	}
	for (;;) {
		uint32_t st = old & T_STATE;

		if (st == T_BLOCKED) {
			if (!state_cas(t, &old, T_RUNNABLE))
				continue;
			wake_list_push(c, t);
			count_wakeup(c, me);
			resched(c, me);
			return;
		}
		if (st != T_RUNNING && st != T_RUNNABLE)
			return; /* exited: nothing to wake */
		if ((old & WAKE_PENDING) || state_cas(t, &old, old | WAKE_PENDING))
			break; /* it has not blocked yet: its next block returns */
	}
	count_wakeup(c, me);
}

/* Appends the threads of a taken wake list to the run queue, oldest wake first. */
static void wake_list_append(struct cpu *c, struct thread *t)
{
	struct thread *fifo = 0;

	while (t) { /* the list is newest first: reverse it */
		struct thread *next = t->wake_next;

		t->wake_next = fifo;
		fifo = t;
		t = next;
	}
	for (; fifo; fifo = fifo->wake_next)
		rq_push(&c->rq, &fifo->link);
}

/* Runs on the new thread after every switch: frees a thread that has just exited (its
 * stack was in use until the switch). switch_prev is set only for such a thread. */
static void finish_switch(void)
{
	struct cpu *c = this_cpu();
	struct thread *dead = c->switch_prev;

	if (dead) {
		c->switch_prev = 0;
		pool_put(dead);
	}
}

/*
 * The wake-up protocol's rule on the target (see the top): NEED_RESCHED is cleared before
 * the wake list is taken, every time. Returns what was taken, newest first.
 */
static inline struct thread *take_woken(struct cpu *c)
{
	__atomic_fetch_and(&c->flags, ~CPU_NEED_RESCHED, __ATOMIC_SEQ_CST);
	return __atomic_exchange_n(&c->wake_list, 0, __ATOMIC_ACQUIRE);
}

/*
 * Idles in place until NEED_RESCHED: t, which has nothing to run, stays on its own stack
 * with this CPU's idle thread as `current` (so interrupts treat the CPU as idle, as they
 * would the idle thread). Only a thread that has exited switches to the idle thread, whose
 * stack outlives it.
 */
static inline void idle_in_place(struct cpu *c, struct thread *t)
{
	timeline_rec(TL_RUN, TL_IDLE_THREAD);
	c->current = c->idle;
	idle_until_work(c);
	c->current = t;
}

/*
 * The next thread to run: the run queue's head, after `woken` (take_woken's). The common
 * cases on the wake-up path, one thread woken onto an empty queue or none at all (about to
 * idle), skip the queue altogether.
 */
static struct thread *pick_next(struct cpu *c, struct thread *prev, struct thread *woken)
{
	bool prev_runs = prev != c->idle && (state_load(prev) & T_STATE) == T_RUNNING;
	struct rq_link *l;

	if (!prev_runs && rq_empty(&c->rq) && (!woken || !woken->wake_next))
		return woken; /* nothing to queue: the one woken thread, or none */
	wake_list_append(c, woken);
	if (prev_runs) {
		state_flip_running(prev);
		rq_push(&c->rq, &prev->link);
	}
	l = rq_pop(&c->rq);
	return l ? link_thread(l) : 0;
}

/*
 * Switches to the next thread to run. A thread that blocks with nothing else to run idles
 * in place (idle_in_place): if the wake that ends the idle is its own, as on a
 * request/response path it usually is, it returns without a context switch to the idle
 * thread and back. thread_block() takes the common case itself (block_in_place, below),
 * and calls this only with something queued; the idling here is for any caller that
 * blocks otherwise.
 */
void schedule(void)
{
	struct cpu *c = this_cpu();
	struct thread *prev = c->current, *next;

	for (;;) {
		next = pick_next(c, prev, take_woken(c));
		if (next) {
			state_flip_running(next);
			break;
		}
		if (prev == c->idle || (state_load(prev) & T_STATE) == T_DEAD) {
			next = c->idle;
			break;
		}
		idle_in_place(c, prev);
	}
	timeline_rec(TL_RUN, next == c->idle ? TL_IDLE_THREAD : (unsigned)(next - threads));
	if (next == prev)
		return;
	c->current = next;
	if ((state_load(prev) & T_STATE) == T_DEAD)
		c->switch_prev = prev;
	c->stats.ctx_switches++;
	arch_switch(&prev->rsp, next->rsp);
	finish_switch();
}

/* Each CPU's idle thread: what runs when no thread is runnable and none is blocked here
 * mid-idle, e.g. before the first thread and after the last one exits. */
void sched_idle_loop(void)
{
	struct cpu *c = this_cpu();

	for (;;) {
		irq_disable();
		idle_until_work(c);
		schedule();
		irq_enable();
	}
}

void sched_thread_start(struct thread *t);
void sched_thread_start(struct thread *t)
{
	finish_switch();
	irq_enable();
	t->fn(t->arg);
	thread_exit();
}

static void sleep_timer_fired(struct timer *tm)
{
	thread_wake(tm->arg);
}

struct thread *thread_create(void (*fn)(void *), void *arg, unsigned cpu, const char *name)
{
	struct thread *t;

	if (cpu >= ncpus)
		panic("thread_create(%s): CPU %u does not exist", name, cpu);
	t = pool_get();
	if (!t)
		return 0;
	*t = (struct thread){
	    .state = T_BLOCKED,
	    .cpu = cpu,
	    .home = &cpus[cpu],
	    .fn = fn,
	    .arg = arg,
	    .name = name,
	    .sleep_timer = {.fn = sleep_timer_fired, .arg = t},
	};
	t->rsp = arch_thread_stack_init(stacks[t - threads] + THREAD_STACK, t);
	thread_wake(t);
	return t;
}

/*
 * What block_in_place() found was not its own wake alone: others woken with it are queued
 * in wake order and schedule() chooses; with nothing woken (NEED_RESCHED left from a wake
 * whose thread an earlier take had found) t idles again.
 */
static __attribute__((noinline)) void block_in_place_rest(struct cpu *c, struct thread *t,
							  struct thread *woken)
{
	while (!woken) {
		idle_in_place(c, t);
		woken = take_woken(c);
	}
	wake_list_append(c, woken);
	schedule();
}

/*
 * thread_block()'s common case, schedule() specialised: t has just blocked and nothing else
 * is queued here, so there is nothing to choose; t idles in place until a wake arrives and
 * runs on at once if the wake was its own. The run queue stays empty meanwhile (only this
 * CPU's schedule() fills it, and with the idle thread current no interrupt calls that).
 */
static inline void block_in_place(struct cpu *c, struct thread *t)
{
	struct thread *woken;

	idle_in_place(c, t);
	woken = take_woken(c);
	if (woken == t && !t->wake_next) {
		state_flip_running(t);
		timeline_rec(TL_RUN, (unsigned)(t - threads));
		return;
	}
	block_in_place_rest(c, t, woken);
}

void thread_block(void)
{
	uint64_t flags = irq_save();
	struct cpu *c = this_cpu();
	struct thread *t = c->current;
	uint32_t old = state_load(t);

	for (;;) {
		if (old & WAKE_PENDING) { /* a wake came first: consume it, do not block */
			if (state_cas(t, &old, old & ~WAKE_PENDING))
				break;
		} else if (state_cas(t, &old, T_BLOCKED)) {
			if (t != c->idle && rq_empty(&c->rq))
				block_in_place(c, t);
			else
				schedule();
			break;
		}
	}
	irq_restore(flags);
}

/*
 * The timer is only a wake-up hint: any other wake also ends thread_block, and the count
 * mode APIC timer may fire a count early, so loop until the TSC says the time is up.
 */
void thread_sleep_ns(uint64_t ns)
{
	struct thread *t = thread_self();
	uint64_t start, now, flags;

	timeline_rec(TL_SLEEP, ns < TL_SLEEP_MAX ? (unsigned)ns : TL_SLEEP_MAX);
	start = rdtsc();
	while ((now = rdtsc(), tsc_to_ns(now - start)) < ns) {
		flags = irq_save();
		timer_arm(&t->sleep_timer, now + ns_to_tsc(ns - tsc_to_ns(now - start)) + 1);
		irq_restore(flags);
		thread_block();
	}
	flags = irq_save();
	timer_cancel(&t->sleep_timer);
	irq_restore(flags);
}

void sched_preempt_point(void)
{
	uint64_t flags;

	if (!(__atomic_load_n(&this_cpu()->flags, __ATOMIC_RELAXED) & CPU_NEED_RESCHED))
		return;
	flags = irq_save();
	schedule();
	irq_restore(flags);
}

void thread_exit(void)
{
	struct cpu *c;

	irq_disable();
	c = this_cpu();
	timer_cancel(&c->current->sleep_timer);
	__atomic_store_n(&c->current->state, T_DEAD, __ATOMIC_RELEASE);
	schedule();
	panic("a dead thread was scheduled");
}

void join_init(struct join_counter *j, unsigned n)
{
	j->remaining = n;
	j->waiter = thread_self();
}

void join_done(struct join_counter *j)
{
	if (__atomic_sub_fetch(&j->remaining, 1, __ATOMIC_ACQ_REL) == 0)
		thread_wake(j->waiter);
}

void join_wait(struct join_counter *j)
{
	while (__atomic_load_n(&j->remaining, __ATOMIC_ACQUIRE))
		thread_block();
}

void sched_irq_exit(void)
{
	struct cpu *c = this_cpu();

	if (c->current != c->idle &&
	    (__atomic_load_n(&c->flags, __ATOMIC_RELAXED) & CPU_NEED_RESCHED))
		schedule();
}

/*
 * The periodic tick (hz=): round robin among this CPU's runnable threads. It re-arms from
 * its own previous deadline so it does not drift; after a long stall it skips the missed
 * ticks rather than firing a burst of them. Reads the queue length without the lock: a
 * stale answer only delays the switch a tick. The switch itself happens on the way out of
 * the interrupt (sched_irq_exit).
 */
static void tick(struct timer *t)
{
	struct cpu *c = this_cpu();
	uint64_t next = t->node.expiry + tick_period, now = rdtsc();

	c->stats.ticks++;
	if ((int64_t)(next - now) <= 0)
		next = now + tick_period;
	timer_arm(t, next);
	if (c->current != c->idle &&
	    (!rq_empty(&c->rq) || __atomic_load_n(&c->wake_list, __ATOMIC_RELAXED)))
		__atomic_fetch_or(&c->flags, CPU_NEED_RESCHED, __ATOMIC_RELAXED);
}

static void resched_interrupt(struct trap_frame *f)
{
	struct cpu *c = this_cpu();

	(void)f;
	__atomic_fetch_and(&c->flags, ~CPU_IPI_PENDING, __ATOMIC_SEQ_CST);
	apic_eoi();
	c->stats.ipi_received++;
	timeline_rec(TL_IPI_RECEIVED, 0);
}

void sched_init_cpu(void)
{
	struct cpu *c = this_cpu();
	struct thread *idle = &idle_threads[c->id];

	idle->state = T_RUNNING;
	idle->cpu = c->id;
	idle->home = c;
	idle->name = "idle";
	c->idle = idle;
	c->current = idle;
	irq_register(VEC_RESCHED, resched_interrupt);
	if (timer_hz()) {
		struct timer *t = &ticks[c->id].t;

		tick_period = tsc_hz / timer_hz();
		t->fn = tick;
		timer_arm(t, rdtsc() + tick_period);
	}
}
