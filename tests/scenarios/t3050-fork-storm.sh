#!/usr/bin/env bash
# Scenario 18: fork/vfork storms, children killed at birth, grandchildren:
# every status as without psup, children followed and sampled.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 120 run -q -o f.cbor -- "$TARGETS/forker" 50
expect_rc 0
run_psup 120 run -q -o nf.cbor --no-follow-forks -- "$TARGETS/forker" 20
expect_rc 0
check_nothing_left
