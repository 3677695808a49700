#!/usr/bin/env bash
# Latency points (Little's law over a begin/end pair) get the right sign.
# Three clients think 2 ms, then send a request to one server and wait;
# the server needs ~1 ms per request, so requests queue: a faster serve line
# means a lower latency, which psup must report as a POSITIVE program
# speedup (latency falls; Coz's viewer shows it inverted). With --latency
# BEGIN,END breakpoints, then with psup.h PSUP_BEGIN/PSUP_END("request").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

serve=$(causal_ref causal-latency.c causal_lat_serve)
begin=$(causal_ref causal-latency.c causal_lat_begin)
end=$(causal_ref causal-latency.c causal_lat_end)

run_psup 120 run -q -o l.cbor --experiment-ms 50 --latency "$begin,$end" --line "$serve" -- "$TARGETS/causal-latency" 12
expect_rc 0
causal_report l.cbor l.json
jq_check l.json '[.causal.progress_points[] | select(.kind == "latency")] | length == 1 and .[0].visits > 100' \
	"no latency point with arrivals"
jq_check l.json '[.causal.progress_points[] | select(.kind == "latency") | .visits - .departures] | .[0] | (. >= 0 and . <= 3)' \
	"arrivals and departures of a closed system with 3 clients differ by more than 3"
causal_slope_in l.json "$serve" 0.05 5 "latency, serve line (latency falls: positive)"

if [ -x "$TARGETS/causal-latency-psuph" ]; then
	run_psup 120 run -q -o s.cbor --experiment-ms 50 --causal --line "$serve" -- "$TARGETS/causal-latency-psuph" 12
	expect_rc 0
	causal_report s.cbor s.json
	jq_check s.json '[.causal.progress_points[] | select(.kind == "latency" and .name == "request")] | length == 1' \
		"no latency point named request from PSUP_BEGIN/PSUP_END"
	causal_slope_in s.json "$serve" 0.05 5 "psup.h latency, serve line"
fi
check_nothing_left
