#!/usr/bin/env python3
"""Hostile input: deep, distinct stacks for `hangdx stacks`.

`--ranks` py-spy dumps of `--frames` frames each, every frame distinct across ranks (a
runaway recursion that differs per rank; issue 14: 50 ranks x 2,000 frames, 2.4 MB, made
`stacks --format json` write 844 MB nested 2,050 levels deep, which Python's json.load
refuses). `--check` runs `stacks --format json` and text within time and memory bounds
and checks the document: Python reads it, its size is proportional to the input, its
nesting is a few levels, every rank is listed as cut, and ranks whose stacks differ only
beyond the cut are not merged (ranks 0 and 1 share their innermost frames but not their
depth).

    tests/hostile/deep_stacks.py --check           # CI: 50 ranks x 2,000 frames (2.4 MB)
    tests/hostile/deep_stacks.py --check --long    # 500 ranks x 4,000 frames (about 50 MB)
    tests/hostile/deep_stacks.py --out DIR         # just write the dumps
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check  # noqa: E402


def write(folder, ranks, frames):
    os.makedirs(folder, exist_ok=True)
    for r in range(ranks):
        # Innermost first, as py-spy prints. Ranks 0 and 1 share their innermost
        # frames and differ only in depth beyond the 1,024-frame cut.
        name = "f0" if r == 1 else "f%d" % r
        depth = frames + (7 if r == 1 else 0)
        lines = ["Process %d: python train.py" % (1000 + r), "Python v3.11.7 (/usr/bin/python3)", "",
                 'Thread %d (idle): "MainThread"' % (1000 + r)]
        lines += ["    %s_%d (m.py:%d)" % (name, i, i + 1) for i in range(depth)]
        with open(os.path.join(folder, "pyspy_rank_%d.txt" % r), "w") as f:
            f.write("\n".join(lines) + "\n")


def depth_of(v):
    if isinstance(v, dict):
        return 1 + max((depth_of(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((depth_of(x) for x in v), default=0)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--frames", type=int)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    ranks = a.ranks or (500 if a.long else 50)
    frames = a.frames or (4000 if a.long else 2000)
    if a.out:
        write(a.out, ranks, frames)
        return 0
    with tempfile.TemporaryDirectory() as d:
        folder = os.path.join(d, "dumps")
        write(folder, ranks, frames)
        mb = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 1e6
        print("hostile: %d ranks x %d frames, %.1f MB" % (ranks, frames, mb))
        seconds, memory = (120, int(50 * mb) + 500) if a.long else (30, int(50 * mb) + 400)
        p = check(["stacks", folder, "--format", "json"], seconds, memory, name="stacks --format json",
                  stdout=subprocess.PIPE)
        out_mb = len(p.stdout) / 1e6
        doc = json.loads(p.stdout)  # Python must be able to read it
        nodes, nesting = doc["nodes"], depth_of(doc)
        print("hostile: %.1f MB of JSON, nesting %d, %d nodes" % (out_mb, nesting, len(nodes)))
        if out_mb > 4 * mb + 1:
            sys.exit("hostile: FAIL: %.1f MB of JSON for %.1f MB of input" % (out_mb, mb))
        if nesting > 6:
            sys.exit("hostile: FAIL: the document nests %d levels" % nesting)
        if doc["cut"] != list(range(ranks)):
            sys.exit("hostile: FAIL: not every rank is listed as cut: %s" % doc["cut"][:10])
        # Ranks 0 and 1: the same innermost 1,024 frames, cut by different counts.
        if any(n["ranks"][:2] == [0, 1] for n in nodes if n["parent"] is not None):
            sys.exit("hostile: FAIL: ranks 0 and 1 differ beyond the cut but were merged")
        if not any("cut to its innermost 1024" in g["message"] for g in doc["diagnostics"]):
            sys.exit("hostile: FAIL: no diagnostic says the stacks were cut")
        check(["stacks", folder], seconds, memory, name="stacks (text)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
