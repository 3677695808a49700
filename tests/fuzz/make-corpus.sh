#!/usr/bin/env bash
# Builds a seed corpus for fuzz-reader: real recordings of the test targets
# in every mode (profile with threads and locks, causal, witch, attach-like
# short runs), each also cut in a few places, since the reader must take any
# prefix. Usage: tests/fuzz/make-corpus.sh BUILD_DIR CORPUS_DIR
set -eu
build=${1:?usage: make-corpus.sh BUILD_DIR CORPUS_DIR}
out=${2:?usage: make-corpus.sh BUILD_DIR CORPUS_DIR}
psup="$build/psup"
t="$build/tests/targets"
mkdir -p "$out"
export LD_LIBRARY_PATH="$t${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

rec() { # name, psup run options..., -- target...
	local name=$1
	shift
	if timeout 120 "$psup" run -q -f -o "$out/$name.cbor" "$@" >/dev/null 2>&1; then
		echo "$name: $(stat -c %s "$out/$name.cbor") bytes"
	else
		echo "$name: not recorded (skipped)" >&2
		rm -f "$out/$name.cbor"
	fi
}

rec spin -- "$t/spin" 0.2
rec threads -- "$t/threads" 3 0.1
rec threads-futex -- "$t/threads" --futex 3 200
rec parallel-phases -- "$t/parallel" phases 20
rec parallel-lock -- "$t/parallel" lock 50
rec hostile -- "$t/hostile-names" 100
rec forker -- "$t/forker" 5
rec execer -- "$t/execer" 2
rec causal --experiment-ms 20 --causal -- "$t/hostile-names" 1000
rec causal-pipeline --experiment-ms 20 -p "causal-pipeline.c:1" -- "$t/causal-pipeline" 2 pthread
rec witch --witch dead,silent,load --witch-period 100000 -- "$t/hostile-names" 100

# prefixes: libFuzzer mutates better from small, varied starts
for f in "$out"/*.cbor; do
	size=$(stat -c %s "$f")
	for cut in 64 512 4096; do
		[ "$size" -gt "$cut" ] && head -c "$cut" "$f" >"${f%.cbor}-cut$cut.cbor"
	done
done
ls "$out" | wc -l
