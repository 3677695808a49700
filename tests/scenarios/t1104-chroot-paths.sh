#!/usr/bin/env bash
# A program in a chroot names its files as it sees them: the kernel's mmap
# records of its mappings say "/pipe" where psup sees "$WORK/croot/pipe".
# Its maps are read from /proc instead (builtin/record.c, exec_file_of()):
# the report names the image as psup sees it, and its functions.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
[ "$(id -u)" = 0 ] || skip "chroot needs root"
command -v chroot >/dev/null || skip "no chroot"
mkdir croot
cp "$TARGETS/causal-pipeline-static" croot/pipe
[ ! -e /pipe ] || skip "/pipe exists outside the chroot"

run_psup 60 run -q -o c.cbor -- chroot "$WORK/croot" /pipe 0.3
expect_rc 0
report_json c.cbor >c.json
jq_check c.json '[.functions[] | select(.function == "consume_one" or .function == "produce_one") | .self] | add > 10' \
	"the chroot'ed program's samples are not named"
jq_check c.json "[.functions[] | select(.function == \"consume_one\") | .image] | all(. == \"$WORK/croot/pipe\")" \
	"the image is not named as psup sees it ($WORK/croot/pipe)"
# A dynamic program there: the libraries ld.so maps after the exec (their
# mmap records name /lib/...) are named as psup sees them
# too, from /proc, as every later thread's and process's would be
# (/lib/... names psup's own libc: no image check would catch that).
# (ld.so finds libratio.so in its default directory: without /proc in the
# chroot, $ORIGIN cannot be known.)
mkdir -p croot/lib64 croot/lib/x86_64-linux-gnu
cp "$TARGETS/ratio" croot/
cp "$TARGETS/libratio.so" /lib/x86_64-linux-gnu/libc.so.6 croot/lib/x86_64-linux-gnu/
cp /lib64/ld-linux-x86-64.so.2 croot/lib64/
run_psup 60 run -q -o d.cbor -- chroot "$WORK/croot" /ratio lib 0.3
expect_rc 0
report_json d.cbor >d.json
jq_check d.json '[.functions[] | select(.function == "lib_three") | .self] | add > 10' \
	"the chroot'ed program's samples in its library are not named"
jq_check d.json "[.functions[] | select(.function == \"lib_three\") | .image] | all(. == \"$WORK/croot/lib/x86_64-linux-gnu/libratio.so\")" \
	"the library is not named as psup sees it ($WORK/croot/lib/x86_64-linux-gnu/libratio.so)"
check_nothing_left
