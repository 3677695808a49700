#!/usr/bin/env bash
# psup annotate (issue 21): a function's instructions and source lines with
# samples. ratio's inline mode runs its hot loop in inl_three, inlined into
# work_three: the loop's line is the hottest, listed as inlined, and holds
# the hottest instruction; every sample of work_three's code is on one
# listed instruction, and they add up to the JSON report's self samples of
# work_three and inl_three. Then a program without debug info (instructions,
# one line saying there are no source lines), a name that is not a sampled
# function (one line naming close ones), and the program gone or rebuilt.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

cp "$TARGETS/ratio" "$TARGETS/libratio.so" .
run_psup 60 run -q -o r.cbor -- ./ratio inline 0.6
expect_rc 0
run_psup 30 annotate work_three r.cbor
expect_rc 0
cp out a.txt
mark=$(marker_line "$SRCDIR/tests/targets/ratio.c" inl_three)
[ -n "$mark" ] || fail "no MARK:inl_three in ratio.c"
grep -q "^\*.* ratio\.c:$mark \[inlined inl_three\]" a.txt ||
	{ cat a.txt >&2; fail "the loop's line ratio.c:$mark is not marked hottest and inlined"; }
[ "$(grep -c '^>' a.txt)" -ge 1 ] || fail "no instruction is marked hottest"
# the hottest instruction lies under the hottest line's heading
hot_head=$(awk '/^[ *] .*%.*[^ ]+:[0-9]+/ { head = $0 } /^>/ { print head; exit }' a.txt)
case "$hot_head" in
"*"*"ratio.c:$mark [inlined inl_three]"*) ;;
*) cat a.txt >&2; fail "the hottest instruction is not under the hottest line (under: $hot_head)" ;;
esac
grep -q 'imul' a.txt || fail "no disassembled instructions"
# sums: instruction rows are "[ >] PCT% N  ADDR:  TEXT"
# (awk's fields start at the first non-blank: a row without '>' has its
# count in $2, and $3 is the address, "1386:" read as 1386).
insn_sum=$(awk '/^[ >] +[0-9.]+% +[0-9]+ +[0-9a-f]+:  / { sub(/^>/, " "); s += $2 } END { print s + 0 }' a.txt)
head_total=$(sed -n 's/^Samples of work_three in .*: \([0-9]*\) (self \([0-9]*\), in inlined functions \([0-9]*\))$/\1 \2 \3/p' a.txt)
read -r total self inlined <<<"$head_total"
[ -n "$total" ] || { cat a.txt >&2; fail "no 'Samples of work_three' heading"; }
[ "$insn_sum" -eq "$total" ] ||
	{ grep -v '^ \{20,\}[0-9a-f]*:' a.txt >&2; fail "instruction samples add up to $insn_sum, the heading says $total"; }
! grep -q 'outside the listed instructions' a.txt || fail "samples outside the function's instructions"
report_json r.cbor >r.json
js_self=$(jq '[.functions[] | select(.function == "work_three") | .self] | add // 0' r.json)
js_inl=$(jq '[.functions[] | select(.function == "inl_three") | .self] | add // 0' r.json)
[ "$self" -eq "$js_self" ] || fail "self $self, the JSON report says $js_self for work_three"
[ "$inlined" -eq "$js_inl" ] || fail "inlined $inlined, the JSON report says $js_inl for inl_three"
[ "$total" -gt 20 ] || fail "too few samples ($total) to judge"

# a name that is not a sampled function: one line, naming close names
run_psup 30 annotate work_thre r.cbor
expect_rc 1
[ "$(wc -l <err)" -eq 1 ] || { cat err >&2; fail "not one line for a missing function"; }
grep -q "^psup: no samples in function 'work_thre'.*close names: .*work_three" err ||
	{ cat err >&2; fail "the missing function's message names no close names"; }
[ ! -s out ] || fail "a listing for a missing function"

# the program rebuilt (another build-id), then gone: said, with the sampled
# addresses still listed
cp "$TARGETS/spin" ./ratio
run_psup 30 annotate work_three r.cbor
expect_rc 0
grep -q "build-id .* is not the recorded one" err || { cat err >&2; fail "a rebuilt file is not named"; }
! grep -q 'imul' out || fail "instructions of another build were listed"
grep -q "^\*.* ratio\.c:$mark \[inlined inl_three\]" out || fail "the sampled lines are not listed without the file"
rm ./ratio
run_psup 30 annotate work_three r.cbor
expect_rc 0
grep -q "cannot open it (No such file or directory): it was recorded, but is gone" err ||
	{ cat err >&2; fail "a missing file is not named"; }

# no debug info (strip -g keeps the symbol table): instructions without
# source lines, and one line saying so
cp "$TARGETS/ratio" ratio-nodebug
strip -g ratio-nodebug || skip "strip failed"
run_psup 60 run -q -o s.cbor -- ./ratio-nodebug inline 0.4
expect_rc 0
run_psup 30 annotate work_three s.cbor
expect_rc 0
[ "$(grep -c '^no source lines' out)" -eq 1 ] || { cat out >&2; fail "no one line saying there are no source lines"; }
grep -q 'imul' out || fail "no instructions for a program without debug info"
! grep -q 'ratio\.c:' out || fail "source lines for a program without debug info"
exit 0
