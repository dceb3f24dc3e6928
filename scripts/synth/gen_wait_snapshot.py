#!/usr/bin/env python3
"""Writes a synthetic live wait snapshot (docs/snapshot-format.md) of N ranks.

The shape of issue 13's benchmark: every rank waits in one collective on
zero to --max-waits ranks above it (so there is no cycle), chosen at random;
a rank that waits on nobody is busy elsewhere ("forward"). Written as one
JSON object {"<rank>": {"current_op", "waiting_for_ranks", "op_seq"}},
streamed rank by rank, so memory stays flat whatever N is.

usage: gen_wait_snapshot.py --ranks N [--max-waits K] [--seed S] --out FILE
"""
import argparse
import random


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--max-waits", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    with open(a.out, "w") as f:
        f.write("{")
        for r in range(a.ranks):
            above = a.ranks - 1 - r
            k = min(rng.randint(0, a.max_waits), above)
            waits = sorted(rng.sample(range(r + 1, a.ranks), k)) if k else []
            op = "all_reduce" if waits else "forward"
            f.write('%s"%d": {"current_op": "%s", "waiting_for_ranks": [%s], "op_seq": %d}'
                    % ("," if r else "", r, op, ", ".join(map(str, waits)), 100 + r % 3))
        f.write("}\n")


if __name__ == "__main__":
    main()
