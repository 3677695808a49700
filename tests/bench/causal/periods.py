#!/usr/bin/env python3
"""periods.py RECORD.cbor [POINT] [--line FILE:LINE]

Where a causal curve comes from, per speedup: from the experiment records of
a `psup run --causal` record (docs/format.md, "experiment"), for one
throughput progress point (the first one when POINT is not given), pooled
over the experiments of each speedup of the line(s) they selected (with
--line, of that line only, the 0% experiments of every line kept as the
baseline; FILE matches the end of the record's file name):

  n          experiments
  real/visit the period in wall time: sum(duration) / sum(visits), in ms
  eff/visit  the effective period: sum(duration - delay) / sum(visits)
  pause      the time threads were held (sum over threads) / sum(duration)
  delay      the delays inserted (global) / sum(duration), the observer's
             idle time below included
  observer   the program's time idle in psup's stops at intercepted calls,
             taken out of the duration like a delay / sum(duration)
  predicted  1 - eff(s) / eff(0), in percent (no phase correction)
  slowdown   real(s) / real(0): above 1, the pauses were not absorbed
             (they landed on the critical path)
  line/ms    the selected line's samples per ms of the experiments

A curve reads low either because the delays inserted are a smaller share of
the time than the line's (delay below line/ms x the sample period), because
the pauses slowed the program down (slowdown above 1), or because the
baseline period eff(0) holds more than the native program's (psup's own
stops on the critical path). Needs python3-cbor2.
"""
import sys
from collections import defaultdict

try:
    import cbor2
except ImportError:
    sys.exit("periods.py: needs the cbor2 module (Debian: apt-get install python3-cbor2)")


def records(path):
    with open(path, "rb") as f:
        while True:
            try:
                yield cbor2.load(f)
            except (cbor2.CBORDecodeEOF, EOFError):
                return


def main():
    args = sys.argv[1:]
    line = None
    if "--line" in args:
        i = args.index("--line")
        if i + 1 >= len(args) or ":" not in args[i + 1]:
            sys.exit("periods.py: --line wants FILE:LINE")
        lf, _, ln = args[i + 1].rpartition(":")
        if not ln.isdigit():
            sys.exit("periods.py: --line wants FILE:LINE")
        line = (lf, int(ln))
        del args[i:i + 2]
    if len(args) not in (1, 2):
        sys.exit(__doc__.split("\n\n")[0])
    path = args[0]
    want = args[1] if len(args) == 2 else None
    agg = defaultdict(lambda: {"n": 0, "dur": 0, "delay": 0, "visits": 0, "pause": 0, "line": 0, "obs": 0})
    try:
        for r in records(path):
            if not isinstance(r, dict) or r.get("type") != "experiment" or r.get("end_to_end"):
                continue
            if (line and r["speedup"] and
                    (r.get("line") != line[1] or not str(r.get("file", "")).endswith(line[0]))):
                continue
            pts = [p for p in r.get("points", []) if len(p) >= 3 and p[1] == "throughput"]
            if want is None and pts:
                want = pts[0][0]
            visits = sum(p[2] for p in pts if p[0] == want)
            a = agg[r["speedup"]]
            a["n"] += 1
            a["dur"] += r["duration"]
            a["delay"] += r["delay"]
            a["visits"] += visits
            a["pause"] += r.get("pause", 0)
            a["obs"] += r.get("observer", 0)
            a["line"] += r.get("selected_samples", 0)
    except (OSError, ValueError, cbor2.CBORDecodeError) as e:
        sys.exit(f"periods.py: {path}: {e}")
    base = agg.get(0)
    if not base or not base["visits"]:
        sys.exit("periods.py: no 0% experiment with visits of " + (want or "a throughput point"))
    real0 = base["dur"] / base["visits"]
    eff0 = (base["dur"] - base["delay"]) / base["visits"]
    print(f"point {want}")
    print("speedup    n  real/visit  eff/visit   pause   delay  observer  predicted  slowdown  line/ms")
    for s in sorted(agg):
        a = agg[s]
        if not a["visits"] or not a["dur"]:
            continue
        real = a["dur"] / a["visits"]
        eff = (a["dur"] - a["delay"]) / a["visits"]
        print(f"{s:6d}% {a['n']:5d} {real / 1e6:10.3f} {eff / 1e6:10.3f} {a['pause'] / a['dur']:7.3f} "
              f"{a['delay'] / a['dur']:7.3f} {a['obs'] / a['dur']:9.3f} {100 * (eff0 - eff) / eff0:9.1f}% {real / real0:9.3f} "
              f"{a['line'] / (a['dur'] / 1e6):8.3f}")


if __name__ == "__main__":
    main()
