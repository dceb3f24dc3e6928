#!/usr/bin/env python3
"""Hostile input: a wait snapshot of many ranks that each carry one wait.

Issue 14: an 8 MB snapshot of a 100,000-rank wait chain took 3.4 GB, since every rank carried a
1,024-slot string cache of 32 KB. `--check` runs `hangdx analyze` on it within time and memory
bounds (the issue's target, 50x the input plus 200 MB, as address space with 400 MB more for what
the loader maps and threads reserve).

    tests/hostile/chain_snapshot.py --check                 # CI: 100,000 ranks, 8 MB
    tests/hostile/chain_snapshot.py --out c.json --ranks N  # just write it
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check  # noqa: E402


def write(path, ranks):
    with open(path, "w") as f:
        json.dump({str(i): {"current_op": "all_reduce", "waiting_for_ranks": [i + 1] if i + 1 < ranks else [],
                            "op_seq": 7} for i in range(ranks)}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=100000)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.out:
        write(a.out, a.ranks)
        return 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.json")
        write(path, a.ranks)
        mb = os.path.getsize(path) / 1e6
        check(["analyze", path], 60, int(50 * mb) + 600, name="analyze a %d-rank chain (%.1f MB)" % (a.ranks, mb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
