#!/usr/bin/env bash
# Scenario 20: raw clone() threads and clone(CLONE_VM) without CLONE_THREAD.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 60 run -q -o c.cbor -- "$TARGETS/raw_clone"
expect_rc 0
check_nothing_left
