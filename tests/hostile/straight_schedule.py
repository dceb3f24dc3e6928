#!/usr/bin/env python3
"""Hostile input: a schedule with nothing to explore, only size.

`--ranks` ranks, each one host thread issuing `--ops` compute ops to one stream: every
interleaving is equivalent, so `hangdx simulate` must run one path of ranks x ops x 2
transitions in time near-linear in that (issue 14: 32,768 ranks x 10 ops, 7 MB, took
112 s, quadratic in the ranks), and with `--max-states` huge the search must stay
inside its memory bound (1 GiB by default) instead of growing its visited-state set until
the process aborts.

    tests/hostile/straight_schedule.py --check            # CI size: 4,096 ranks
    tests/hostile/straight_schedule.py --check --long     # 32,768 ranks (the issue's case)
    tests/hostile/straight_schedule.py --out s.json --ranks 32768   # just write it
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check  # noqa: E402


def write(path, ranks, ops):
    with open(path, "w") as f:
        f.write('{"hangdx_schedule": 1, "task_queue": "off", "pgs": {}, "ranks": [\n')
        op = json.dumps({"op": "compute", "stream": "c"}, separators=(",", ":"))
        for r in range(ranks):
            sep = "," if r + 1 < ranks else ""
            f.write('{"rank":%d,"threads":[{"name":"main","ops":[%s]}]}%s\n' % (r, ",".join([op] * ops), sep))
        f.write("]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--out", help="write the schedule here and stop")
    ap.add_argument("--check", action="store_true", help="run hangdx simulate on it within the bounds")
    ap.add_argument("--long", action="store_true", help="the issue's size: 32,768 ranks")
    a = ap.parse_args()
    ranks = a.ranks or (32768 if a.long else 4096)
    if a.out:
        write(a.out, ranks, a.ops)
        return 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "straight.json")
        write(path, ranks, a.ops)
        mb = os.path.getsize(path) / 1e6
        print("hostile: %s: %d ranks x %d ops, %.1f MB" % (path, ranks, a.ops, mb))
        # Time: about 1 us per transition with margin for a slow CI machine. Memory: the
        # issue's target, 50x the input plus 200 MB, as address space (plus 300 MB for what
        # the loader maps and the allocator reserves).
        seconds = 30 if a.long else 10
        memory = int(50 * mb) + 500
        check(["simulate", path], seconds, memory, expect_exit={0}, name="simulate straight")
        check(["simulate", path, "--max-states", str(1 << 40)], seconds, memory, expect_exit={0},
              name="simulate straight --max-states 2^40")
    return 0


if __name__ == "__main__":
    sys.exit(main())
