#!/usr/bin/env bash
# Threads are sampled from their first instruction; each has its own row.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 120 run -q -o t.cbor -- "$TARGETS/threads" 3 0.5
expect_rc 0
report_json t.cbor >t.json
jq_check t.json '[.threads[] | select(.samples > 200)] | length >= 3' "fewer than 3 threads with samples"
s=$(func_total_pct t.json thread_spin)
in_range "$s" 85 100 || fail "thread_spin has $s% of the samples"

run_psup 120 run -q -o f.cbor -- "$TARGETS/threads" --futex 4 20000
expect_rc 0
check_nothing_left
