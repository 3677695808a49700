#!/usr/bin/env python3
"""Causal profiling on real programs: a real one-line optimization, measured,
against psup's and Coz's predictions for it.

Programs: benchmarks from Coz's own repository (plasma-umass/coz,
benchmarks/), vendored in tests/bench/causal/real/ with their licenses; the
lines marked "psup bench" there only size the run (and fix a hang), the rest
is Coz's code with Coz's progress points (coz.h). psup counts coz.h sites
itself, so one binary serves the native runs, Coz and psup alike.

For each program, a real optimization changes one source line (`CASES`
below: the line as it is, and as it becomes; the line number stays). The
script builds the program twice (-O2 -g -gdwarf-3, as run.py), original and
optimized, and in each of ROUNDS interleaved rounds runs:

  native original, native optimized, native original again (timing);
  perf record of each (per-line samples, for the line speedup);
  `coz run --fixed-line F:L` and `psup run --causal --line F:L` on the
  original, for each line the case asks about.

  actual speedup = 1 - T(optimized) / T(original), wall time of the whole
                   run (the programs run to completion on the same input),
                   T(original) the geometric mean of the two runs around it;
  line speedup   = 1 - S(optimized) / S(original), S the perf cpu-clock
                   samples at the line (plus, where the case says so, in the
                   library functions it calls: word_count's strcmp);
  prediction     = each tool's curve at that line speedup, read as run.py
                   reads it (psup: `report --format json`; Coz: its viewer's
                   algorithm), interpolated between measured speedups
                   ("psup fit": psup's fitted slope x the line speedup, the
                   number its ranking stands on); for a
                   change that speeds several lines (linear_regression's
                   padding), the sum of the lines' predictions, each at its
                   own line speedup (the lines of a loop add up);
  overhead       = T(under the tool) / T(original) - 1.

Medians over the rounds. Benchmarks, not tests: nothing here has a bound.

usage: tests/bench/causal/real.py [--build build] [--rounds 2] [--scale 1]
                                  [--only NAME]
"""
import argparse
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "real")
sys.path.insert(0, HERE)
import run as bench  # noqa: E402  (the curves are read as run.py reads them)

# name: the benchmark's files (the first holds the line), the argv after the
# program (with {input} and {scale}), the input to generate, the one-line
# change (as it is -> as it becomes), the lines to ask the tools about (the
# changed line when None), and library functions whose samples count as the
# line's (the line calls them).
CASES = [
    {
        "name": "lock_test",
        "files": ["lock_test/lock_test.cpp"],
        "argv": ["{n:600}"],
        "input": None,
        # The loop counter of the critical section needs no volatile: the
        # counter it increments keeps it.
        "line": ("  for (volatile int i = 0; i < 5000000; i++) {",
                 "  for (int i = 0; i < 5000000; i++) {"),
        "ask": None,
        "callees": None,
    },
    {
        "name": "word_count",
        "files": ["word_count/word_count-pthread.c", "word_count/sort-pthread.c"],
        "argv": ["{input}"],
        "input": "text",
        # The binary search's comparison: most probes differ in the first
        # letter, which needs no call to strcmp (same sign: strcmp compares
        # unsigned chars).
        "line": ("       cmp = strcmp(word, words[t_num][next].word);",
                 "       cmp = word[0] != words[t_num][next].word[0] ? (unsigned char)word[0] - "
                 "(unsigned char)words[t_num][next].word[0] : strcmp(word, words[t_num][next].word);"),
        "ask": None,
        "callees": re.compile(r"strcmp"),
    },
    {
        "name": "linear_regression",
        "files": ["linear_regression/linear_regression-pthread.c"],
        "argv": ["{input}", "{n:40}"],
        "input": "points",
        # The Coz paper's fix: each thread's sums on cache lines of their
        # own (the array of per-thread structs shared lines: false sharing).
        "line": ("    long long SXY;", "    long long SXY; char pad[64];"),
        # The padding is no code; it speeds the loop's stores. The lines
        # that hold most of the loop's samples:
        "ask": ["      args->SX  += args->points[i].x;",
                "      args->SXX += args->points[i].x*args->points[i].x;",
                "      args->SYY += args->points[i].y*args->points[i].y;"],
        "callees": None,
    },
    {
        # Phoenix's k-means: each of its rounds makes a thread per CPU to
        # find the points' clusters and another to compute the means, and
        # joins them (threads made per round). No one-line optimization:
        # overhead only.
        "name": "kmeans",
        "files": ["kmeans/kmeans-pthread.c"],
        "argv": ["-p", "{n:300000}"],
        "input": None,
        "line": None,
    },
    {
        # No one-line optimization: the items move through a mutex and two
        # condition variables, and the time goes to the futex hand-offs.
        # Overhead only (each tool's default experiments, no fixed line).
        "name": "producer_consumer",
        "files": ["producer_consumer/producer_consumer.cpp"],
        "argv": ["{n:300000}"],
        "input": None,
        "line": None,
    },
]


def find_line(path, text):
    with open(path) as f:
        hits = [n for n, line in enumerate(f, 1) if line.rstrip("\n") == text]
    if len(hits) != 1:
        sys.exit(f"real: {len(hits)} lines of {path} read {text!r}; expected 1")
    return hits[0]


def build(tmp, case, variant):
    """Copies the case's sources to tmp/NAME/VARIANT (the optimized one with
    its line changed) and builds them; returns the executable."""
    d = os.path.join(tmp, case["name"], variant)
    exe = os.path.join(d, case["name"])
    if os.path.exists(exe):
        return exe
    srcdir = os.path.join(REAL, os.path.dirname(case["files"][0]))
    shutil.copytree(srcdir, d)
    main = os.path.join(d, os.path.basename(case["files"][0]))
    if variant == "opt":
        old, new = case["line"]
        n = find_line(main, old)
        with open(main) as f:
            lines = f.readlines()
        lines[n - 1] = new + "\n"
        with open(main, "w") as f:
            f.writelines(lines)
    srcs = [os.path.join(d, os.path.basename(f)) for f in case["files"]]
    cc = "g++" if srcs[0].endswith(".cpp") else "gcc"
    subprocess.run([cc, "-O2", "-g", "-gdwarf-3", "-fno-optimize-sibling-calls", "-pthread", "-I", d] + srcs +
                   ["-o", exe, "-ldl"], check=True)
    return exe


def make_input(case, cache, scale):
    """Generated, never downloaded: a deterministic input for the case."""
    kind = case["input"]
    if kind is None:
        return None
    os.makedirs(cache, exist_ok=True)
    rnd = random.Random(19)
    if kind == "points":
        # Phoenix's linear_regression reads (char x, char y) pairs; 64 MB,
        # passed over {n} times (the "psup bench" repeat).
        path = os.path.join(cache, "points-64M.bin")
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                f.write(rnd.randbytes(64 << 20))
            os.rename(path + ".tmp", path)
        return path
    # Text: words of 2-10 letters from a 20,000-word vocabulary, Zipf
    # frequencies (as in natural text), 32 MB written 10 x scale times.
    copies = max(1, round(10 * scale))
    path = os.path.join(cache, f"words-{copies}x32M.txt")
    if not os.path.exists(path):
        letters = "abcdefghijklmnopqrstuvwxyz"
        vocab = ["".join(rnd.choice(letters) for _ in range(rnd.randint(2, 10))) for _ in range(20000)]
        weights = [1 / (i + 1) for i in range(len(vocab))]
        chunk = []
        size = 0
        while size < 32 << 20:
            s = " ".join(rnd.choices(vocab, weights=weights, k=10000)) + "\n"
            chunk.append(s)
            size += len(s)
        chunk = "".join(chunk).encode()
        with open(path + ".tmp", "wb") as f:
            for _ in range(copies):
                f.write(chunk)
        os.rename(path + ".tmp", path)
    return path


def argv(case, inp, scale):
    out = []
    for a in case["argv"]:
        m = re.fullmatch(r"\{n:(\d+)\}", a)
        out.append(str(max(1, round(int(m.group(1)) * scale))) if m else a.replace("{input}", inp or ""))
    return out


def timed(cmd):
    t = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"real: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-800:]!r}")
    return dt


def perf_samples(exe, args, tmp, wanted, callees):
    """perf cpu-clock samples at each FILE:LINE of wanted (basename:line),
    plus those in the callees' symbols (added to every wanted line: only
    single-line cases name callees)."""
    data = os.path.join(tmp, "perf.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-o", data, "--", exe] + args,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    r = subprocess.run(["perf", "report", "-i", data, "-n", "--stdio", "--sort", "sym,srcline", "-t", "|"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, text=True)
    counts = {w: 0 for w in wanted}
    extra = 0
    for line in r.stdout.splitlines():
        cols = [c.strip() for c in line.split("|")]
        if line.startswith("#") or len(cols) < 4 or not cols[1].isdigit():
            continue
        n, sym, src = int(cols[1]), cols[2], cols[3]
        if src in counts:
            counts[src] += n
        elif callees and sym.startswith("[.]") and callees.search(sym):
            extra += n
    return {w: c + extra for w, c in counts.items()}


def overhead_only(case, exe, av, args, psup, coz, tmp):
    """Rounds of native, Coz, psup runs with each tool's default experiments:
    the overhead, no prediction."""
    over, exps = {"psup": [], "coz": []}, {"psup": [], "coz": []}
    for r in range(args.rounds):
        t0 = timed([exe] + av)
        prof = os.path.join(tmp, f"coz-{case['name']}-{r}.coz")
        tc = timed([coz, "run", "-o", prof, "---", exe] + av)
        exps["coz"].append(sum(1 for ln in open(prof) if ln.startswith("experiment")))
        cbor = os.path.join(tmp, f"psup-{case['name']}-{r}.cbor")
        tp = timed([psup, "run", "-q", "-f", "-o", cbor, "--causal"] + args.psup_arg + ["--", exe] + av)
        exps["psup"].append(bench.psup_report(psup, cbor).get("info", {}).get("experiments", 0))
        t1 = timed([exe] + av)
        t = math.sqrt(t0 * t1)
        over["coz"].append(100 * (tc / t - 1))
        over["psup"].append(100 * (tp / t - 1))
        print(f"  {case['name']} round {r + 1}: native {t:.2f} s, overhead psup {pct(over['psup'][-1])} "
              f"coz {pct(over['coz'][-1])}", flush=True)
    return (case, None, None, [], {}, None, None, None, None, over, exps)


def psup_slope(rep, path_line):
    """The slope psup fits to path_line's curve (program % per line %), as
    its report ranks lines; None when the line has no curve."""
    for ln in rep.get("lines", []):
        if ln["path"].endswith(path_line.split(":")[0]) and ln["line"].endswith(":" + path_line.split(":")[1]):
            return ln.get("slope")
    return None


def pct(v):
    return f"{v:.1f}%" if v is not None else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale", type=float, default=1, help="work per run (1: about 5-8 s native on a 2-core VM)")
    ap.add_argument("--only", help="run only the programs whose name contains this")
    ap.add_argument("--inputs", help="where generated inputs are kept (default: the temporary directory)")
    ap.add_argument("--psup-arg", action="append", default=[], help="one more argument for psup run (repeatable)")
    args = ap.parse_args()

    psup = os.path.abspath(os.path.join(args.build, "psup"))
    coz = shutil.which("coz")
    if not os.access(psup, os.X_OK):
        sys.exit(f"real: {psup} is missing; build first (ninja -C {args.build})")
    for tool in ("coz", "perf"):
        if not shutil.which(tool):
            sys.exit(f"real: {tool} is not installed (Debian: coz-profiler, linux-perf)")
    tmp = tempfile.mkdtemp(prefix="psup-causal-real-")
    cache = args.inputs or tmp
    print(f"# rounds {args.rounds}, scale {args.scale:g}; tmp {tmp}", flush=True)
    rows = []
    for case in CASES:
        if args.only and args.only not in case["name"]:
            continue
        exe = build(tmp, case, "orig")
        inp = make_input(case, cache, args.scale)
        av = argv(case, inp, args.scale)
        if case["line"] is None:
            rows.append(overhead_only(case, exe, av, args, psup, coz, tmp))
            continue
        exe_opt = build(tmp, case, "opt")
        main_src = os.path.join(os.path.dirname(exe), os.path.basename(case["files"][0]))
        base = os.path.basename(main_src)
        changed = find_line(main_src, case["line"][0])
        asked = [find_line(main_src, t) for t in case["ask"]] if case["ask"] else [changed]
        wanted = [f"{base}:{n}" for n in asked]
        actual, over = [], {"psup": [], "coz": []}
        speed = {w: [] for w in wanted}
        pred = {"psup": [], "coz": [], "fit": []}
        exps = {"psup": [], "coz": []}
        for r in range(args.rounds):
            t0 = timed([exe] + av)
            t_opt = timed([exe_opt] + av)
            t1 = timed([exe] + av)
            t = math.sqrt(t0 * t1)
            actual.append(100 * (1 - t_opt / t))
            s0 = perf_samples(exe, av, tmp, wanted, case["callees"])
            s1 = perf_samples(exe_opt, av, tmp, wanted, case["callees"])
            for w in wanted:
                speed[w].append(100 * (1 - s1[w] / s0[w]) if s0[w] else None)
            fit = 0.0
            for tool in ("coz", "psup"):
                total, runs, n_exp = 0.0, [], 0
                for w in wanted:
                    line_s = speed[w][-1]
                    if tool == "coz":
                        prof = os.path.join(tmp, f"coz-{case['name']}-{w}-{r}.coz")
                        runs.append(timed([coz, "run", "--fixed-line", f"{os.path.dirname(main_src)}/{w}",
                                           "-o", prof, "---", exe] + av))
                        curve = bench.coz_curve(prof, w)
                        n_exp += sum(1 for ln in open(prof) if ln.startswith("experiment"))
                    else:
                        cbor = os.path.join(tmp, f"psup-{case['name']}-{w}-{r}.cbor")
                        runs.append(timed([psup, "run", "-q", "-f", "-o", cbor, "--causal", "--line", w] +
                                          args.psup_arg + ["--", exe] + av))
                        rep = bench.psup_report(psup, cbor)
                        curve = bench.psup_curve(rep, w)
                        slope = psup_slope(rep, w)
                        fit = None if fit is None or slope is None or line_s is None else fit + slope * max(0.0, line_s)
                        n_exp += rep.get("info", {}).get("experiments", 0)
                    p = bench.interpolate(curve, max(0.0, line_s)) if line_s is not None else None
                    total = None if total is None or p is None else total + p
                pred[tool].append(total)
                if tool == "psup":
                    pred["fit"].append(fit)
                exps[tool].append(n_exp)
                over[tool] += [100 * (x / t - 1) for x in runs]
            print(f"  {case['name']} round {r + 1}: native {t:.2f} s, optimized {t_opt:.2f} s, actual "
                  f"{actual[-1]:.1f}%, line speedup {[bench.fmt(speed[w][-1], 1) for w in wanted]}, "
                  f"psup {pct(pred['psup'][-1])} (fit {pct(pred['fit'][-1])}) coz {pct(pred['coz'][-1])}, overhead psup "
                  f"{pct(over['psup'][-1])} coz {pct(over['coz'][-1])}", flush=True)
        rows.append((case, base, changed, wanted, {w: bench.median(v) for w, v in speed.items()},
                     bench.median(actual), bench.median(pred["psup"]), bench.median(pred["fit"]), bench.median(pred["coz"]),
                     over, exps))

    print()
    print("| program | changed line | line speedup | actual | psup | psup fit | coz | psup overhead (min..max) "
          "| coz overhead (min..max) | experiments psup / coz |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, base, changed, wanted, speed, a, p, f, c, over, exps in rows:
        if base is None:
            cells = [f"{pct(bench.median(over[t]))} ({pct(min(over[t]))}..{pct(max(over[t]))})"
                     for t in ("psup", "coz")]
            print(f"| {case['name']} | (none: overhead only) | - | - | - | - | - | {cells[0]} | {cells[1]} | "
                  f"{bench.median(exps['psup'])} / {bench.median(exps['coz'])} |")
            continue
        sp = " + ".join(f"{w.split(':')[1]}: {pct(speed[w])}" if len(wanted) > 1 else pct(speed[w]) for w in wanted)
        cells = [f"{pct(bench.median(over[t]))} ({pct(min(over[t]))}..{pct(max(over[t]))})" for t in ("psup", "coz")]
        print(f"| {case['name']} | {base}:{changed} | {sp} | {pct(a)} | {pct(p)} | {pct(f)} | {pct(c)} | {cells[0]} | "
              f"{cells[1]} | {bench.median(exps['psup'])} / {bench.median(exps['coz'])} |")


if __name__ == "__main__":
    main()
