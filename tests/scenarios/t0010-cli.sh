#!/usr/bin/env bash
# CLI: help for every command, clear one-line errors and exit codes for bad usage.
. "$(dirname "$0")/lib.sh"

for c in "--help" "run --help" "attach --help" "report --help" "help run"; do
	run_psup 10 $c
	expect_rc 0
	grep -q usage "$WORK/out" || fail "'psup $c' printed no usage"
	[ -s "$WORK/err" ] && fail "'psup $c' wrote to stderr"
	# Help text is printed as it is, not through printf: a doubled %% shows.
	grep -n '%%' "$WORK/out" && fail "'psup $c' printed a doubled %%"
done

one_line_error() { # expected rc, args...
	local rc=$1
	shift
	run_psup 10 "$@"
	expect_rc "$rc"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "'psup $*' did not print exactly one error line"; }
	grep -q '^psup: ' "$WORK/err" || fail "'psup $*' error is not prefixed 'psup: '"
}

cd "$WORK"
one_line_error 2 frobnicate
one_line_error 2 run
one_line_error 2 run --bogus -- true
one_line_error 2 run -c 0 -- true
one_line_error 2 run --jitter 90 -- true
one_line_error 2 attach
one_line_error 2 attach abc
one_line_error 2 attach 0
one_line_error 2 attach -d -1 1
one_line_error 1 attach 999999999
grep -q "no such process" "$WORK/err" || fail "attach to a missing pid: $(cat "$WORK/err")"
one_line_error 1 run -e no-such-event -- true
grep -q "task-clock" "$WORK/err" || fail "unknown event error does not name the alternatives"
if ! perf stat -e cycles true >/dev/null 2>&1; then
	one_line_error 1 run -e cycles -- true
	grep -qi "pmu" "$WORK/err" || fail "cycles on a PMU-less machine: error does not say why"
fi
# Without libpfm4 (loaded when a name needs it): the clocks still work, a
# libpfm4 name says what is missing, --version says what is there.
export PSUP_TEST_LIBPFM=/nonexistent/libpfm.so.4
one_line_error 1 run -e PERF_COUNT_SW_CPU_CLOCK -- true
grep -q "need libpfm4" "$WORK/err" || fail "a libpfm4 name without libpfm4: $(cat "$WORK/err")"
run_psup 30 run -q -o nopfm.cbor -e cpu-clock -- true
expect_rc 0
run_psup 10 --version
grep -q '^events: task-clock and cpu-clock only (libpfm4 not loaded' "$WORK/out" ||
	fail "--version without libpfm4: $(grep events "$WORK/out")"
unset PSUP_TEST_LIBPFM
rm -f nopfm.cbor
[ -e psup.cbor ] && fail "a failed run left psup.cbor behind"

# An existing record is never overwritten silently.
echo keep >psup.cbor
one_line_error 1 run -- true
grep -q keep psup.cbor || fail "psup.cbor was overwritten"
grep -q -- "--force" "$WORK/err" || fail "the exists error does not name --force"
run_psup 30 run -q -f -- true
expect_rc 0
grep -q keep psup.cbor && fail "--force did not overwrite"

# Report of a file that is not there.
one_line_error 1 report no-such.cbor
