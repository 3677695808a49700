#!/usr/bin/env bash
# psup's set-up on a fresh Debian 12 machine, in one command:
#   scripts/bootstrap.sh demo   install what is missing, build, profile the bundled demo, print its report
#   scripts/bootstrap.sh test   install what is missing, build (plain and sanitizer builds), run every test
# .ci/run calls the second.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
case "$mode" in demo|test) ;; *) echo "usage: $0 demo|test" >&2; exit 2 ;; esac

# Build and test dependencies, all Debian packages. Both commands install the
# same ones, so the demo's build is the test's build: coz-profiler's coz.h
# (t5105: psup counts a coz.h program's progress points without libcoz) and
# libc6-dbg (libc's debug info: libc's own frames, and lock blame through
# them, are named in reports), golang-go (t1100 builds a Go program; t8060
# reads --format pprof files with `go tool pprof`), chromium (t8070 loads
# the HTML report in headless Chromium), protobuf-c and zlib (--format
# pprof: protoc-c generates its C at build time), scdoc (the man pages'
# source format; t0030 installs and renders them), strace and gdb (t1093:
# programs that trace their children work under psup).
packages=(gcc g++ pkg-config meson ninja-build libdw-dev libelf-dev libunwind-dev libpfm4-dev
          libcbor-dev libiberty-dev libzydis-dev jq procps python3 coz-profiler libc6-dbg
          clang-format golang-go chromium protobuf-c-compiler libprotobuf-c-dev zlib1g-dev
          scdoc strace gdb)

install_missing() {
	local missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && [ -z "${CI:-}" ] && return 0
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "bootstrap: installing ${missing[*]:-(checking)}" >&2
	$sudo apt-get update -qq
	[ ${#missing[@]} -eq 0 ] ||
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The installed versions of the packages: a build configured under other
# ones is configured anew (meson's checks, such as coz.h's, ran without what
# is there now), and a rerun with nothing new costs one dpkg-query.
installed() {
	dpkg-query -W -f='${Package} ${Version} ${Status}\n' "${packages[@]}" 2>/dev/null || true
}

build() { # dir, extra meson options...
	local dir=$1; shift
	local stamp=$dir/bootstrap-packages
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" -Dwerror=true "$@" >/dev/null
	elif [ "$(installed)" != "$(cat "$stamp" 2>/dev/null)" ]; then
		echo "bootstrap: packages changed since $dir was configured: configuring it anew" >&2
		# --reconfigure (and meson 1.0's --clearcache) keep the compiler
		# checks' old answers ('Has header "coz.h" : NO (cached)'): a
		# wiped directory is configured and built from nothing
		meson setup --wipe "$dir" -Dwerror=true "$@" >/dev/null
	fi
	installed >"$stamp"
	ninja -C "$dir" >/dev/null
}

install_missing
build build

if [ "$mode" = demo ]; then
	out=build/demo.cbor
	./build/psup run -f -o "$out" -- ./build/demo
	./build/psup report "$out"
	exit 0
fi

status=0
meson test -C build --print-errorlogs --num-processes 2 --no-suite causal-accuracy || status=1
build build-san -Db_sanitize=address,undefined -Db_lundef=false
# The sanitizers make psup two to three times slower: the timeouts, sized
# for the plain build on a loaded 2-core machine, are doubled.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-san --print-errorlogs --num-processes 2 --timeout-multiplier 2 \
		--suite unit --suite scenarios || status=1
# The causal profiles' known answers come last, one at a time: they are
# true only while nothing else runs (tests/scenarios/causal-lib.sh).
meson test -C build --print-errorlogs --num-processes 1 --suite causal-accuracy --logbase accuracy || status=1

# One closing line over the three runs, in the form CI reads, after one line
# for each skipped test with its reason: on a machine this script set up, a
# skip is something the set-up missed.
python3 - build/meson-logs/testlog.json build-san/meson-logs/testlog.json build/meson-logs/accuracy.json <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        t = json.loads(line)
        r = t.get("result", "")
        if r == "OK" or r == "EXPECTEDFAIL":
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
            why = [l for l in (t.get("stdout") or "").splitlines() if "skip" in l.lower()]
            print(f"skipped: {t.get('name', '?')} ({path.split('/')[0]}): {why[-1] if why else 'no reason given'}")
        else:
            counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
exit $status
