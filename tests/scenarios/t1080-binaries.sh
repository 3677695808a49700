#!/usr/bin/env bash
# Programs built any ordinary way: static, stripped (no symbols: addresses
# still attributed to the image), C++ (demangled names), PIE and non-PIE, and
# where the compilers exist clang and Rust. Each runs to its own exit status
# and its hot function gets the samples.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

cat >hot.c <<'C'
#include <stdlib.h>
__attribute__((noinline)) long hot_c(long n) { long x = 0; for (long i = 0; i < n; i++) x += i * i ^ (x >> 3); return x; }
int main(int argc, char **argv) { return hot_c(argc > 1 ? atol(argv[1]) : 200000000) == 1 ? 9 : 3; }
C
cat >hot.cpp <<'C'
#include <cstdlib>
namespace ns { struct Work { long run(long n) __attribute__((noinline)); };
long Work::run(long n) { long x = 0; for (long i = 0; i < n; i++) x += i * i ^ (x >> 3); return x; } }
int main(int argc, char **argv) { ns::Work w; return w.run(argc > 1 ? atol(argv[1]) : 200000000) == 1 ? 9 : 3; }
C
cat >hot.rs <<'R'
#[inline(never)]
fn hot_rust(n: u64) -> u64 { let mut x: u64 = 0; for i in 0..n { x = x.wrapping_add(i.wrapping_mul(i) ^ (x >> 3)); } x }
fn main() { std::process::exit(if hot_rust(200000000) == 1 { 9 } else { 3 }); }
R

check() { # binary, function (as the report names it), min percent
	run_psup 120 run -q -o "$1.cbor" -- "./$1"
	expect_rc 3
	report_json "$1.cbor" >"$1.json"
	local s
	s=$(func_total_pct "$1.json" "$2")
	note "$1: $2 $s%"
	in_range "$s" "$3" 100 || fail "$1: $2 has $s% of the samples"
}

gcc -O2 -g hot.c -o pie || fail "gcc failed"
check pie hot_c 85
gcc -O2 -g -no-pie -fno-pie hot.c -o nopie
check nopie hot_c 85
gcc -O2 -g -static hot.c -o static || fail "static link failed (libc6-dev has libc.a)"
check static hot_c 85
cp pie stripped
strip stripped
run_psup 120 run -q -o stripped.cbor -- ./stripped
expect_rc 3
report_json stripped.cbor >stripped.json
# Images are counted by the sample's leaf: the kernel's samples (interrupts,
# faults; once 20% of a 0.27 s run beside another test in CI) are left out.
s=$(jq -r '([.images[] | select(.image | endswith("/stripped")) | .samples] | add // 0) * 100 /
	([.images[] | select(.image != "[kernel]") | .samples] | add)' stripped.json)
note "stripped: its image has $s% of the user samples"
in_range "$s" 85 100 || fail "a stripped binary's samples are not attributed to its image ($s%)"
g++ -O2 -g hot.cpp -o cpp || fail "g++ failed"
check cpp "ns::Work::run(long)" 85
if command -v clang >/dev/null; then
	clang -O2 -g hot.c -o clang_built
	check clang_built hot_c 85
else
	note "no clang here: clang build not checked"
fi
if command -v rustc >/dev/null; then
	rustc -O -g hot.rs -o rust 2>/dev/null || fail "rustc failed"
	run_psup 120 run -q -o rust.cbor -- ./rust
	expect_rc 3
	report_json rust.cbor >rust.json
	# The loop's innermost frame is core's inlined wrapping_add; the Rust
	# function is on every sample's path.
	jq_check rust.json '[.functions[] | select(.function | test("hot_rust")) | .total_percent] | max > 85' \
		"Rust function not found in the call paths"
else
	note "no rustc here: Rust build not checked"
fi
check_nothing_left
