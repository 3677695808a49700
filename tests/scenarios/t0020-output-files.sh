#!/usr/bin/env bash
# Output files (issue 22): psup writes only what -o names, by the rules of
# the README's "Output files": a failed run removes only the file it created,
# --force replaces a link instead of writing through it, a report never
# overwrites an input or an existing file without --force, and a FIFO with
# no reader is an error at once, never a hang.
. "$(dirname "$0")/lib.sh"

cd "$WORK"
chmod 755 "$WORK" # nobody plants a link below
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
[ "$(id -u)" -eq 0 ] || skip "needs root (device nodes, another user's links)"
as_nobody true || skip "setpriv cannot switch to nobody"
run_psup 30 run -q -o probe.cbor -- true
[ "$RC" -eq 0 ] || skip "psup cannot record here: $(cat "$WORK/err")"
rm -f probe.cbor

one_line() { # what
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "$1: not one line"; }
	grep -q '^psup: ' "$WORK/err" || fail "$1: not prefixed 'psup: '"
}

# 1. A failed run removes nothing it did not create: a device node, a link
# (trusted or not) and what it names stay.
mknod mynull c 1 3
run_psup 30 run -f -o mynull -- /nonexistent
expect_rc 127
[ -c mynull ] || fail "a failed run removed the character device -o named"
ln -s /proc/self/fd/1 mystdout
run_psup 30 run -f -o mystdout -- /nonexistent
expect_rc 127
[ -L mystdout ] || fail "a failed run removed the link -o named (/dev/stdout's kind)"
echo keep >kept
ln -s kept mylink
chown -h nobody mylink
run_psup 30 run -f -o mylink -- /nonexistent
expect_rc 127
[ "$(cat kept)" = keep ] || fail "a failed run with -o LINK wrote through the link"
# What the failed run created itself goes.
run_psup 30 run -o fresh.cbor -- /nonexistent
[ -e fresh.cbor ] && fail "a failed run left its own fresh.cbor behind"

# 2. --force replaces another user's link, never writes through it; without
# --force the link is an existing file.
mkdir -m 777 shared
printf 'root secret\n' >victim
chmod 600 victim
as_nobody ln -s "$WORK/victim" shared/psup.cbor
cd shared
run_psup 30 run -q -- true
expect_rc 1
one_line "-o over a planted link without --force"
grep -q -- "--force" "$WORK/err" || fail "the exists error does not name --force"
run_psup 30 run -q -f -- true
expect_rc 0
cd "$WORK"
[ "$(cat victim)" = "root secret" ] || fail "--force wrote through another user's link"
[ -L shared/psup.cbor ] && fail "--force left the planted link in place"
[ -f shared/psup.cbor ] || fail "--force did not write a new record"
timeout 30 "$PSUP" report shared/psup.cbor >/dev/null || fail "the new record does not read"
# A regular file replaced by --force is a new file: its other hard links
# keep the old contents.
echo old >hard.cbor
ln hard.cbor other-link
run_psup 30 run -q -f -o hard.cbor -- true
expect_rc 0
[ "$(cat other-link)" = old ] || fail "--force wrote into a hard link of the file"

# Streams: a character device or a FIFO is written as it is, no --force
# needed, and stays.
run_psup 30 run -q -o mynull -- true
expect_rc 0
[ -c mynull ] || fail "-o DEVICE replaced the device"
# /dev/stdout into a file the shell made: an existing file, so --force; the
# link (root's) is followed, not replaced.
timeout 30 "$PSUP" run -q -f -o /dev/stdout -- true >stdout.cbor 2>"$WORK/err" </dev/null
[ -s stdout.cbor ] || fail "-o /dev/stdout wrote nothing: $(cat "$WORK/err")"
[ -L /dev/stdout ] || [ -e /dev/stdout ] || fail "-o /dev/stdout removed /dev/stdout"
timeout 30 "$PSUP" run -q -o /dev/stdout -- true 2>"$WORK/err" | cat >piped.cbor
timeout 30 "$PSUP" report piped.cbor >/dev/null || fail "-o /dev/stdout into a pipe: not a record"

# 4. A FIFO without a reader: one line at once, not a hang.
mkfifo fifo
run_psup 20 run -f -o fifo -- true
expect_rc 1
one_line "-o FIFO without a reader"
grep -q "FIFO has no reader" "$WORK/err" || fail "FIFO error: $(cat "$WORK/err")"
[ -p fifo ] || fail "the FIFO was removed"
# With a reader it is a stream of the record.
cat fifo >from-fifo &
reader=$!
BG_PIDS+=("$reader")
# cat sleeps in open() until a writer comes: it is a reader from then on.
wait_for "[ \"\$(readlink /proc/$reader/exe)\" = \"\$(command -v cat)\" ] && [ \"\$(proc_state $reader)\" = S ]" 10 ||
	fail "the FIFO's reader did not start"
run_psup 30 run -q -o fifo -- true
expect_rc 0
wait "$reader"
timeout 30 "$PSUP" report from-fifo >/dev/null || fail "the record read from the FIFO does not read"
# Directories and block devices are refused in one line.
mkdir adir
run_psup 30 run -f -o adir -- true
expect_rc 1
one_line "-o DIRECTORY"
mknod ablock b 7 200
run_psup 30 run -f -o ablock -- true
expect_rc 1
one_line "-o BLOCKDEVICE"
[ -b ablock ] || fail "-o BLOCKDEVICE removed it"

# 3. psup report -o: never an input (by name, hard link or link), never an
# existing file without --force.
run_psup 30 run -q -o run.cbor -- true
expect_rc 0
cp run.cbor run.orig
ln run.cbor run-hard.cbor
ln -s run.cbor run-sym.cbor
for o in run.cbor run-hard.cbor run-sym.cbor; do
	for f in "" -f; do
		run_psup 30 report $f -o "$o" run.cbor
		expect_rc 2
		one_line "report $f -o $o run.cbor"
		cmp -s run.cbor run.orig || fail "report $f -o $o replaced its input"
	done
done
run_psup 30 report -o report.txt run.cbor
expect_rc 0
grep -q Summary report.txt || fail "report -o wrote no report"
run_psup 30 report -o report.txt run.cbor
expect_rc 1
one_line "report -o EXISTING"
grep -q -- "--force" "$WORK/err" || fail "report's exists error does not name --force"
run_psup 30 report -f -o report.txt run.cbor
expect_rc 0
run_psup 10 report --help
grep -q -- "--force" "$WORK/out" || fail "report --help does not describe --force"
# A failed write names its real cause.
timeout 30 "$PSUP" report run.cbor >/dev/full 2>"$WORK/err"
RC=$?
expect_rc 1
one_line "report >/dev/full"
grep -qi "no space left" "$WORK/err" || fail "report >/dev/full: $(cat "$WORK/err")"
check_nothing_left
