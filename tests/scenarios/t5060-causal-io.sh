#!/usr/bin/env bash
# Requests arrive from I/O at a fixed pace: a feeder thread sleeps 1 ms in
# nanosleep and writes to a pipe, a handler blocks in read() and works on
# each request (the progress point counts them), a worker computes beside
# them. No line can make the program faster. The handler's line is the trap:
# its samples pause the other threads; if psup credited the feeder's sleep
# (blocking I/O must NOT be credited, Coz 3.4.2), the arrivals would run
# ahead of the virtual clock and the line would show a phantom speedup.
# Really cutting the line by 50% changes nothing (see the target).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

handle=$(causal_ref causal-iosleep.c causal_io_handle)
spin=$(causal_ref causal-iosleep.c causal_io_spin)
done_line=$(causal_ref causal-iosleep.c causal_io_done)

run_psup 120 run -q -o h.cbor --experiment-ms 50 -p "$done_line" --line "$handle" -- "$TARGETS/causal-iosleep" 7
expect_rc 0
causal_report h.cbor h.json
causal_slope_in h.json "$handle" -0.5 0.25 "handler line (I/O paced)"
m=$(causal_wmean h.json "$handle" 50)
note "handler line: mean predicted program speedup at >= 50%: $m%"
[ "$m" != none ] || { causal_show h.json; fail "no experiment at >= 50% on the handler's line"; }
in_range "$m" -1000 15 || { causal_show h.json; fail "phantom speedup: the handler's line predicts $m% for an I/O-paced program"; }

run_psup 120 run -q -o w.cbor --experiment-ms 50 -p "$done_line" --line "$spin" -- "$TARGETS/causal-iosleep" 7
expect_rc 0
causal_report w.cbor w.json
causal_slope_in w.json "$spin" -0.5 0.25 "unrelated worker line"
check_nothing_left
