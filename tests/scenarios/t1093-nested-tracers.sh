#!/usr/bin/env bash
# A program that traces its own children runs under `psup run` as it does
# without psup (supervisor/nested.c): strace's children ask PTRACE_TRACEME,
# gdb's inferior too, `strace -p` seizes a process psup traces. Their output
# and exit status are the native ones; psup still writes its record.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
[ "$(id -u)" = 0 ] || skip "the ptrace filter needs CAP_SYS_ADMIN (no NO_NEW_PRIVS for the program)"

# The program's own PTRACE_TRACEME: its parent is psup, which traces it
# already where it stops new threads (--stops). It gets EPERM and psup
# keeps it to its end: its exit status is mirrored (letting go lost the
# status and the rest of the profile).
run_psup 60 run -q --stops -o traceme.cbor -- "$TARGETS/traceme"
[ "$RC" -eq 3 ] || { cat "$WORK/err" >&2; fail "traceme: exit status $RC under psup, 3 natively"; }
grep -q "traceme: Operation not permitted" "$WORK/out" || fail "traceme: $(cat "$WORK/out")"
# By default (only sampling, per CPU) psup let go of the program at its
# exec: the call succeeds, as natively, and psup lets go again at the
# stop that follows; the record is complete.
run_psup 60 run -q -o traceme-ok.cbor -- "$TARGETS/traceme"
[ "$RC" -eq 3 ] || { cat "$WORK/err" >&2; fail "traceme, let go of: exit status $RC under psup, 3 natively"; }
report_json traceme-ok.cbor >traceme-ok.json
if jq -e '.runs[0].new_threads == "records"' traceme-ok.json >/dev/null; then
	grep -q "traceme: ok" "$WORK/out" || fail "traceme, let go of: $(cat "$WORK/out")"
	jq_check traceme-ok.json '.summary.samples > 0 and .runs[0].exit_status == 3' \
		"traceme, let go of: no samples or no exit status in the record"
fi
# PTRACE_ATTACH of a zombie leader whose other thread lives on: EPERM at
# once, as natively, not a retry until the whole process ends (a hang).
run_psup 60 run -q -o zombie.cbor -- "$TARGETS/traceme" zombie
[ "$RC" -eq 3 ] || { cat "$WORK/err" >&2; fail "traceme zombie: exit status $RC under psup, 3 natively"; }
grep -q "attach: Operation not permitted" "$WORK/out" || fail "traceme zombie: $(cat "$WORK/out")"

have_strace=0 have_gdb=0
command -v strace >/dev/null && strace -qq -e trace=none true 2>/dev/null && have_strace=1
command -v gdb >/dev/null && have_gdb=1
[ $have_strace = 1 ] || [ $have_gdb = 1 ] || skip "neither strace nor gdb is installed"

# same_as_native NAME CMD...: stdout, stderr (pids and addresses masked)
# and exit status under psup are those of the native run.
same_as_native() {
	local name=$1 nrc
	shift
	timeout 60 "$@" >"$name.nout" 2>"$name.nerr"
	nrc=$?
	run_psup 60 run -q -o "$name.cbor" -- "$@"
	[ "$RC" -eq "$nrc" ] || { cat "$WORK/err" >&2; fail "$name: exit status $RC under psup, $nrc natively"; }
	mask() { sed -E 's/0x[0-9a-f]+/A/g; s/[0-9]{2,}/N/g' "$1"; }
	diff <(mask "$name.nout") <(mask "$WORK/out") >&2 || fail "$name: stdout differs from the native run"
	diff <(mask "$name.nerr") <(mask "$WORK/err") >&2 || fail "$name: stderr differs from the native run"
	report_json "$name.cbor" >"$name.json"
	jq_check "$name.json" '.summary.processes >= 1' "$name: no process in the record"
}

if [ $have_strace = 1 ]; then
	same_as_native strace-true strace -f -qq -e trace=exit_group true
	same_as_native strace-exit3 strace -f -qq -e trace=exit_group,execve sh -c 'exit 3'
	# PTRACE_SEIZE of a process psup traces (strace -p of a child of sh).
	# The child lives until strace traces it (it reads a FIFO that the
	# script writes then): a timer such as `sleep 1` could end first on a
	# loaded machine, strace's start under psup taking longer.
	cat >sp.sh <<'SH'
rm -f sp.fifo && mkfifo sp.fifo || exit 71
head -c1 sp.fifo >/dev/null &
t=$!
strace -qq -e trace=none -p $t &
s=$!
i=0 tp=0
while [ "$tp" != $s ] && [ $i -lt 400 ]; do
	while read -r k v; do [ "$k" = TracerPid: ] && tp=$v; done </proc/$t/status
	[ "$tp" = $s ] || sleep 0.05
	i=$((i + 1))
done
echo x >sp.fifo
wait $s
echo "strace -p: $?"
SH
	same_as_native strace-p sh sp.sh
	grep -q "strace -p: 0" "$WORK/out" || fail "strace -p failed under psup: $(cat "$WORK/out")"
fi
if [ $have_gdb = 1 ]; then
	same_as_native gdb-true gdb -nx -batch -ex run -ex bt --args /bin/true
	grep -q "exited normally" "$WORK/out" || fail "gdb did not run its program: $(cat "$WORK/out")"
	same_as_native gdb-segv gdb -nx -batch -ex run -ex bt --args "$TARGETS/segv"
	grep -q SIGSEGV "$WORK/out" || fail "gdb did not see the program's SIGSEGV: $(cat "$WORK/out")"
fi
check_nothing_left
