#!/usr/bin/env bash
# psup answers stops at the lowest real-time priority while it traces
# (docs/notes.md, "How a recording works") and never passes it on: the program, and a child
# it forks, keep the default policy. Without the privilege (not root) psup
# keeps the default too.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# The target prints its own policy, its child's, then its parent's: psup.
run_psup 30 run -q -f -- sh -c 'chrt -p $$; sh -c "chrt -p \$\$"; chrt -p $PPID'
expect_rc 0
grep -q "policy" "$WORK/out" || fail "the target printed no policy: $(head -c 300 "$WORK/out")"
[ "$(grep -c "policy: SCHED_OTHER$" "$WORK/out")" -ge 2 ] ||
	fail "the program or its child does not run under the default policy: $(cat "$WORK/out")"
psup_policy=$(grep "policy" "$WORK/out" | sed -n 3p)
if [ "$(id -u)" -eq 0 ]; then
	case "$psup_policy" in
	*"SCHED_FIFO|SCHED_RESET_ON_FORK") ;;
	*) fail "psup traced under '$psup_policy', expected SCHED_FIFO|SCHED_RESET_ON_FORK" ;;
	esac
else
	note "not root: psup keeps its policy ($psup_policy)"
fi

# Started under a policy of the user's choice, psup keeps it.
timeout 30 chrt -b 0 "$PSUP" run -q -f -- sh -c 'chrt -p $PPID' >"$WORK/out2" 2>"$WORK/err2" ||
	fail "psup under SCHED_BATCH failed: $(cat "$WORK/err2")"
grep -q "policy: SCHED_BATCH$" "$WORK/out2" ||
	fail "psup started under SCHED_BATCH traced under: $(cat "$WORK/out2")"
check_nothing_left
