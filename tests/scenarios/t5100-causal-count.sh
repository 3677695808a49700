#!/usr/bin/env bash
# Progress points count exact visits: 3 threads (two of them gone before
# the end) visit one line 3000 times each. A breakpoint counter placed by
# FILE:LINE, one placed by FUNCTION, and the psup.h PSUP_PROGRESS compiled
# on that line must all say 9000: nothing lost at thread exit, nothing
# counted twice, nothing missed before the first experiment. A sampled
# progress point (--sampled-progress) counts the samples in a line instead:
# some, never more than the program's samples.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

line=$(causal_ref causal-count.c causal_count_line)
work=$(causal_ref causal-count.c causal_count_work)

check_visits() { # json, what
	local v
	v=$(jq -r '[.causal.progress_points[] | select(.kind == "throughput") | .visits] | @csv' "$1")
	note "$2: visits $v"
	[ "$v" = 9000 ] || { jq -c .causal.progress_points "$1" >&2; fail "$2: counted $v visits, expected exactly 9000"; }
}

run_psup 60 run -q -o l.cbor --experiment-ms 20 -p "$line" -- "$TARGETS/causal-count" 3000 3
expect_rc 0
grep -qx 'visits 9000' "$WORK/out" || fail "the target itself did not count 9000 visits: $(cat "$WORK/out")"
causal_report l.cbor l.json
jq_check l.json '.causal.progress_points[0].name == "'"$line"'"' "a -p point is not named after its spec"
check_visits l.json "-p FILE:LINE"

# FILE matches source paths by suffix: with a directory part too.
run_psup 60 run -q -o d.cbor --experiment-ms 20 -p "tests/targets/$line" -- "$TARGETS/causal-count" 3000 3
expect_rc 0
causal_report d.cbor d.json
check_visits d.json "-p DIR/FILE:LINE"

run_psup 60 run -q -o f.cbor --experiment-ms 20 -p causal_count_visit -- "$TARGETS/causal-count" 3000 3
expect_rc 0
causal_report f.cbor f.json
check_visits f.json "-p FUNCTION"

if [ -x "$TARGETS/causal-count-psuph" ]; then
	run_psup 60 run -q -o s.cbor --experiment-ms 20 --causal -- "$TARGETS/causal-count-psuph" 3000 3
	expect_rc 0
	causal_report s.cbor s.json
	check_visits s.json "psup.h PSUP_PROGRESS"
else
	[ -e "$SRCDIR/include/psup.h" ] && fail "include/psup.h exists but causal-count-psuph was not built"
fi

run_psup 60 run -q -o p.cbor --experiment-ms 20 --sampled-progress "$work" -- "$TARGETS/causal-count" 3000 3
expect_rc 0
causal_report p.cbor p.json
jq_check p.json '.causal.progress_points | length == 1 and .[0].visits > 0' "a sampled progress point on the work line counted nothing"
jq_check p.json '.causal.progress_points[0].visits <= .summary.samples' "a sampled progress point counted more than all samples"
check_nothing_left
