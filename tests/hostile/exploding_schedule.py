#!/usr/bin/env python3
"""Hostile input: a small schedule whose interleavings are too many to explore.

Two ranks, `--pairs` pairs of host threads per rank (compute: backward, record grads_i;
comm: wait grads_i, all_reduce on its own pg), all feeding one task queue per device
(per_device): issues into one shared queue are real conflicts, so the states grow with
the orders of the threads' entries (8.9 million at 6 pairs) and 8 pairs are past any
machine. Run with `--max-states` huge, as a user raising the bound would: the search
must stop at its memory bound (`memory: the search would exceed ...`, exit 0, no
verdict) instead of growing its visited-state set until the process aborts (issue 14:
6.3 GB, then abort).

    tests/hostile/exploding_schedule.py --check          # CI: --max-memory 64 (MiB), 400 MiB bound
    tests/hostile/exploding_schedule.py --check --long   # the default 1 GiB search bound, 1.6 GiB bound
    tests/hostile/exploding_schedule.py --out s.json     # just write it
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check  # noqa: E402


def schedule(pairs):
    ranks = []
    for r in (0, 1):
        threads = []
        for p in range(pairs):
            e = "grads%d_%d" % (p, r)
            threads.append({"name": "compute%d" % p, "ops": [
                {"op": "compute", "name": "backward", "stream": "compute%d" % p},
                {"op": "record", "event": e, "stream": "compute%d" % p}]})
            threads.append({"name": "comm%d" % p, "ops": [
                {"op": "wait", "event": e, "stream": "comm%d" % p},
                {"op": "collective", "name": "all_reduce", "pg": "tp%d" % p, "stream": "comm%d" % p}]})
        ranks.append({"rank": r, "threads": threads})
    return {"hangdx_schedule": 1, "task_queue": "per_device",
            "pgs": {"tp%d" % p: [0, 1] for p in range(pairs)}, "ranks": ranks}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--out", help="write the schedule here and stop")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(schedule(a.pairs), f, indent=1)
        return 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "exploding.json")
        with open(path, "w") as f:
            json.dump(schedule(a.pairs), f)
        argv = ["simulate", path, "--max-states", str(1 << 40)]
        if not a.long:
            argv += ["--max-memory", "64"]
        # The search's bound plus the process's own (binary, allocator, witness-free report).
        memory = 1640 if a.long else 400
        p = check(argv, 200 if a.long else 60, memory, expect_exit={0}, name="simulate exploding --max-states 2^40",
                  stdout=subprocess.PIPE)
        out = p.stdout.decode()
        if "bound reached (memory: the search would exceed" not in out:
            sys.exit("hostile: FAIL: the search did not stop at its memory bound:\n" + out)
        print("hostile: " + out.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
