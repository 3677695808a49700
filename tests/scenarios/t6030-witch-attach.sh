#!/usr/bin/env bash
# psup attach --witch: a running two-thread program's dead stores are found
# (about half its stores, on the pair zero -> rewrite), Ctrl-C detaches, the
# program runs on and ends well, and no debug register is left set in any
# of its threads (read with ptrace after the detach).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/witch-lib.sh"
cd "$WORK"
src=$SRCDIR/tests/targets

# The program runs until the test is done with it (stop file): it must
# outlive the attach and the debug register check after the detach.
start_bg "$TARGETS/witch-loop" --until "$WORK/stop"
"$PSUP" attach -q -o a.cbor --witch dead --witch-period 1000000 $BG >a.out 2>a.err &
apid=$!
wait_for "[ \"\$(tracer_of $BG)\" = $apid ]" 10 || fail "psup did not attach"
# 2.5 s of the program's CPU time traced, however loaded the machine
wait_cpu $BG 2500 120 || fail "the program did not run 2.5 s of CPU time while attached"
interrupt_attach $apid 15
[ $RC -eq 0 ] || { cat a.err >&2; fail "psup attach exited $RC"; }
[ "$(tracer_of $BG)" = 0 ] || fail "target still traced"
ls -l /proc/$BG/fd | grep -q perf_event && fail "a perf fd was left in the target"
"$TARGETS/witch-drcheck" $BG >dr.out || fail "cannot read the target's debug registers"
note "debug registers after detach: $(tr '\n' ' ' <dr.out)"
[ "$(wc -l <dr.out)" -ge 2 ] || fail "expected 2 threads in the debug register check"
awk '$2 != "0" && $2 != "0x0" { exit 1 }' dr.out || fail "a debug register was left set: $(cat dr.out)"
touch "$WORK/stop"
wait $BG
brc=$?
[ $brc -eq 0 ] || fail "the target exited $brc after the detach"
witch_json a.cbor a.json
z=$(wmark "$src/witch-loop.c" loop_zero)
w=$(wmark "$src/witch-loop.c" loop_rewrite)
d=$(wfrac a.json dead)
p=$(wpair_pct a.json dead witch-loop.c "$z" "$w")
note "attach: dead $d%, pair (zero, rewrite) $p%"
jq_check a.json '.witch.dead.counters.traps >= 20' "too few traps in 2.5 s of the program's CPU time attached"
in_range "$d" 30 70 || fail "attach: dead fraction $d%, expected about 50"
in_range "$p" 90 100.01 || fail "attach: pair ($z, $w) has $p% of the waste"
check_nothing_left
