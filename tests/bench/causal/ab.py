#!/usr/bin/env python3
"""ab.py: two or more psup builds (or option sets) on the bench's lines, interleaved.

Each round runs every variant once per line, one after the other, the
programs and lines of run.py (`psup run --causal --line FILE:LINE`), and
prints per line and variant the median prediction at 25/50/100% (the
report's curve, read as run.py reads it), the rounds' values, and the
overhead against a native run of the same round. For a change's effect on
the predictions: run.py's truths move between days; the variants here share
the machine's state. With --truth each round also measures the line really
cut by 25/50/100% (run.py's native runs, --native-seconds each) and the end
prints each variant's mean and median absolute error over the lines, its
95% intervals holding the actual, and its mean overhead.

usage: tests/bench/causal/ab.py --psup OLD/psup --psup build/psup[,OPT...]
                                [--only NAME] [--rounds 3] [--seconds 10]
                                [--truth [--native-seconds 3]]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--psup", action="append", required=True,
                    help="a psup binary, with options after commas (repeat: 2 or more)")
    ap.add_argument("--only", action="append", default=[], help="lines whose name contains this (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--truth", action="store_true", help="measure each line really cut, and score the variants")
    ap.add_argument("--native-seconds", type=float, default=3, help="each native run of --truth")
    args = ap.parse_args()
    if len(args.psup) < 2:
        sys.exit("ab.py: give --psup twice or more")
    variants = [v.split(",") for v in args.psup]
    tmp = tempfile.mkdtemp(prefix="psup-causal-ab-")
    print(f"# {args.rounds} rounds, {args.seconds:g} s runs; tmp {tmp}", flush=True)
    ts = f"{args.seconds:g}"
    # Per variant: (|error|, actual, interval) per prediction, overheads.
    score = [{"err": [], "hits": 0, "cis": 0, "over": []} for _ in variants]
    for name, src, extra, marker, point in bench.CASES:
        if args.only and not any(o in name for o in args.only):
            continue
        exe = bench.build(tmp, src, "psup")
        pl = f"{src}:{bench.marker_line(src, marker)}"
        preds = [[] for _ in variants]
        overhead = [[] for _ in variants]
        actuals = []
        for r in range(args.rounds):
            native = bench.run_units([exe, "3"] + extra) / 3.0
            if args.truth:
                actuals.append(bench.truth(exe, extra, marker, point is None, args.native_seconds)[0])
            for i, (binary, *opts) in enumerate(variants):
                cbor = os.path.join(tmp, f"{name.replace(' ', '-')}-{i}-{r}.cbor")
                u = bench.run_units([binary, "run", "-q", "-f", "-o", cbor, "--causal", "--line", pl] + opts +
                                    ["--", exe, ts] + extra)
                overhead[i].append(100 * (native * args.seconds / u - 1))
                rep = bench.psup_report(binary, cbor)
                curve = bench.psup_curve(rep, pl)
                preds[i].append([bench.interpolate(curve, x) for x in bench.SPEEDUPS])
                if args.truth:
                    cis = bench.psup_intervals(rep, pl)
                    for k, x in enumerate(bench.SPEEDUPS):
                        if x in cis and (name, x) not in bench.NO_MAE:
                            score[i]["cis"] += 1
                            score[i]["hits"] += cis[x][0] <= actuals[-1][k] <= cis[x][1]
        for i, v in enumerate(args.psup):
            med = [bench.median([p[k] for p in preds[i]]) for k in range(len(bench.SPEEDUPS))]
            rounds = " ".join("/".join(bench.fmt(x, 0, 0) for x in p) for p in preds[i])
            print(f"{name:18} {v:40} {' '.join(bench.fmt(m) for m in med)}   rounds {rounds}   "
                  f"overhead {statistics.median(overhead[i]):.0f}%", flush=True)
            score[i]["over"].append(statistics.median(overhead[i]))
            if args.truth:
                act = [bench.median([a[k] for a in actuals]) for k in range(len(bench.SPEEDUPS))]
                for k, x in enumerate(bench.SPEEDUPS):
                    if med[k] is not None and (name, x) not in bench.NO_MAE:
                        score[i]["err"].append(abs(med[k] - act[k]))
        if args.truth:
            act = [bench.median([a[k] for a in actuals]) for k in range(len(bench.SPEEDUPS))]
            print(f"{name:18} {'actual':40} {' '.join(bench.fmt(m) for m in act)}", flush=True)
    if args.truth:
        for i, v in enumerate(args.psup):
            sc = score[i]
            print(f"{v}: mean abs. error {statistics.mean(sc['err']):.1f} points (median "
                  f"{statistics.median(sc['err']):.1f}) over {len(sc['err'])} predictions; "
                  f"{sc['hits']} of {sc['cis']} intervals hold the round's actual; "
                  f"overhead, mean of the lines' medians, {statistics.mean(sc['over']):.1f}%")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
