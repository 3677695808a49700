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
check_nothing_left
