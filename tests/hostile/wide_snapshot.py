#!/usr/bin/env python3
"""Hostile input: a wide wait snapshot, the shape of issue 13's benchmark.

Every rank waits in one collective on zero to two random ranks above it (no cycle;
scripts/synth/gen_wait_snapshot.py). Before rank classes, 100,000 such ranks took 3.0 s and
434 MB and wrote a 50 MB JSON report of 18,448 findings. `--check` runs `hangdx analyze
--format json` on 20,000 ranks within time and memory bounds, then checks the report: few
findings, a JSON of a few hundred KB, a text report that fits a screen, and every rank in the
JSON's per-rank section (rank_class) with the state the input gives it.

    tests/hostile/wide_snapshot.py --check                 # CI: 20,000 ranks, 1.6 MB
    tests/hostile/wide_snapshot.py --out s.json --ranks N  # just write it
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bounds import check  # noqa: E402

GEN = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "synth", "gen_wait_snapshot.py")


def write(path, ranks):
    subprocess.run([sys.executable, GEN, "--ranks", str(ranks), "--out", path], check=True)


def verify(snapshot, report_path, text):
    """Exits 1 unless the report groups the ranks and keeps each one findable."""
    with open(snapshot) as f:
        snap = json.load(f)
    size = os.path.getsize(report_path)
    with open(report_path) as f:
        rep = json.load(f)
    problems = []
    if size > 400_000:
        problems.append("JSON report of %d bytes (bound 400,000)" % size)
    if len(rep["findings"]) > 16:
        problems.append("%d findings (bound 16)" % len(rep["findings"]))
    lines = text.count("\n")
    if lines > 80 or max(len(line) for line in text.split("\n")) > 400:
        problems.append("text report of %d lines (bound 80), longest %d chars (bound 400)"
                        % (lines, max(len(line) for line in text.split("\n"))))
    classes, of = rep["rank_classes"], rep["rank_class"]
    if len(of) != len(snap) or sum(c["count"] for c in classes) != len(snap):
        problems.append("rank_class lists %d ranks, classes count %d, the snapshot has %d"
                        % (len(of), sum(c["count"] for c in classes), len(snap)))
    for r, w in snap.items():
        c = classes[of[int(r)]]
        idle = not w["waiting_for_ranks"]
        if (c["state"] == "idle") != idle or (idle and c["current"] != w["current_op"]) or \
                (not idle and not c["current"].startswith("%s seq %d" % (w["current_op"], w["op_seq"]))):
            problems.append("rank %s (%s) is in class %s" % (r, w, c))
            break
    if problems:
        sys.exit("hostile: FAIL: " + "; ".join(problems))
    print("hostile: report of %d bytes, %d findings, %d classes, %d text lines" % (size, len(rep["findings"]),
                                                                                 len(classes), lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=20000)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.out:
        write(a.out, a.ranks)
        return 0
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "wide.json"), os.path.join(d, "report.json")
        write(path, a.ranks)
        mb = os.path.getsize(path) / 1e6
        name = "analyze a %d-rank wide snapshot (%.1f MB)" % (a.ranks, mb)
        check(["analyze", path, "-j", "1", "--format", "json", "-o", out], 10, BOUND_MB, name=name)
        text = check(["analyze", path, "-j", "1"], 10, BOUND_MB, name=name + ", text", stdout=subprocess.PIPE).stdout
        verify(path, out, text.decode("utf-8", "replace"))
    return 0


# Address space, MiB, with -j 1 (each parser thread's malloc arena reserves 64 MiB more): on the
# 2-core VM this run fits in 120 MiB, the code before rank classes and the SAX read did not.
BOUND_MB = 130

if __name__ == "__main__":
    sys.exit(main())
