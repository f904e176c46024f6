#!/usr/bin/env bash
# Exhaustive Spin checks of the POLL-flag wakeup protocol model (tests/model/pollflag.pml,
# spec 3.4-3.5). The correct model must pass every check; each deliberately broken variant
# must be CAUGHT (Spin reports an error and writes a trail), which is what proves the model
# can bite. Prints one line per check and a final "N passed, M failed"; exits non-zero on any
# failure. Work files go to build/model/ under the repository root.
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

# build DIR MODE ["-Dvariant ..."]: generate and compile a verifier. MODE "safety" drops the LTL
# claim and cycle detection (assertions + invalid end states); "liveness" keeps the claim.
build() {
	local dir="$work/$1" mode=$2 def=()
	read -ra def <<<"${3:-}"
	mkdir -p "$dir" && cd "$dir" || return 1
	spin "${def[@]}" -a "$model" >spin.log 2>&1 || return 1
	if [ "$mode" = safety ]; then
		gcc -O2 -DSAFETY -DNOCLAIM -o pan pan.c 2>cc.log
	else
		gcc -O2 -o pan pan.c 2>cc.log
	fi
}

# run DIR MODE: exhaustive search; liveness ignores assertions (-A) and end states (-E) so
# that only the never claim ("drained") can report an error.
run() {
	local dir="$work/$1" mode=$2
	cd "$dir" || return 1
	if [ "$mode" = safety ]; then
		./pan -w20 >pan.out 2>&1
	else
		./pan -w20 -a -A -E -N drained >pan.out 2>&1
	fi
}

errors() { sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$work/$1/pan.out" | head -1; }
states() { awk '/states, stored/ { print $1; exit }' "$work/$1/pan.out"; }
# The first error pan reported, e.g. "assertion violated will_see" or "acceptance cycle".
reason() { sed -n 's/^pan:1: \(.*\) (at depth.*/\1/p' "$work/$1/pan.out" | head -1; }

# Non-vacuity: every statement of the idle CPU and the wakers was reached (elided IPIs,
# sent IPIs, aborted halts, HLT ended by an IPI, ...), so "no error" means something.
all_reached() {
	local out="$work/$1/pan.out" p
	for p in idle waker; do
		grep -A1 "^unreached in proctype $p\$" "$out" | grep -q '(0 of ' || return 1
	done
}

expect_pass() { # expect_pass NAME MODE DESCRIPTION
	local n
	if build "$1" "$2" && run "$1" "$2" && n=$(errors "$1") && [ "$n" = 0 ]; then
		report PASS "$3 ($(states "$1") states, errors: 0)"
	else
		report FAIL "$3 (errors: ${n:-?}; see build/model/$1/pan.out)"
	fi
}

# expect_caught NAME MODE "-DVARIANT ..." DESCRIPTION [REASON]: Spin must report an error
# (and, if REASON is given, the first one must mention it) and leave a trail.
expect_caught() {
	local n def=()
	read -ra def <<<"$3"
	build "$1" "$2" "$3" && run "$1" "$2"
	n=$(errors "$1")
	if [ "${n:-0}" -gt 0 ] && ls "$work/$1"/*.trail >/dev/null 2>&1 &&
		reason "$1" | grep -qF -- "${5:-}"; then
		(cd "$work/$1" && spin "${def[@]}" -t -p -k pollflag.pml.trail "$model" >trail.txt 2>&1)
		report PASS "$4: caught, $(reason "$1") (replay: build/model/$1/trail.txt)"
	else
		report FAIL "$4: NOT caught (errors: ${n:-?}; see build/model/$1/pan.out)"
	fi
}

expect_pass correct-safety safety \
	"correct model: safety, I1 monitor + I1 drained-at-deadlock + I2 asserts + end states"
if all_reached correct-safety; then
	report PASS "correct model: every idle and waker statement reachable (checks not vacuous)"
else
	report FAIL "correct model: unreached idle/waker statements (see build/model/correct-safety/pan.out)"
fi
expect_pass correct-liveness liveness "correct model: liveness, LTL drained [](work>0 -> <>work==0)"

expect_caught broken-safety safety -DBROKEN "broken model (no NEED_RESCHED re-test before HLT), safety"
expect_caught broken-liveness liveness -DBROKEN "broken model (no NEED_RESCHED re-test before HLT), LTL"
expect_caught broken-i2 safety "-DBROKEN -DONLY_I2" \
	"broken model (no re-test), I2 alone (I1 checks off)" will_see
expect_caught sti-safety safety -DBROKEN_STI "broken model (sti before the re-test), safety"
expect_caught sti-liveness liveness -DBROKEN_STI "broken model (sti before the re-test), LTL"
expect_caught exit-safety safety -DBROKEN_EXIT_ORDER "broken model (drain before clearing NEED_RESCHED), safety"
expect_caught exit-liveness liveness -DBROKEN_EXIT_ORDER "broken model (drain before clearing NEED_RESCHED), LTL"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
