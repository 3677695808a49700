#!/usr/bin/env bash
# The report's exports hold what the JSON report holds, on recordings of the
# test targets (inlined helpers, a shared library, dlopen, threads, a static
# stripped program, a static causal one):
#  --format folded      "root;...;leaf COUNT" lines: one per distinct stack,
#                       counts adding up to the samples, the functions' self
#                       samples those of the report;
#  --format speedscope  speedscope's JSON: a sampled profile per thread,
#                       frames shared, weights adding up per thread and in all;
#  --format pprof       a gzipped profile.proto that `go tool pprof -raw`
#                       parses, with the samples, the inlined frames as lines
#                       of one location, build-ids; `-top` shows the report's
#                       functions and percentages;
#  --format coz-jsonl   Coz's JSON Lines, which reads (by the rules of Coz's
#                       parser) as the same profile as the legacy --format coz.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

lib=$(ls "$TARGETS"/libdlwork.so 2>/dev/null) || fail "libdlwork.so not built"
run_psup 120 run -q -o inline.cbor -- "$TARGETS/ratio" inline 0.6
expect_rc 0
run_psup 120 run -q -o lib.cbor -- "$TARGETS/ratio" lib 0.6
expect_rc 0
run_psup 120 run -q -o dl.cbor -- "$TARGETS/dlratio" "$lib" 0.6
expect_rc 0
run_psup 120 run -q -o threads.cbor -- "$TARGETS/threads" 3 0.3
expect_rc 0
run_psup 120 run -q -o static.cbor -- "$TARGETS/parallel-static-stripped" phases 10
expect_rc 0

have_go=false
if command -v go >/dev/null; then
	have_go=true
	# go tool pprof only reads files: no module, no network, no cache in $HOME
	export HOME="$WORK/home" GOCACHE="$WORK/gocache" GOTOOLCHAIN=local GOFLAGS= GOPROXY=off
	mkdir -p "$HOME"
else
	note "no go here (bootstrap installs golang-go): the pprof files are not read back"
fi

check() { # name, record files...
	local n=$1
	shift
	report_json "$@" >"$n.json"
	for f in folded speedscope; do
		timeout 60 "$PSUP" report --format $f -o "$n.$f" "$@" 2>err ||
			{ cat err >&2; fail "$n: psup report --format $f failed"; }
	done
	timeout 60 "$PSUP" report --format pprof -o "$n.pb.gz" "$@" 2>err ||
		{ cat err >&2; fail "$n: psup report --format pprof failed"; }
	gzip -t "$n.pb.gz" || fail "$n: the pprof file is not gzip"
	python3 - "$n" <<'PY' || fail "$n: folded or speedscope differ from the JSON report"
import json, sys
from collections import Counter
n = sys.argv[1]
rep = json.load(open(n + ".json"))
total = rep["summary"]["samples"]
runs = rep["runs"]
# untrusted names: a control character or a stray byte (U+FFFD in JSON)
# is one '?', and folded's frame separator ';' is ':'
def clean(name):
    return "".join("?" if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c == "\ufffd" else c
                   for c in name)
self_by_name, folded_self = Counter(), Counter()
for f in rep["functions"]:
    self_by_name[f["function"]] += f["self"]
    folded_self[clean(f["function"]).replace(";", ":")] += f["self"]
self_by_name, folded_self = +self_by_name, +folded_self

# folded: "a;b;c COUNT", distinct stacks, the leaf frame's count = self
stacks, leaf = set(), Counter()
fsum = 0
for i, line in enumerate(open(n + ".folded"), 1):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not stack or not count.isdigit() or int(count) <= 0:
        sys.exit(f"folded line {i} is not 'STACK COUNT': {line!r}")
    if stack in stacks:
        sys.exit(f"folded line {i} repeats a stack: {stack}")
    frames = stack.split(";")
    if "" in frames:
        sys.exit(f"folded line {i} has an empty frame: {stack}")
    stacks.add(stack)
    fsum += int(count)
    leaf[frames[-1]] += int(count)
if fsum != total:
    sys.exit(f"folded counts add up to {fsum}, the report has {total} samples")
if leaf != folded_self:
    sys.exit(f"folded leaves {leaf.most_common(5)} != report self {folded_self.most_common(5)}")

# speedscope: shared frames, a sampled profile per thread, weights
s = json.load(open(n + ".speedscope"))
if s.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
    sys.exit("speedscope: no $schema")
frames = s["shared"]["frames"]
if not frames or not all(isinstance(f["name"], str) and f["name"] for f in frames):
    sys.exit("speedscope: frames without names")
timed = all(r["clock"] for r in runs)
period = runs[0]["period"] if len({r["period"] for r in runs}) == 1 else None
ssum, sleaf, threads = 0, Counter(), 0
for p in s["profiles"]:
    if p["type"] != "sampled" or len(p["samples"]) != len(p["weights"]):
        sys.exit(f"speedscope: profile {p['name']} is not a sampled one")
    if p["unit"] != ("nanoseconds" if timed else "none"):
        sys.exit(f"speedscope: unit {p['unit']}")
    if sum(p["weights"]) != p["endValue"] - p["startValue"]:
        sys.exit(f"speedscope: {p['name']}: weights do not add up to its range")
    threads += 1
    for st, w in zip(p["samples"], p["weights"]):
        if not st or not all(0 <= i < len(frames) for i in st):
            sys.exit(f"speedscope: bad stack {st}")
        ssum += w
        sleaf[frames[st[-1]]["name"]] += w
if timed and period:
    if ssum != total * period:
        sys.exit(f"speedscope: {ssum} ns, the report has {total} samples of {period} ns")
    sleaf = Counter({k: v // period for k, v in sleaf.items()})
elif not timed and ssum != total:
    sys.exit(f"speedscope: weights {ssum}, the report has {total} samples")
if period and sleaf != self_by_name:
    sys.exit(f"speedscope leaves {sleaf.most_common(5)} != report self {self_by_name.most_common(5)}")
with_samples = sum(1 for t in rep["threads"] if t["samples"])
if threads != with_samples:
    sys.exit(f"speedscope: {threads} profiles, {with_samples} threads with samples")
PY
	$have_go || return 0
	# pprof: every sample parses, and the counts add up
	timeout 120 go tool pprof -raw "$n.pb.gz" >"$n.raw" 2>"$n.raw.err" ||
		{ cat "$n.raw.err" >&2; fail "$n: go tool pprof -raw cannot read the pprof file"; }
	timeout 120 go tool pprof -top -sample_index=samples -nodefraction=0 -nodecount=100000 \
		"$n.pb.gz" >"$n.top" 2>"$n.top.err" ||
		{ cat "$n.top.err" >&2; fail "$n: go tool pprof -top failed"; }
	# the program's build-id (readelf, binutils: gcc's dependency)
	exe=$(jq -r '.runs[0].exec' "$n.json")
	bid=$(readelf -n "$exe" 2>/dev/null | awk '/Build ID/ { print $3; exit }')
	python3 - "$n" "$bid" <<'PY' || fail "$n: go tool pprof reads another profile than the report"
import json, re, sys
from collections import Counter
n, bid = sys.argv[1], sys.argv[2]
rep = json.load(open(n + ".json"))
total = rep["summary"]["samples"]
raw = open(n + ".raw").read()
m = re.search(r"^Samples:\n(.*?)^Locations\n(.*?)^Mappings\n(.*)", raw, re.S | re.M)
if not m:
    sys.exit("pprof -raw: no Samples/Locations/Mappings sections")
samples, locations, mappings = m.groups()
types = samples.splitlines()[0].split()
if types[0] != "samples/count":
    sys.exit(f"pprof: sample types {types}")
count = 0
for line in samples.splitlines()[1:]:
    v = re.match(r"\s+(\d+)\s+(\d+)?:", line)
    if v:
        count += int(v.group(1))
        if len(types) == 2 and int(v.group(2)) != int(v.group(1)) * rep["runs"][0]["period"] \
                and len({r["period"] for r in rep["runs"]}) == 1:
            sys.exit(f"pprof: cpu time is not samples x period: {line}")
if count != total:
    sys.exit(f"pprof: {count} samples, the report has {total}")
# inlined frames: several lines of one location, innermost first
if n == "inline" and not re.search(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ inl_\w+ .*\n\s+work_\w+ ", locations, re.M):
    sys.exit("pprof: inl_three/inl_one are not inlined lines of their callers' locations")
# build-ids: the program's mapping comes first, with its build-id
first = mappings.strip().splitlines()[0] if mappings.strip() else ""
if bid and bid not in first:
    sys.exit(f"pprof: the first mapping is not the program's (build-id {bid}): {first}")
# -top: the functions' flat samples and percentages are the report's self.
# pprof shortens names as C++ ones: it drops parameters and template
# arguments ("f<T>(int)" is f; the report's "[image] (no symbols)" is
# [image]) and " (inline)" marks inlines.
def short(name):
    name = "".join("?" if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c == "\ufffd" else c
                   for c in name)
    return re.sub(r"<[^<>]*>", "", name.split("(")[0]).strip()
top = open(n + ".top").read().splitlines()
flat, pct = Counter(), {}
for line in top:
    t = re.match(r"\s*(\d+)\s+([\d.]+)%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.*)$", line)
    if t:
        name = short(t.group(3))
        flat[name] += int(t.group(1))
        pct[name] = float(t.group(2))
want = Counter()
for f in rep["functions"]:
    want[short(f["function"])] += f["self"]
flat, want = +flat, +want
if flat != want:
    sys.exit(f"pprof -top: {flat.most_common(6)}, the report: {want.most_common(6)}")
for name, c in want.most_common(5):
    if abs(pct[name] - 100.0 * c / total) > 0.01:
        sys.exit(f"pprof -top: {name} {pct[name]}%, the report {100.0 * c / total:.2f}%")
PY
}

check inline inline.cbor
check lib lib.cbor
check dl dl.cbor
check threads threads.cbor
check static static.cbor
check merged inline.cbor threads.cbor
# names from the program are untrusted: ESC, BEL, a C1 CSI, ';' and '|'
run_psup 120 run -q -o hostile.cbor -- "$TARGETS/hostile-names" 300
expect_rc 0
check hostile hostile.cbor
for f in hostile.folded hostile.speedscope $($have_go && echo hostile.raw hostile.top); do
	LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' $f &&
		fail "$f: a control character from a name"
done
grep -q 'evil_' hostile.folded || fail "folded: the hostile function is missing (nothing checked)"
grep -q 'inl_three' inline.folded || fail "folded: no inl_three frame"
grep -q 'work_three;inl_three ' inline.folded || fail "folded: inl_three is not below work_three"
grep -q ';dl_three' dl.folded || fail "folded: dlopened dl_three missing"
[ "$(jq '.profiles | length' threads.speedscope)" -ge 3 ] ||
	fail "speedscope: not one profile per worker thread"

# pprof is binary: not to a terminal; an unknown format names the new ones
run_psup 30 report --format pdf inline.cbor
[ $RC -eq 2 ] || fail "unknown format: exit $RC"
grep -q 'pprof, folded, speedscope' "$WORK/err" || fail "unknown format: the formats are not named"
if command -v script >/dev/null; then
	script -qec "$PSUP report --format pprof inline.cbor" /dev/null >tty.out 2>&1
	grep -q -- '-o' tty.out || fail "pprof to a terminal is not refused: $(head -c 200 tty.out)"
fi

# Coz's JSON Lines: the same profile as the legacy format, read by the rules
# of Coz's `coz plot` parser (a record per line, "type" selecting the kind,
# "selected_samples" for "selected-samples")
consume=$(causal_ref causal-pipeline.c causal_pipe_consume)
done_line=$(causal_ref causal-pipeline.c causal_pipe_done)
run_psup 120 run -q -o c.cbor --experiment-ms 50 -p "$done_line" --line "$consume" -- "$TARGETS/causal-pipeline-static" 3 pthread
expect_rc 0
causal_report c.cbor c.json
nexp=$(jq '.causal.info.experiments' c.json)
[ "$nexp" -ge 1 ] || fail "no experiment in a 3 s causal run"
# Coz's formats leave out an experiment whose point saw fewer than 5 visits,
# as Coz's runtime does (one point here: each experiment is one entry's)
low=$(jq '[.causal.lines[], .causal.insufficient[] | .low_visit_experiments // 0] | add // 0' c.json)
nexp=$((nexp - low))
timeout 60 "$PSUP" report --format coz -o c.coz c.cbor 2>err || { cat err >&2; fail "--format coz failed"; }
timeout 60 "$PSUP" report --format coz-jsonl -o c.jsonl c.cbor 2>err || { cat err >&2; fail "--format coz-jsonl failed"; }
check static-causal c.cbor
python3 - c.coz c.jsonl "$nexp" <<'PY' || fail "--format coz-jsonl is not Coz's JSON Lines of the same profile"
import json, sys
legacy, jsonl, nexp = sys.argv[1], sys.argv[2], int(sys.argv[3])
INTS = {"delta", "time", "duration", "arrivals", "departures", "difference", "count",
        "selected_samples", "selected-samples"}
KNOWN = {"startup", "shutdown", "samples", "runtime", "experiment",
         "throughput-point", "latency-point"}
def records(path, is_json):
    for i, line in enumerate(open(path), 1):
        line = line.strip()
        if not line:
            continue
        if is_json:
            r = json.loads(line)  # Coz's parser: one JSON object per line
            if not isinstance(r, dict) or r.get("type") not in KNOWN:
                sys.exit(f"{path}:{i}: not a Coz record: {line}")
            for k, v in r.items():
                if k in INTS and not isinstance(v, int):
                    sys.exit(f"{path}:{i}: {k} is not an integer")
            if r["type"] == "experiment" and not isinstance(r.get("speedup"), (int, float)):
                sys.exit(f"{path}:{i}: speedup is not a number")
            yield r
        else:
            parts = line.split("\t")
            r = {"type": parts[0]}
            for p in parts[1:]:
                k, v = p.split("=", 1)
                r[k.replace("-", "_")] = int(v) if k in INTS else float(v) if k == "speedup" else v
            yield r
def profile(path, is_json):
    data, exps, runtime, samples, exp = {}, 0, 0, {}, None
    for r in records(path, is_json):
        t = r["type"]
        if t == "experiment":
            exp = (r["selected"], r["speedup"], r["duration"], r["selected_samples"])
            exps += 1
        elif t in ("throughput-point", "latency-point"):
            if exp is None:
                sys.exit(f"{path}: a point before any experiment")
            key = (exp[0], r["name"], exp[1])
            vals = [r.get(k, 0) for k in ("delta", "arrivals", "departures", "difference")]
            old = data.get(key, [0] * 5)
            data[key] = [a + b for a, b in zip(old, vals + [exp[2]])]
        elif t == "runtime":
            runtime = r["time"]
        elif t == "samples":
            samples[r["location"]] = samples.get(r["location"], 0) + r["count"]
    return data, exps, runtime, samples
a, b = profile(legacy, False), profile(jsonl, True)
if a != b:
    sys.exit(f"legacy and JSON Lines differ: {a[1:3]} vs {b[1:3]}")
if b[1] != nexp:
    sys.exit(f"{b[1]} experiments in the JSON Lines, {nexp} in the report with 5 visits or more")
if not b[0]:
    sys.exit("no progress point record after the experiments")
PY
# Where Coz's viewer reads JSON Lines (Coz >= 0.2.5) and node.js exists,
# Coz's own parser reads the file without a warning.
viewer=${COZ_VIEWER:-/usr/share/coz-profiler/viewer/js/profile.js}
if command -v node >/dev/null && [ -r "$viewer" ] && grep -q 'JSON.parse(s)' "$viewer"; then
	node - "$viewer" c.jsonl <<'JS' >viewer.out 2>&1 || { cat viewer.out >&2; fail "Coz's viewer rejects the coz-jsonl profile"; }
const fs = require('fs'), vm = require('vm');
const [viewer, file] = process.argv.slice(2);
// newer viewers reach for the page and their server when loaded: a stub
// that answers everything (nothing of it is drawn here)
const any = new Proxy(function () {}, {
  get: (t, k) => (k === Symbol.toPrimitive ? () => '' : any),
  apply: () => any, construct: () => any, set: () => true,
});
globalThis.XMLHttpRequest = any;
globalThis.document = any;
globalThis.window = globalThis;
globalThis.localStorage = { getItem() { return null; }, setItem() {}, removeItem() {} };
vm.runInThisContext(fs.readFileSync(viewer, 'utf8') + '\nthis.Profile = Profile;');
const warnings = [];
const p = new Profile(fs.readFileSync(file, 'utf8'), null, null, () => 1,
                      (title, text) => warnings.push(title + ': ' + text));
if (warnings.length) { console.log(warnings.join('\n')); process.exit(2); }
const data = p.getSpeedupData(1);
if (!data.length) { console.log('no line drawn'); process.exit(2); }
console.log('Coz viewer: ' + data.length + ' lines drawn from the JSON Lines profile');
JS
	note "$(cat viewer.out)"
else
	note "no Coz viewer that reads JSON Lines here: coz-jsonl was checked against the legacy form"
fi
exit 0
