#!/usr/bin/env bash
# A process shorter than the recorder's tick (100 ms) keeps its samples'
# names: with per-CPU sampling its samples wait in the CPU rings until a
# drain, and a drain after its exit found no mappings to read (every sample
# [unknown], `chromium --version` too). The run's first process has its maps
# read at its leader's exit stop, while they are still there; the processes
# it starts have theirs from their mmap records (and stop at no exit).
# Counted in samples, not time.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# ratio spends 50 ms of CPU in work_three and work_one, then exits.
run_psup 60 run -q -o short.cbor -- "$TARGETS/ratio" direct 0.05
expect_rc 0
report_json short.cbor >short.json
jq_check short.json '.summary.samples >= 10' "too few samples to judge"
# Shares of the user-space samples: a loaded machine adds kernel ones.
jq_check short.json '([.images[] | select(.image | endswith("/ratio")) | .samples] | add // 0) / ([.images[] | select(.image != "[kernel]") | .samples] | add) > 0.8' \
	"the short process's samples are not attributed to its image"

# Two short processes of a shell: each one's samples named.
run_psup 60 run -q -o two.cbor -- sh -c "\"$TARGETS/ratio\" direct 0.03 && \"$TARGETS/ratio\" lib 0.03"
expect_rc 0
report_json two.cbor >two.json
jq_check two.json '[.functions[] | select(.function == "work_three")] | length > 0' \
	"the first process's samples are not named"
jq_check two.json '[.functions[] | select(.function == "lib_three")] | length > 0' \
	"the second process's samples are not named"
# A short child forked right after its parent's dlopen(): its maps are a copy
# of its parent's, made before the dlopen's mmap record reached psup, and
# its samples in the library are drained after its end (nothing in /proc to
# read then): the parent's record is its too.
lib=$(ls "$TARGETS"/libdlwork.so 2>/dev/null) || fail "libdlwork.so not built"
run_psup 60 run -q -o fork.cbor -- "$TARGETS/dlratio" "$lib" 0.05 fork
expect_rc 0
report_json fork.cbor >fork.json
jq_check fork.json '([.functions[] | select(.function == "dl_three" or .function == "dl_one") | .self] | add // 0) >= 5' \
	"the forked child's samples in the dlopen()ed library are not named"

# Nothing of a process is named at its exit: without samples (a period of
# a second), a run of /bin/true loads no symbols (the last switch of an
# exiting thread is no wait to name; naming it loaded libc's DWARF in every
# run). A real block while ld.so starts it (1 run in 3 or 10 on a loaded
# machine: a wait for memory or a page) is a wait, named: one run of five
# without one says the exit is not named.
for i in 1 2 3 4 5; do
	run_psup 60 run -v -c 1000000000 -f -o true.cbor -- /bin/true
	expect_rc 0
	grep -q 'symbols: 0 images loaded.* 0 addresses resolved' "$WORK/err" && break
	[ $i -lt 5 ] || { cat "$WORK/err" >&2; fail "each of 5 runs of /bin/true without samples loaded symbols"; }
done
check_nothing_left
