#!/usr/bin/env bash
# Scenarios 22 and 23: a storm of signals is delivered exactly (the program
# counts them), and the program's own SIGTRAPs (raise, int3) reach its handler.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 120 run -q -o s.cbor -- "$TARGETS/signals" 2000
[ $RC -eq 0 ] || { cat "$WORK/err" >&2; fail "signals target failed with $RC"; }
check_nothing_left
