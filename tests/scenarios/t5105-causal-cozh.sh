#!/usr/bin/env bash
# Programs already instrumented with Coz's coz.h count under psup --causal
# without libcoz preloaded (the issue: "programs already instrumented with
# Coz's coz.h macros should count too"): a COZ_PROGRESS line visited 9000
# times by 3 threads counts 9000.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

[ -x "$TARGETS/causal-count-cozh" ] || skip "coz.h not installed (Debian coz-profiler): no coz.h build of the targets"
run_psup 60 run -q -o c.cbor --experiment-ms 20 --causal -- "$TARGETS/causal-count-cozh" 3000 3
[ "$RC" -eq 0 ] || { cat "$WORK/err" >&2; fail "psup --causal on a coz.h program exited $RC"; }
causal_report c.cbor c.json
v=$(jq -r '[.causal.progress_points[] | select(.kind == "throughput") | .visits] | @csv' c.json)
note "COZ_PROGRESS visits: $v"
[ "$v" = 9000 ] || { jq -c .causal.progress_points c.json >&2; fail "COZ_PROGRESS counted '$v' visits, expected 9000"; }
check_nothing_left
