#!/usr/bin/env bash
# psup diff (issue 21): three runs per side of a program whose work_a does
# three times the work on the NEW side. work_a must come out significant and
# slower, work_b (the same work) not significant; --fail-if-slower fails
# the slower side and passes the reverse; one run per side says it cannot
# judge; inputs that cannot be compared give one line.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

T="$TARGETS/diffwork"
# A fixed amount of work (not of time) per run, at 4 samples per ms.
# Three: with two, Welch's test has about one degree of freedom, and the
# whole program's doubling read p = 0.052 once under a sanitizer on a loaded
# machine (the new side's runs 7% apart).
for i in 1 2 3; do
	run_psup 60 run -q -c 250000 -o base$i.cbor -- "$T" 150 150
	expect_rc 0
	run_psup 60 run -q -c 250000 -o new$i.cbor -- "$T" 450 150
	expect_rc 0
done
B="base1.cbor base2.cbor base3.cbor" N="new1.cbor new2.cbor new3.cbor"

run_psup 60 diff --format json $B -- $N
expect_rc 0
cp out d.json
python3 -m json.tool d.json >/dev/null || fail "the JSON diff does not parse"
jq_check d.json '.can_judge and .base_runs == 3 and .new_runs == 3' "not three runs a side"
jq_check d.json '[.functions[] | select(.function == "work_a")][0] | .significant and .verdict == "slower" and .change_percent > 100 and .change_percent < 400' \
	"work_a (three times the work) is not significantly slower"
jq_check d.json '[.functions[] | select(.function == "work_b")][0] | .significant == false and .verdict == "same"' \
	"work_b (the same work) is significant"
jq_check d.json '.functions[0].function == "work_a"' "the significant change is not sorted first"
jq_check d.json '.total.change > 0 and .total.significant' "the program is not slower"
jq_check d.json '[.lines[] | select(.function == "work_a" and .significant)] | length >= 1' \
	"no line of work_a is significant"

run_psup 60 diff $B -- $N
expect_rc 0
grep -q 'slower *work_a$' out || fail "the text diff does not say work_a is slower: $(cat out)"
grep -q "Welch's t-test" out || fail "the text diff does not say how it judged"
run_psup 60 diff --format markdown $B -- $N
expect_rc 0
grep -q '^| .* slower | `work_a` |$' out || fail "the markdown diff has no work_a row: $(cat out)"

# The CI gate: the slower side fails with one line, the reverse passes.
run_psup 60 diff --fail-if-slower 20 $B -- $N
expect_rc 1
[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q '^psup: diff: NEW is slower than BASE' "$WORK/err" ||
	fail "--fail-if-slower did not say why in one line: $(cat "$WORK/err")"
run_psup 60 diff --fail-if-slower 20 $N -- $B
expect_rc 0
[ ! -s "$WORK/err" ] || fail "the faster side says something: $(cat "$WORK/err")"

# One run per side: the changes, no verdict; a gate on it is refused.
run_psup 60 diff --format json base1.cbor -- new1.cbor
expect_rc 0
cp out one.json
jq_check one.json '(.can_judge | not) and ([.functions[] | select(.function == "work_a")][0] | .significant == null and .change_percent > 100)' \
	"one run per side was judged"
run_psup 60 diff base1.cbor -- new1.cbor
expect_rc 0
grep -q 'cannot judge with one run' out || fail "one run per side does not say it cannot judge"
run_psup 60 diff --fail-if-slower 20 base1.cbor -- new1.cbor
expect_rc 2
[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q 'two runs or more on each side' "$WORK/err" ||
	fail "--fail-if-slower with one run per side: $(cat "$WORK/err")"

# Inputs that cannot be compared: one line, exit 2, never a crash.
one_line() { # what
	expect_rc 2
	[ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q "$1" "$WORK/err" ||
		fail "expected one line saying '$1', got: $(cat "$WORK/err")"
}
run_psup 60 run -q -o other.cbor -- "$TARGETS/ratio" direct 0.2
expect_rc 0
run_psup 60 diff base1.cbor -- other.cbor
one_line 'different programs'
run_psup 60 diff base1.cbor other.cbor -- new1.cbor
one_line 'BASE files profile different programs'
run_psup 60 run -q -o s.cbor -- "$TARGETS/stripped-static" 0.2
expect_rc 0
run_psup 60 diff s.cbor -- s.cbor
one_line 'without symbols'
head -c 100 base1.cbor >cut.cbor
printf 'not a record file' >junk.cbor
run_psup 60 diff junk.cbor -- new1.cbor
one_line 'junk.cbor'
run_psup 60 diff base1.cbor new1.cbor
one_line "needs BASE files, '--', then NEW files"
exit 0
