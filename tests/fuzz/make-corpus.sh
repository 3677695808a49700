#!/usr/bin/env bash
# Builds a seed corpus for fuzz-reader: real recordings of the test targets
# in every mode (profile with threads and locks, causal, witch, attach-like
# short runs), each also cut in a few places, since the reader must take any
# prefix. With EXPORTS_DIR, also fuzz-exports' seeds there: the files, and
# two or four recordings joined by its separator (tests/fuzz/fuzz-exports.c),
# mostly runs of one program, which psup diff compares.
# Usage: tests/fuzz/make-corpus.sh BUILD_DIR CORPUS_DIR [EXPORTS_DIR]
set -eu
usage="usage: make-corpus.sh BUILD_DIR CORPUS_DIR [EXPORTS_DIR]"
build=${1:?$usage}
out=${2:?$usage}
exp=${3:-}
psup="$build/psup"
t="$build/tests/targets"
mkdir -p "$out"
export LD_LIBRARY_PATH="$t${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

rec() { # name, psup run options..., -- target...  (into $dir)
	local name=$1
	shift
	if timeout 120 "$psup" run -q -f -o "$dir/$name.cbor" "$@" >/dev/null 2>&1; then
		echo "$name: $(stat -c %s "$dir/$name.cbor") bytes"
	else
		echo "$name: not recorded (skipped)" >&2
		rm -f "$dir/$name.cbor"
	fi
}

record_all() {
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
}

dir=$out
record_all

# prefixes: libFuzzer mutates better from small, varied starts
for f in "$out"/*.cbor; do
	size=$(stat -c %s "$f")
	for cut in 64 512 4096; do
		[ "$size" -gt "$cut" ] && head -c "$cut" "$f" >"${f%.cbor}-cut$cut.cbor"
	done
done
ls "$out" | wc -l

[ -n "$exp" ] || exit 0
mkdir -p "$exp"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
for n in 2 3; do
	dir=$runs/$n
	mkdir -p "$dir"
	record_all >/dev/null
done
sep=$'\n--psup-fuzz-next-file--\n'
join() { # output, files...
	local o=$1 f first=1
	shift
	for f in "$@"; do
		[ -f "$f" ] || return 0
	done
	for f in "$@"; do
		[ $first = 1 ] || printf '%s' "$sep"
		first=0
		cat "$f"
	done >"$o"
}
cp "$out"/*.cbor "$exp"/
for f in "$out"/*.cbor; do
	name=$(basename "$f" .cbor)
	case $name in *-cut*) continue ;; esac
	join "$exp/$name-pair.cbor" "$f" "$runs/2/$name.cbor"
	join "$exp/$name-runs.cbor" "$f" "$runs/2/$name.cbor" "$runs/3/$name.cbor" "$runs/2/$name.cbor"
	join "$exp/$name-cut.cbor" "$runs/3/$name.cbor" "$out/$name-cut512.cbor"
done
# other programs, or one program in other modes: diff says why not
join "$exp/x-spin-threads.cbor" "$out/spin.cbor" "$out/threads.cbor"
join "$exp/x-hostile-causal.cbor" "$out/hostile.cbor" "$out/causal.cbor"
join "$exp/x-hostile-witch.cbor" "$out/hostile.cbor" "$runs/2/witch.cbor"
ls "$exp" | wc -l
