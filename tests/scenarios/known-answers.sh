#!/usr/bin/env bash
# Runs one causal known-answer scenario (the causal-accuracy suite):
# known-answers.sh SCRIPT. Their answers hold only on an otherwise idle
# machine (causal-lib.sh), and this VM's host is shared: steal time comes in
# bursts (17-47% of the machine's time in some runs of 2026-11-22; the
# suite's passing runs saw 0-9%), and a test that fails in one says nothing
# about psup. So
# a failure while other work took KNOWN_ANSWERS_BUSY_PCT (default 3) % or
# more of the machine's CPU time is measured again, up to 4 runs in all,
# each after the machine was seen quiet for 5 s (waiting up to 2 minutes:
# a burst lasted through 3 back-to-back runs of t5060 in a CI run, 35%, 40%
# and 12% other work in 23 s); a failure on a quiet machine fails at once.
set -u
. "$(dirname "$0")/machine-lib.sh"

script=$1
name=$(basename "$script" .sh)
limit=${KNOWN_ANSWERS_BUSY_PCT:-3}

# quiet_wait: until a 5-s window shows less than $limit% other work, at
# most 2 minutes.
quiet_wait() {
	local waited=0 others
	while [ "$waited" -lt 120 ]; do
		machine_mark
		sleep 5
		waited=$((waited + 5))
		others=$(machine_others)
		if [ "$others" -lt "$limit" ]; then
			echo "[$name] quiet after ${waited} s"
			return
		fi
	done
	echo "[$name] other work still used $others% after ${waited} s: measured anyway"
}

rc=1
for try in 1 2 3 4; do
	[ "$try" -eq 1 ] || quiet_wait
	machine_mark
	bash "$script"
	rc=$?
	others=$(machine_others)
	echo "[$name] run $try: exit $rc, other work used $others% of the machine's CPU time (steal $(machine_steal)%)"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || [ "$others" -lt "$limit" ]; then
		exit "$rc"
	fi
done
exit "$rc"
