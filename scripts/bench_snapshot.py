#!/usr/bin/env python3
"""Side-by-side figures for issue 13 item 3: `hangdx analyze` of a wide wait snapshot.

Writes the snapshot with scripts/synth/gen_wait_snapshot.py (every rank waits on zero to two
random higher ranks, no cycle), then runs each binary given, alternating, --runs times, for
the JSON report and the text report, and prints per binary the best wall time, its CPU time,
the peak RSS (wait4's ru_maxrss) and the report's size: findings, bytes, text lines.

usage: bench_snapshot.py --ranks 100000 --runs 3 NAME=BINARY [NAME=BINARY ...]
  e.g. bench_snapshot.py --ranks 100000 before=/tmp/hangdx_before after=build/bin/hangdx
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Runs cmd; returns (wall s, cpu s, peak RSS MB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit("%s exited %d" % (" ".join(cmd), code))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("bins", nargs="+", help="NAME=BINARY")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bins]
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, "snap.json")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "synth", "gen_wait_snapshot.py"),
                        "--ranks", str(a.ranks), "--out", snap], check=True)
        print("snapshot: %d ranks, %.1f MB" % (a.ranks, os.path.getsize(snap) / 1e6))
        best = {}
        for _ in range(a.runs):
            for name, binary in bins:
                for fmt in ("json", "text"):
                    out = os.path.join(d, "%s.%s" % (name, fmt))
                    r = run([binary, "analyze", snap, "--format", fmt, "-o", out])
                    key = (name, fmt)
                    if key not in best or r[0] < best[key][0]:
                        best[key] = r
        print("| binary | report | wall (best of %d) | CPU | peak RSS | report |" % a.runs)
        print("|---|---|---|---|---|---|")
        for name, _ in bins:
            with open(os.path.join(d, name + ".json")) as f:
                findings = len(json.load(f)["findings"])
            for fmt in ("json", "text"):
                path = os.path.join(d, "%s.%s" % (name, fmt))
                with open(path, "rb") as f:
                    body = f.read()
                size = "%.1f KB" % (len(body) / 1e3)
                if fmt == "json":
                    size += ", %d findings" % findings
                else:
                    size += ", %d lines" % body.count(b"\n")
                wall, cpu, rss = best[(name, fmt)]
                print("| %s | %s | %.2f s | %.2f s | %.0f MB | %s |" % (name, fmt, wall, cpu, rss, size))


if __name__ == "__main__":
    main()
