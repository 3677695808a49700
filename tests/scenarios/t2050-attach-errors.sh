#!/usr/bin/env bash
# Scenario 9: attach errors each get their own one-line explanation and a
# non-zero exit: no such pid, zombie, already traced, psup itself.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 10 attach 4000000
[ $RC -ne 0 ] || fail "attach to a missing pid succeeded"
grep -q "no such process" "$WORK/err" || fail "missing pid: $(cat "$WORK/err")"
[ -e psup.cbor ] && fail "a failed attach left psup.cbor"

# A zombie: a child that exits while its parent does not reap it.
sh -c 'sleep 0 & exec sleep 5' &
zparent=$!
BG_PIDS+=("$zparent")
zombie=""
wait_for "zombie=\$(pgrep -P $zparent); [ -n \"\$zombie\" ] && [ \"\$(proc_state \$zombie)\" = Z ]" 5 || skip "could not make a zombie"
run_psup 10 attach $zombie
[ $RC -ne 0 ] || fail "attach to a zombie succeeded"
grep -q "zombie" "$WORK/err" || fail "zombie: $(cat "$WORK/err")"

# Already traced: by another psup.
start_bg "$TARGETS/busy"
"$PSUP" attach -q -o first.cbor $BG 2>/dev/null &
first=$!
wait_for "[ \"\$(tracer_of $BG)\" = $first ]" 10 || fail "first psup did not attach"
run_psup 10 attach -o second.cbor $BG
[ $RC -ne 0 ] || fail "a second tracer attached"
grep -q "already traced by pid $first" "$WORK/err" || fail "already traced: $(cat "$WORK/err")"
kill -INT $first
wait $first || fail "first psup failed to detach"

# Another user's process: psup as nobody against a process of root's.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	psup_n=$(for_nobody "$PSUP")
	cd /tmp
	setpriv --reuid=65534 --regid=65534 --clear-groups "$psup_n" attach -o /dev/null -f $BG \
		>"$WORK/out" 2>"$WORK/err"
	RC=$?
	cd "$WORK"
	[ $RC -ne 0 ] || fail "nobody attached to root's process"
	grep -q "another user" "$WORK/err" || fail "other user: $(cat "$WORK/err")"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "other user: not one line: $(cat "$WORK/err")"
else
	note "not root or no setpriv: the other-user case is not checked"
fi
