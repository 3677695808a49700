#!/usr/bin/env bash
# The paper's Figure 1: two threads, loop a ~5% longer than loop b, joined
# every round. A CPU profile gives them half each; the causal profile must
# say that neither matters much: speeding a gains at most ~5%, b nothing.
# With a breakpoint progress point on the round counter (-p FILE:LINE,
# long-lived threads at a barrier), then with the psup.h PSUP_PROGRESS on
# the same line and threads created and joined every round (the paper's
# code; new threads inherit their creator's delay count).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

a=$(causal_ref causal-figure1.c causal_fig1_a)
b=$(causal_ref causal-figure1.c causal_fig1_b)
round=$(causal_ref causal-figure1.c causal_fig1_round)

check_fig1() { # json, what, most predicted at >= 50%
	local l n m
	for l in "$a" "$b"; do
		n=$(causal_exps "$1" "$l")
		[ "$n" -ge 4 ] || { causal_show "$1"; fail "$2: only $n experiments on $l"; }
		causal_slope_in "$1" "$l" -0.4 0.4 "$2"
		# Loop a removed entirely gains 5%; allow the noise of short
		# experiments on a loaded machine (a phantom critical path would
		# show ~50% here: each loop is half the CPU time).
		m=$(causal_wmean "$1" "$l" 50)
		note "$2: $l mean predicted program speedup at >= 50% line speedup: $m%"
		[ "$m" != none ] || { causal_show "$1"; fail "$2: $l has no experiment at >= 50%"; }
		in_range "$m" -1000 "$3" || { causal_show "$1"; fail "$2: $l predicts $m% program speedup, expected under ~5%"; }
	done
}

run_psup 120 run -q -o bp.cbor --experiment-ms 50 -p "$round" -- "$TARGETS/causal-figure1" 10 barrier
expect_rc 0
causal_report bp.cbor bp.json
jq_check bp.json '.causal.progress_points | length == 1 and .[0].kind == "throughput" and .[0].visits > 100' \
	"the round counter's breakpoint progress point counted no rounds"
jq_check bp.json '.causal.info.mode == "run" and .causal.info.experiments >= 10' "fewer than 10 experiments of 50 ms in a 10 s run"
check_fig1 bp.json "breakpoint point" 20

if [ -x "$TARGETS/causal-figure1-psuph" ]; then
	# A thread's creation and end cost about 1 ms under psup here (a round
	# takes 4.3 ms against 2.1 natively; docs/causal.md, "Known limits"): b starts
	# late and looks critical, at 5-19% in 6 runs of 10 s, and at
	# 18.6-20.2% in 4 runs of 20 s since psup answers stops at real-time
	# priority (which slows the churn by another ~8%). Up to 30% is
	# allowed here: a phantom critical path would read ~50%.
	run_psup 120 run -q -o src.cbor --experiment-ms 50 --causal -- "$TARGETS/causal-figure1-psuph" 20 spawn
	expect_rc 0
	causal_report src.cbor src.json
	jq_check src.json '[.causal.progress_points[] | select(.kind == "throughput" and (.name | endswith("causal-figure1.c:'"${round#*:}"'")))] | length == 1 and .[0].visits > 100' \
		"the PSUP_PROGRESS point (named after its file and line) counted no rounds"
	check_fig1 src.json "psup.h point, threads per round" 30
	# Without interception (as in attach mode, and for static binaries:
	# no unlock trap stops the creator inside pthread_create to pay its
	# debt first), each new thread inheriting its creator's unpaid debt
	# made both loops read as contention (slopes -0.84 and -0.41).
	run_psup 120 run -q -o ni.cbor --experiment-ms 50 --causal --no-intercept -- "$TARGETS/causal-figure1-psuph" 20 spawn
	expect_rc 0
	causal_report ni.cbor ni.json
	check_fig1 ni.json "psup.h point, threads per round, --no-intercept" 30
else
	[ -e "$SRCDIR/include/psup.h" ] && fail "include/psup.h exists but causal-figure1-psuph was not built"
	note "no include/psup.h: the source-level variant is not checked"
fi
check_nothing_left
