#!/usr/bin/env bash
# Scenario 14: exit_group from a non-leader thread while others block: every
# exiting thread is resumed, the status propagates.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 60 run -q -o e.cbor -- "$TARGETS/exit_group"
expect_rc 9
check_nothing_left
