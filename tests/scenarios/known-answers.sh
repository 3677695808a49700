#!/usr/bin/env bash
# Runs one causal known-answer scenario (the causal-accuracy suite):
# known-answers.sh SCRIPT. Their answers hold only on an otherwise idle
# machine (causal-lib.sh), and this VM's host is shared: steal time comes in
# bursts (17-47% of the machine's time in some runs of 2026-11-22; the
# suite's passing runs saw 0-9%), and a test that fails in one says nothing
# about psup. So
# a failure while other work took KNOWN_ANSWERS_BUSY_PCT (default 3) % or
# more of the machine's CPU time is measured again, up to 3 runs in all; a
# failure on a quiet machine fails at once.
set -u
. "$(dirname "$0")/machine-lib.sh"

script=$1
name=$(basename "$script" .sh)
limit=${KNOWN_ANSWERS_BUSY_PCT:-3}
rc=1
for try in 1 2 3; do
	machine_mark
	bash "$script"
	rc=$?
	others=$(machine_others)
	echo "[$name] run $try: exit $rc, other work used $others% of the machine's CPU time"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || [ "$others" -lt "$limit" ]; then
		exit "$rc"
	fi
done
exit "$rc"
