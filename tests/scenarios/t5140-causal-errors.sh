#!/usr/bin/env bash
# Bad causal options: a clear one-line error on stderr ("psup: ..."), a
# non-zero exit, nothing left running. Includes a well-formed spec that names
# no line of the program (an unknown FILE:LINE or function).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

T="$TARGETS/causal-count"
good=$(causal_ref causal-count.c causal_count_line)

nbad=0
bad() { # what, expected word in the message, psup args (-o x.cbor: a fresh name each)...
	local what=$1 word=$2 a args=()
	shift 2
	nbad=$((nbad + 1))
	for a in "$@"; do
		[ "$a" = x.cbor ] && a=x$nbad.cbor
		args+=("$a")
	done
	run_psup 30 "${args[@]}"
	[ "$RC" -ne 0 ] || fail "$what: psup $* exited 0"
	[ "$RC" -ne 124 ] || fail "$what: timed out"
	local n
	n=$(grep -c . "$WORK/err")
	[ "$n" -eq 1 ] || { cat "$WORK/err" >&2; fail "$what: $n lines on stderr, expected one error line"; }
	grep -q '^psup: ' "$WORK/err" || { cat "$WORK/err" >&2; fail "$what: the error does not start with 'psup: '"; }
	grep -qi -- "$word" "$WORK/err" || { cat "$WORK/err" >&2; fail "$what: the error does not mention '$word'"; }
	note "$what: $(cat "$WORK/err")"
}

bad "speedup not a multiple of 5" 7 run -q -o x.cbor -p "$good" --speedup 7 -- "$T" 10 1
bad "speedup above 100" 105 run -q -o x.cbor -p "$good" --speedup 105 -- "$T" 10 1
bad "speedup not a number" abc run -q -o x.cbor -p "$good" --speedup abc -- "$T" 10 1
bad "malformed FILE:LINE" 12x run -q -o x.cbor -p causal-count.c:12x -- "$T" 10 1
bad "empty spec" "progress point" run -q -o x.cbor -p '' -- "$T" 10 1
bad "latency with one point" latency run -q -o x.cbor --latency "$good" -- "$T" 10 1
bad "runs not a number" runs run -q -o x.cbor --runs x -- "$T" 10 1
bad "runs zero" runs run -q -o x.cbor --runs 0 -- "$T" 10 1
bad "experiment length zero" experiment run -q -o x.cbor -p "$good" --experiment-ms 0 -- "$T" 10 1
bad "malformed --line" line run -q -o x.cbor -p "$good" --line causal-count.c -- "$T" 10 1
# --causal needs points: the message names every way to give one.
bad "--causal without a point" "--sampled-progress" run -q -o x.cbor --causal -- "$T" 10 1
for w in -p --latency --runs; do
	grep -q -- "$w" "$WORK/err" || fail "--causal without a point: the error does not name $w"
done
bad "--runs in attach" runs attach -q -o x.cbor --runs 3 1
# Well-formed, but no such line or function in the program.
bad "unknown line" nosuch.c run -q -o x.cbor -p nosuch.c:12 -- "$T" 10 1
bad "unknown function" no_such_function run -q -o x.cbor -p no_such_function -- "$T" 10 1
bad "unknown --line" nosuch.c run -q -o x.cbor -p "$good" --line nosuch.c:5 -- "$T" 10 1
check_nothing_left
