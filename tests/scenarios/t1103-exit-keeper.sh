#!/usr/bin/env bash
# psup's exit does not wait for the kernel: the last close of a tracepoint
# event waits an RCU grace period (35-55 ms here), so a keeper process holds
# a copy of the wakeup probe's fd (and the fork tracepoint's, for threads
# told by the records) and closes them after psup is gone
# (sampler/event.c). The keeper must hold nothing else (a reader of psup's
# output would wait for it), be outside psup's process tree and terminal
# session, and go once psup has gone (a second later: the next run's probe
# finds the tracepoint held), however psup ends.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# keepers_of PSUP_PID -> pids of the keepers psup PSUP_PID made: processes
# whose descriptor 1 is the read end of a pipe whose write end psup holds.
keepers_of() {
	local p w
	for w in /proc/"$1"/fd/*; do
		readlink "$w" 2>/dev/null
	done | grep '^pipe:' | sort -u >psup-pipes
	for p in $(tagged_pids); do
		[ "$p" = "$1" ] && continue
		[ "$(readlink /proc/$p/fd/0 2>/dev/null)" = "anon_inode:[perf_event]" ] || continue
		grep -qxF "$(readlink /proc/$p/fd/1 2>/dev/null)" psup-pipes && echo "$p"
	done
}

"$PSUP" run -q -o k.cbor -- sleep 3 >out 2>err &
ppid=$!
wait_for "[ -n \"\$(keepers_of $ppid)\" ]" 10 || fail "no keeper of psup's tracepoint event (psup $ppid: $(ls -l /proc/$ppid/fd 2>&1 | grep -c perf_event) events)"
k=$(keepers_of $ppid)
[ "$(echo "$k" | wc -w)" = 1 ] || fail "more than one keeper: $k"
fds=$(ls /proc/$k/fd | sort -n | tr '\n' ' ')
[ "$fds" = "0 1 " ] || { [ "$fds" = "0 1 2 " ] && [ "$(readlink /proc/$k/fd/2)" = "anon_inode:[perf_event]" ]; } ||
	fail "the keeper holds descriptors $fds, not 0 and 1 (and a second probe at 2) only: $(ls -l /proc/$k/fd)"
read -r kppid ksid <<<"$(ps -o ppid=,sid= -p $k)"
[ "$kppid" != "$ppid" ] || fail "the keeper is psup's child"
[ "$ksid" = "$k" ] || fail "the keeper is in session $ksid, not its own"
[ "$(tracer_of $k)" = 0 ] || fail "the keeper is traced by $(tracer_of $k)"
note "keeper $k (parent $kppid) holds $(readlink /proc/$k/fd/0)"
wait $ppid || fail "psup run ended with status $?: $(cat err)"
wait_exit $k 10 || fail "the keeper $k outlived psup by 10 s"
report_json k.cbor >k.json
jq_check k.json '.summary.processes >= 1' "the run's record is not readable"

# A run that ends before the recorder's first tick (where the keeper is
# made, off the program's start) makes it at psup's end: in exit() (atexit),
# or before psup re-raises the program's fatal signal, a path without
# exit(). Either way a keeper of the run's probes lingers its second after
# psup is gone. A run that saw a tick (a loaded machine) proves nothing of
# that path: said, not failed.
for how in exit signal; do
	if [ $how = exit ]; then
		"$PSUP" run -v -o t-$how.cbor -- true >out 2>err
		rc=$? want=0
	else
		"$PSUP" run -v -o t-$how.cbor -- sh -c 'kill -TERM $$' >out 2>err
		rc=$? want=143
	fi
	[ $rc = $want ] || fail "$how: psup ended with status $rc, not $want: $(tail -3 err)"
	if ! grep -q 'wait statuses and 0 timer expirations' err; then
		note "$how: the run saw a tick: its keeper may be the tick's"
	fi
	lingering=""
	for p in $(tagged_pids); do
		[ "$(readlink /proc/$p/fd/0 2>/dev/null)" = "anon_inode:[perf_event]" ] && lingering="$lingering $p"
	done
	[ -n "$lingering" ] || fail "$how: no keeper after a run shorter than a tick"
	for p in $lingering; do
		wait_exit $p 10 || fail "$how: the keeper $p outlived psup by 10 s"
	done
done

# psup killed: the pipe's writer goes with it, and the keeper follows.
"$PSUP" run -q -o kk.cbor -- sleep 30 >out 2>err &
ppid=$!
wait_for "[ -n \"\$(keepers_of $ppid)\" ]" 10 || fail "no keeper in the second run"
k=$(keepers_of $ppid)
kill -KILL $ppid
wait $ppid 2>/dev/null
wait_exit $k 10 || fail "the keeper $k outlived a killed psup by 10 s"
check_nothing_left
