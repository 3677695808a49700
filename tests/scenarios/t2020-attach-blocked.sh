#!/usr/bin/env bash
# Scenario 7: attach to threads blocked in nanosleep, read, futex and
# epoll_wait, then detach: the calls restart, none returns EINTR.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# The threads stay blocked until the file "stop" appears (not a wall-clock
# end a loaded machine could reach before the second attach).
start_bg "$TARGETS/sleeper" --until "$WORK/stop"
run_psup 30 attach -q -d 1 -o s.cbor $BG
expect_rc 0
run_psup 30 attach -q -d 0.5 -f -o s.cbor $BG
expect_rc 0
touch "$WORK/stop"
wait $BG
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/bg.err" >&2; fail "sleeper saw interrupted calls (exit $rc)"; }
