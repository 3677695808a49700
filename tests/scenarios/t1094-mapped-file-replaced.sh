#!/usr/bin/env bash
# The program replaces a file it has mapped by a FIFO while psup profiles it
# (tests/targets/fifomap.c): psup must not open the FIFO (an open() waits for
# a writer for ever, with the program stuck in its next ptrace stop), and
# must finish and report as usual; the symbols of the replaced library come
# from the mapped file itself (/proc/PID/map_files) where that is readable.
# Then the same for the separate debug file a library's .gnu_debuglink names:
# a FIFO under that name beside the library is not opened either.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
cp "$TARGETS/libdlwork.so" victim.so || fail "no libdlwork.so"
cp "$TARGETS/libdlwork.so" other.so
run_psup 30 run -q -o f.cbor -- "$TARGETS/fifomap" "$WORK/victim.so" "$WORK/other.so" 0.5
expect_rc 0
[ -p victim.so ] || fail "the target did not put a FIFO in place of victim.so"
grep -qx done out || fail "the target did not finish: $(cat out)"
report_json f.cbor >f.json
jq_check f.json '.summary.samples > 0' "no samples recorded"
jq_check f.json '[.images[] | select((.image // "") | endswith("/victim.so")) | .samples] | add > 0' \
	"no samples in the replaced library"
if [ -r /proc/self/map_files ] && ls /proc/self/map_files/ >/dev/null 2>&1; then
	jq_check f.json '[.functions[] | select((.image // "") | endswith("/victim.so")) | .function] | index("dl_three") != null' \
		"the replaced library's function was not named"
fi
check_nothing_left

command -v objcopy >/dev/null || { note "no objcopy: the debug link case is not tried"; exit 0; }
objcopy --only-keep-debug other.so w.debug &&
	objcopy --strip-debug --add-gnu-debuglink=w.debug other.so w.so || fail "objcopy failed"
rm -f w.debug
mkfifo w.debug
run_psup 30 run -q -o d.cbor -- "$TARGETS/dlratio" "$WORK/w.so" 0.5
expect_rc 0
report_json d.cbor >d.json
jq_check d.json '[.functions[] | select((.image // "") | endswith("/w.so")) | .function] | index("dl_three") != null' \
	"the stripped library's function was not named from its symbol table"
check_nothing_left
