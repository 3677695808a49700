#!/usr/bin/env python3
"""ab.py: two or more psup builds (or option sets) on the bench's lines, interleaved.

Each round runs every variant once per line, one after the other, the
programs and lines of run.py (`psup run --causal --line FILE:LINE`), and
prints per line and variant the median prediction at 25/50/100% (the
report's curve, read as run.py reads it), the rounds' values, and the
overhead against a native run of the same round. For a change's effect on
the predictions: run.py's truths move between days; the variants here share
the machine's state.

usage: tests/bench/causal/ab.py --psup OLD/psup --psup build/psup[,OPT...]
                                [--only NAME] [--rounds 3] [--seconds 10]
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
    args = ap.parse_args()
    if len(args.psup) < 2:
        sys.exit("ab.py: give --psup twice or more")
    variants = [v.split(",") for v in args.psup]
    tmp = tempfile.mkdtemp(prefix="psup-causal-ab-")
    print(f"# {args.rounds} rounds, {args.seconds:g} s runs; tmp {tmp}", flush=True)
    ts = f"{args.seconds:g}"
    for name, src, extra, marker, point in bench.CASES:
        if args.only and not any(o in name for o in args.only):
            continue
        exe = bench.build(tmp, src, "psup")
        pl = f"{src}:{bench.marker_line(src, marker)}"
        preds = [[] for _ in variants]
        overhead = [[] for _ in variants]
        for r in range(args.rounds):
            native = bench.run_units([exe, "3"] + extra) / 3.0
            for i, (binary, *opts) in enumerate(variants):
                cbor = os.path.join(tmp, f"{name.replace(' ', '-')}-{i}-{r}.cbor")
                u = bench.run_units([binary, "run", "-q", "-f", "-o", cbor, "--causal", "--line", pl] + opts +
                                    ["--", exe, ts] + extra)
                overhead[i].append(100 * (native * args.seconds / u - 1))
                curve = bench.psup_curve(bench.psup_report(binary, cbor), pl)
                preds[i].append([bench.interpolate(curve, x) for x in bench.SPEEDUPS])
        for i, v in enumerate(args.psup):
            med = [bench.median([p[k] for p in preds[i]]) for k in range(len(bench.SPEEDUPS))]
            rounds = " ".join("/".join(bench.fmt(x, 0, 0) for x in p) for p in preds[i])
            print(f"{name:18} {v:40} {' '.join(bench.fmt(m) for m in med)}   rounds {rounds}   "
                  f"overhead {statistics.median(overhead[i]):.0f}%", flush=True)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
