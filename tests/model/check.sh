#!/usr/bin/env bash
# Exhaustive Spin checks of the reschedule wake-up protocol model (tests/model/pollflag.pml:
# kernel/sched.c + kernel/idle.c, docs/haltpoll-spec.md §3.1-3.5) and of a thread's state
# word (tests/model/threadstate.pml: thread_block/thread_wake in kernel/sched.c). The correct model must
# pass every check in every idle configuration; each deliberately broken variant must be
# CAUGHT (Spin reports an error and writes a trail), which is what proves the model can bite. Prints one line per
# check and a final "N passed, M failed"; exits non-zero on any failure. Work files go to
# build/model/ under the repository root.
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
model="$root/tests/model/pollflag.pml"
work="$root/build/model"
passed=0
failed=0

for tool in spin gcc; do
	command -v "$tool" >/dev/null || { echo "FAIL  $tool not installed"; echo "0 passed, 1 failed"; exit 1; }
done
rm -rf "$work" && mkdir -p "$work" || exit 1

report() { # report PASS|FAIL description
	printf '%-4s  %s\n' "$1" "$2"
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# build DIR MODE ["-D..."]: generate and compile a verifier. MODE "safety" drops the LTL
# claim and cycle detection (assertions + invalid end states); "liveness" keeps the claim.
# The state spaces are small, so -O0: compiling dominates the run time.
build() {
	local dir="$work/$1" mode=$2 def=()
	read -ra def <<<"${3:-}"
	mkdir -p "$dir" && cd "$dir" || return 1
	spin "${def[@]}" -a "$model" >spin.log 2>&1 || return 1
	if [ "$mode" = safety ]; then
		gcc -O0 -DSAFETY -DNOCLAIM -o pan pan.c 2>cc.log
	else
		gcc -O0 -o pan pan.c 2>cc.log
	fi
}

# run DIR MODE: exhaustive search. Liveness ignores assertions (-A) and end states (-E), so
# that only the never claim ("drained") can report an error, and assumes weak fairness (-f):
# a waker that can move eventually does. Without it, the idle CPU polling and expiring for
# ever while a waker never gets from its enqueue to its CAS would count as a lost wake-up.
run() { # run DIR MODE [LTL]: LTL is the claim a liveness run checks (default "drained")
	local dir="$work/$1" mode=$2
	cd "$dir" || return 1
	if [ "$mode" = safety ]; then
		./pan -w20 >pan.out 2>&1
	else
		./pan -w20 -a -f -A -E -N "${3:-drained}" >pan.out 2>&1
	fi
}

errors() { sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$work/$1/pan.out" | head -1; }
states() { awk '/states, stored/ { print $1; exit }' "$work/$1/pan.out"; }
# The first error pan reported, e.g. "assertion violated !(irr)" or "acceptance cycle".
reason() { sed -n 's/^pan:1: \(.*\) (at depth.*/\1/p' "$work/$1/pan.out" | head -1; }

# all_reached NAME "PROCS": every statement of the listed proctypes was reached (elided and
# sent IPIs, aborted halts, IPIs taken in HLT, while polling and in a thread, the quiet
# checks, ...), so "no error" means something. The wakers' elision branch can only be
# reached where POLLING is ever set.
all_reached() {
	local out="$work/$1/pan.out" p
	for p in $2; do
		grep -A1 "^unreached in proctype $p\$" "$out" | grep -q '(0 of ' || return 1
	done
}

expect_pass() { # expect_pass NAME MODE "-D..." DESCRIPTION [LTL]
	local n
	if build "$1" "$2" "$3" && run "$1" "$2" "${5:-}" && n=$(errors "$1") && [ "$n" = 0 ]; then
		report PASS "$4 ($(states "$1") states, errors: 0)"
	else
		report FAIL "$4 (errors: ${n:-?}; see build/model/$1/pan.out)"
	fi
}

# expect_caught NAME MODE "-DVARIANT ..." DESCRIPTION [REASON]: Spin must report an error
# (and, if REASON is given, the first one must mention it) and leave a trail.
expect_caught() { # [LTL] may follow REASON, as for expect_pass
	local n def=()
	read -ra def <<<"$3"
	build "$1" "$2" "$3" && run "$1" "$2" "${6:-}"
	n=$(errors "$1")
	if [ "${n:-0}" -gt 0 ] && ls "$work/$1"/*.trail >/dev/null 2>&1 &&
		reason "$1" | grep -qF -- "${5:-}"; then
		(cd "$work/$1" && spin "${def[@]}" -t -p -k "$(basename "$model").trail" "$model" \
			>trail.txt 2>&1)
		report PASS "$4: caught, $(reason "$1") (replay: build/model/$1/trail.txt)"
	else
		report FAIL "$4: NOT caught (errors: ${n:-?}; see build/model/$1/pan.out)"
	fi
}

# The correct model in every idle configuration the kernel can run (idle= and pollflag=
# knobs; idle=halt never sets POLLING, so pollflag does not matter there).
# Fields: NAME, spin -D options (comma-separated, "-" for none), label, proctypes that must
# be fully reached.
while read -r name defs label procs; do
	defs=${defs//,/ }
	[ "$defs" = - ] && defs=
	label=${label//,/ }
	expect_pass "$name-safety" safety "$defs" \
		"$label: safety (I1 monitor, I1 drained when quiet, I2, no IPI merge, sent == received, R2)"
	if all_reached "$name-safety" "${procs//,/ }"; then
		report PASS "$label: every ${procs//,/ and } statement reached (checks not vacuous)"
	else
		report FAIL "$label: unreached ${procs//,/ or } statements (see build/model/$name-safety/pan.out)"
	fi
	expect_pass "$name-liveness" liveness "$defs" "$label: liveness, LTL drained [](work>0 -> <>work==0)"
done <<'CONFIGS'
haltpoll      -                        idle=haltpoll,pollflag=1 idle,waker
haltpoll-nopf -DPOLLFLAG=0             idle=haltpoll,pollflag=0 idle
halt          -DIDLE=HALT              idle=halt                idle
poll          -DIDLE=POLL              idle=poll,pollflag=1     idle,waker
poll-nopf     -DIDLE=POLL,-DPOLLFLAG=0 idle=poll,pollflag=0     idle
CONFIGS

# The broken variants, in the default configuration (idle=haltpoll pollflag=1).
expect_caught broken-safety safety -DBROKEN \
	"broken (poll expiry halts with no NEED_RESCHED re-test), safety" halted
expect_caught broken-liveness liveness -DBROKEN \
	"broken (poll expiry halts with no NEED_RESCHED re-test), LTL" "acceptance cycle"
expect_caught broken-i2 safety "-DBROKEN -DONLY_I2" \
	"broken (no re-test), I2 alone (I1 checks off)" hlt_committed
expect_caught sti-safety safety -DBROKEN_STI \
	"broken (sti before halt_state's re-test), safety" halted
expect_caught sti-liveness liveness -DBROKEN_STI \
	"broken (sti before halt_state's re-test), LTL" "acceptance cycle"
expect_caught exit-safety safety -DBROKEN_EXIT_ORDER \
	"broken (schedule() picks before clearing NEED_RESCHED), safety" "work==0"
expect_caught exit-liveness liveness -DBROKEN_EXIT_ORDER \
	"broken (schedule() picks before clearing NEED_RESCHED), LTL" "acceptance cycle"
expect_caught leak-safety safety -DBROKEN_IPI_LEAK \
	"broken (handler does not clear IPI_PENDING), safety: lost wake-up" halted
expect_caught leak-liveness liveness -DBROKEN_IPI_LEAK \
	"broken (handler does not clear IPI_PENDING), LTL" "acceptance cycle"
expect_caught merge-safety safety -DBROKEN_MERGE \
	"broken (waker sends although IPI_PENDING is set), no-merge assertion" "!(irr)"
expect_caught r2-safety safety -DBROKEN_R2 \
	"broken (the poll state keeps POLLING when work arrived), R2" running
expect_caught irqexit-liveness liveness -DBROKEN_IRQ_EXIT \
	"broken (sched_irq_exit never reschedules a busy thread), LTL" "acceptance cycle"

# A thread's local wake leaves NEED_RESCHED set without an IPI; a remote wake that arrives
# meanwhile must still get its IPI, or it waits for the thread to block.
expect_pass localwake-liveness liveness -DLOCAL_WAKE \
	"local wake then remote wake: liveness, LTL remote_drained" remote_drained
expect_caught nrskip-liveness liveness "-DLOCAL_WAKE -DBROKEN_NR_SKIP" \
	"broken (waker skips the IPI when NEED_RESCHED is already set), LTL remote_drained" \
	"acceptance cycle" remote_drained

# The thread state word (tests/model/threadstate.pml): block and wake decide on one word by
# CAS; the wake list gets a thread at most once and no wake-up is lost.
model="$root/tests/model/threadstate.pml"
expect_pass state-safety safety "" \
	"thread state word: safety (queued at most once, no wake-up lost when quiet)"
expect_pass state-liveness liveness "" "thread state word: liveness, LTL seen_all" seen_all
expect_caught state-split safety -DBROKEN_SPLIT \
	"broken (WAKE_PENDING in a word of its own), safety" "assertion violated"
expect_caught state-nocas safety -DBROKEN_NOCAS \
	"broken (waker tests BLOCKED, then writes RUNNABLE), safety" "assertion violated"
expect_caught state-nofence safety -DBROKEN_NOFENCE \
	"broken (a waker that finds a wake pending returns without a fence), safety under TSO" \
	"assertion violated"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
