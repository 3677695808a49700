#!/usr/bin/env python3
"""Witch: overhead of each analysis over native, and sampled vs exact fractions.

Overhead: for each program, native and `psup run` with each witch analysis
(plus plain `psup run`, for what sampling alone costs) run interleaved
(native, psup, psup --witch dead, ...) so CPU-speed drift hits them alike;
each cell is the median over the rounds of the round's ratio to native, with
the min-max spread. The witch period is the default unless --period is given.

Accuracy: each test program's fraction over its own code (pairs whose watch
and trap are in its source file), sampled (a long run) next to --witch-exact
(a small run: every instruction single-stepped).

Sampled runs are time-weighted (psup's default); the instructions column is
the same with --witch-weight instructions.

usage: tests/bench/witch.py [--build build] [--rounds 5] [--period NS] [--no-exact] [--no-overhead]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, check=True, cpu=False):
    """Wall seconds, or with cpu=True (wall, CPU seconds of the command and
    every process it waited for: psup and the program it ran)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read()
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if check and rc != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({rc}): {err.decode()[-500:]}")
    return (dt, ru.ru_utime + ru.ru_stime) if cpu else dt


def local_fraction(psup, cbor, kind, src):
    out = subprocess.run([psup, "report", "--format", "json", "--view", "witch", cbor],
                         stdout=subprocess.PIPE, check=True).stdout
    w = json.loads(out)["witch"]
    k = w.get(kind) or {}
    waste = use = 0
    for p in k.get("pairs", []):
        if p["watch"] and p["trap"] and (p["watch"][-1]["file"] or "").endswith(src) \
                and (p["trap"][-1]["file"] or "").endswith(src):
            waste += p["bytes"]
            use += p["use_bytes"]
    samples = k.get("counters", {}).get("samples", 0)
    return (100.0 * waste / (waste + use) if waste + use else float("nan")), samples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--period", type=int, default=0, help="witch period, ns of task-clock (0: default)")
    ap.add_argument("--no-exact", action="store_true", help="skip the sampled-vs-exact table")
    ap.add_argument("--no-overhead", action="store_true", help="skip the overhead table")
    args = ap.parse_args()

    psup = os.path.join(args.build, "psup")
    targets = os.path.join(args.build, "tests", "targets")
    work = os.path.join(args.build, "tests", "bench", "work")
    for f in (psup, work, os.path.join(targets, "witch-even")):
        if not os.access(f, os.X_OK):
            sys.exit(f"bench: {f} is missing; build first (ninja -C {args.build})")
    tmp = tempfile.mkdtemp(prefix="psup-witch-bench-")
    out = os.path.join(tmp, "w.cbor")
    period = ["--witch-period", str(args.period)] if args.period else []

    tools = {"psup": lambda prog: [psup, "run", "-q", "-f", "-o", out, "--"] + prog}
    for k in ("dead", "silent", "load"):
        tools[f"--witch {k}"] = (lambda k: lambda prog: [psup, "run", "-q", "-f", "-o", out, "--witch", k]
                                 + period + ["--"] + prog)(k)
    programs = {
        "work (compute, 1 thread)": [work, "1", "1000000000"],
        "witch-even dead (stores + loads)": [os.path.join(targets, "witch-even"), "dead", "50000", "20000"],
        "witch-search (loads)": [os.path.join(targets, "witch-search"), "2000", "5000000"],
    }
    print(f"# witch overhead over native, witch period {args.period or 'default'}, "
          f"{args.rounds} interleaved rounds; each cell: CPU ratio (median over rounds of the CPU "
          f"time of psup + the program over the native program's: what the run costs, whatever "
          f"else the machine runs), best-of-rounds wall ratio (fastest run over fastest native), "
          f"median (min-max) of per-round wall ratios; for the witch columns also 'own': the "
          f"median (min-max) over rounds of their CPU over plain psup's, what witch adds to the "
          f"profile; load average at start "
          f"{os.getloadavg()[0]:.1f}")
    names = list(tools)
    print("| program | native s | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for pname, prog in ([] if args.no_overhead else programs.items()):
        ratios = {n: [] for n in names}
        times = {n: [] for n in names}
        cpus = {n: [] for n in names}
        natives, native_cpu = [], []
        for _ in range(args.rounds):
            nat, ncpu = run(prog, cpu=True)
            natives.append(nat)
            native_cpu.append(ncpu)
            for n in names:
                t, c = run(tools[n](prog), cpu=True)
                times[n].append(t)
                cpus[n].append(c / ncpu)
                ratios[n].append(t / nat)
        cells = [f"{statistics.median(cpus[n]):.3f}; {min(times[n]) / min(natives):.3f}; "
                 f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})"
                 for n, r in ((n, ratios[n]) for n in names)]
        # witch's own share: the CPU of psup --witch k over plain psup's, same round
        for n in names[1:]:
            own = [a / b for a, b in zip(cpus[n], cpus["psup"])]
            cells[names.index(n)] += f"; own {statistics.median(own):.3f} ({min(own):.3f}-{max(own):.3f})"
        print(f"| {pname} | {statistics.median(natives):.2f} | " + " | ".join(cells) + " |", flush=True)

    if args.no_exact:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    cases = [
        ("witch-even", "dead", ["dead", "300", "20"], ["dead", "50000", "40000"], "50"),
        ("witch-even", "silent", ["silent", "300", "20"], ["silent", "50000", "40000"], "50"),
        ("witch-even", "load", ["load", "300", "20"], ["load", "50000", "40000"], "50"),
        ("witch-listing2", "dead", ["300", "20"], ["100000", "20000"], "50"),
        ("witch-listing3", "dead", ["100", "10"], ["100000", "4000"], "100"),
        ("witch-ratio321", "dead", ["100", "50"], ["20000", "20000"], "100"),
        ("witch-silent", "silent", ["300", "20"], ["100000", "8000"], "~50"),
        ("witch-search", "load", ["200", "100"], ["2000", "1200000"], "~100"),
    ]
    sp = ["--witch-period", str(args.period or 1000000)]
    print()
    print(f"# sampled (period {args.period or 1000000} ns) vs --witch-exact: fraction of wasted bytes "
          f"over the program's own code, %")
    print("| program | analysis | expected | exact | sampled | instructions | samples |")
    print("|---|---|---|---|---|---|---|")
    for name, kind, xargs, sargs, expect in cases:
        prog = os.path.join(targets, name)
        xo, so = os.path.join(tmp, "x.cbor"), os.path.join(tmp, "s.cbor")
        run([psup, "run", "-q", "-f", "-o", xo, "--witch", kind, "--witch-exact", "--", prog] + xargs)
        to = os.path.join(tmp, "t.cbor")
        run([psup, "run", "-q", "-f", "-o", so, "--witch", kind] + sp + ["--", prog] + sargs)
        run([psup, "run", "-q", "-f", "-o", to, "--witch", kind, "--witch-weight", "instructions"] + sp
            + ["--", prog] + sargs)
        xf, _ = local_fraction(psup, xo, kind, name + ".c")
        sf, n = local_fraction(psup, so, kind, name + ".c")
        tf, _ = local_fraction(psup, to, kind, name + ".c")
        print(f"| {name} {' '.join(sargs)} | {kind} | {expect} | {xf:.1f} | {sf:.1f} | {tf:.1f} | {n} |",
              flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
