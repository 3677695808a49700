#!/usr/bin/env bash
# Ctrl-C in the middle of a causal run: the terminal sends SIGINT to the
# whole foreground group (psup and the program). The program dies of it,
# psup mirrors that (130), and every experiment finished before is in the
# record (records are streamed as experiments end, not kept for the end).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

done_line=$(causal_ref causal-pipeline.c causal_pipe_done)
# setsid: a process group of its own to signal as a terminal would;
# --default-signal: a background job of a script ignores SIGINT otherwise.
setsid env --default-signal=INT "$PSUP" run -q -o i.cbor --experiment-ms 50 -p "$done_line" -- \
	"$TARGETS/causal-pipeline" 100 pthread >"$WORK/out" 2>"$WORK/err" &
ppid=$!
BG_PIDS+=("$ppid")
seen=0
exps() { # finished experiments in the record so far
	seen=$(timeout 30 "$PSUP" report --format json i.cbor 2>/dev/null | jq -r '.causal.info.experiments // 0' 2>/dev/null)
	[ -n "$seen" ] && [ "$seen" -ge 8 ]
}
wait_for exps 50 || { cat "$WORK/err" >&2; fail "no 8 experiments recorded while the program ran (last count: ${seen:-none})"; }
pgid=$(ps -o pgid= -p "$ppid" | tr -d ' ')
[ -n "$pgid" ] || fail "psup is gone before the interrupt"
kill -INT -- "-$pgid"
for ((i = 0; i < 600; i++)); do
	kill -0 "$ppid" 2>/dev/null || break
	sleep 0.05
done
kill -0 "$ppid" 2>/dev/null && fail "psup still running 30 s after Ctrl-C"
wait "$ppid"
rc=$?
[ "$rc" -eq 130 ] || { cat "$WORK/err" >&2; fail "Ctrl-C: psup exited $rc, expected 130 (the program's death by SIGINT)"; }
causal_report i.cbor i.json
n=$(jq -r '.causal.info.experiments' i.json)
note "experiments before Ctrl-C: $seen, in the final record: $n"
[ "$n" -ge "$seen" ] || fail "the record lost experiments at Ctrl-C: $n < $seen seen before"
check_nothing_left
