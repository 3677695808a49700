#!/usr/bin/env bash
# Programs psup may not read (issue 22), run by an ordinary user: each says
# why in one line, with what to do, instead of a silent [unknown] report or a
# program silently running without its privileges. And perf denied to root
# by a seccomp policy is not answered with "run as root".
. "$(dirname "$0")/lib.sh"

cd "$WORK"
chmod 755 "$WORK"
[ "$(id -u)" -eq 0 ] || skip "needs root (a setuid program, another user)"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_nobody true || skip "setpriv cannot switch to nobody"
cp "$TARGETS/spin" spin-setuid
chmod 4755 spin-setuid
cp "$TARGETS/nodump" nodump
chmod 755 nodump
mkdir -m 777 rec
PSUP_N=$(for_nobody "$PSUP")
as_nobody "$PSUP_N" run -q -o rec/probe.cbor -- "$(for_nobody "$TARGETS/spin")" 0.1 >/dev/null 2>"$WORK/err" ||
	skip "psup cannot profile as nobody here: $(cat "$WORK/err")"

# A program that makes itself not dumpable: its samples say so, and so does
# psup, once.
as_nobody timeout 60 "$PSUP_N" run -o rec/nodump.cbor -- ./nodump 0.3 >/dev/null 2>"$WORK/err"
RC=$?
expect_rc 0
grep -q "not dumpable" "$WORK/err" || fail "no word on a process psup cannot read: $(cat "$WORK/err")"
[ "$(grep -c "not dumpable" "$WORK/err")" -eq 1 ] || fail "the not-dumpable warning repeats"
grep "not dumpable" "$WORK/err" | grep -q "run psup as root" || fail "the warning gives no fix"
report_json rec/nodump.cbor >nodump.json
jq_check nodump.json '[.functions[] | select(.image == "[not dumpable]")] | length > 0' \
	"the report does not say its samples are of a process psup could not read"

# A setuid program run by an ordinary user runs without its privileges: a
# warning, once.
as_nobody timeout 60 "$PSUP_N" run -o rec/setuid.cbor -- ./spin-setuid 0.1 >/dev/null 2>"$WORK/err"
RC=$?
expect_rc 0
[ "$(grep -c "setuid" "$WORK/err")" -eq 1 ] || fail "a setuid program lost its privileges silently: $(cat "$WORK/err")"
grep -q "run psup as root" "$WORK/err" || fail "the setuid warning gives no fix"
# As root it keeps them: no warning.
run_psup 60 run -o rec/setuid-root.cbor -- ./spin-setuid 0.1
expect_rc 0
grep -q setuid "$WORK/err" && fail "a setuid-root program run as root was warned about"

# perf_event_open denied by a seccomp policy while root: say so.
run_psup 30 run -q -o rec/np.cbor -- true
expect_rc 0
timeout 30 "$TARGETS/no-perf" "$PSUP" run -q -o rec/no-perf.cbor -- true >/dev/null 2>"$WORK/err"
RC=$?
expect_rc 1
[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "seccomp-denied perf: not one line"; }
grep -q seccomp "$WORK/err" || fail "seccomp-denied perf: $(cat "$WORK/err")"
grep -q "run as root" "$WORK/err" && fail "seccomp-denied perf as root says 'run as root'"
check_nothing_left
