#!/usr/bin/env bash
# Attach refusals say why (issue 22): a kernel thread, and, for an ordinary
# user, a setuid program or a process that is not dumpable although the user
# runs it: one line with the cause and the fix, never a bare EPERM.
. "$(dirname "$0")/lib.sh"

cd "$WORK"
chmod 755 "$WORK"
[ "$(id -u)" -eq 0 ] || skip "needs root (a setuid program, another user)"
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
as_nobody true || skip "setpriv cannot switch to nobody"
mkdir -m 777 rec
PSUP_N=$(for_nobody "$PSUP")

one_line() { # what
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "$1: not one line"; }
	grep -q '^psup: ' "$WORK/err" || fail "$1: not prefixed 'psup: '"
}

# kthreadd (pid 2) where the machine shows it; any kernel thread otherwise.
kt=
for p in 2 $(ps -e -o pid= --ppid 2 | head -5); do
	flags=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $7 }')
	[ -n "$flags" ] && (((flags & 0x00200000) != 0)) && { kt=$p; break; }
done
if [ -n "$kt" ]; then
	run_psup 30 attach -o rec/kt.cbor "$kt"
	expect_rc 1
	one_line "attach to a kernel thread"
	grep -q "kernel thread" "$WORK/err" || fail "attach to kernel thread $kt: $(cat "$WORK/err")"
else
	note "no kernel thread visible: that case is not checked"
fi

cp "$TARGETS/spin" spin-setuid
chmod 4755 spin-setuid
"${NOBODY[@]}" ./spin-setuid 60 >/dev/null &
BG=$!
BG_PIDS+=("$BG")
wait_for "[ \"\$(readlink /proc/$BG/exe)\" = \"$WORK/spin-setuid\" ]" 10 || fail "the setuid target did not start"
as_nobody timeout 30 "$PSUP_N" attach -o rec/suid.cbor "$BG" >/dev/null 2>"$WORK/err"
RC=$?
expect_rc 1
one_line "attach to a setuid program"
grep -q "setuid" "$WORK/err" || fail "attach to a setuid program: $(cat "$WORK/err")"
grep -q "run psup as root" "$WORK/err" || fail "attach to a setuid program gives no fix"
stop_bg "$BG"

start_bg "${NOBODY[@]}" "$(for_nobody "$TARGETS/nodump")" 60
as_nobody timeout 30 "$PSUP_N" attach -o rec/nodump.cbor "$BG" >/dev/null 2>"$WORK/err"
RC=$?
expect_rc 1
one_line "attach to a process that is not dumpable"
grep -q "not dumpable" "$WORK/err" || fail "attach to a not-dumpable process: $(cat "$WORK/err")"
stop_bg "$BG"
[ -e rec/suid.cbor ] || [ -e rec/nodump.cbor ] || [ -e rec/kt.cbor ] && fail "a failed attach left its record"
check_nothing_left
