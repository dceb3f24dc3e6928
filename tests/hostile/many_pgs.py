#!/usr/bin/env python3
"""Hostile input: Flight Recorder dumps of a job with many process groups.

Tester's finding F14 (issue 13 item 4): 3 ranks, one all_reduce per pg, took 10 s at 10,000 pgs and
more than 60 s at 50,000: the group of each op's pg and the history index of each pg were found by
a scan of the dump's pg list, once per op (O(ops x pgs)). Jobs with many `new_group`s (MoE
sub-groups, per-layer pipelines) record thousands. Each rank here records every pg's one
all_reduce, completed, except the last pg's, where rank 2 never arrives (a missing rank, so the
analysis runs its matching and report end to end). `--check` runs `hangdx analyze` on it within
a time bound that linear work meets with a wide margin (3.1 s for 20,000 pgs on the loaded 2-core
development VM) and the quadratic one did not (24.2 s).

    tests/hostile/many_pgs.py --check               # CI: 20,000 pgs, 3 x 14 MB
    tests/hostile/many_pgs.py --check --long        # 100,000 pgs, 3 x 70 MB
    tests/hostile/many_pgs.py --out DIR [--pgs N]   # just write the dumps
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check  # noqa: E402

RANKS = 3


def entry(rank, pg, record_id, done):
    """One FR entry (spec 2.4 fields, JSON dump layout) of all_reduce seq 1 on pg `pg`."""
    return {"record_id": record_id, "pg_id": pg, "process_group": [str(pg), "pg%d" % pg],
            "thread_name": "python3", "thread_id": "1397216406%05d" % rank, "collective_seq_id": 1,
            "p2p_seq_id": 0, "op_id": 1, "profiling_name": "nccl:all_reduce",
            "time_created_ns": 1796022067988634669 + record_id * 1000, "input_sizes": [[36]],
            "input_dtypes": ["Float"], "output_sizes": [[36]], "output_dtypes": ["Float"],
            "state": "completed" if done else "scheduled",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
            "retired": done, "timeout_ms": 600000, "is_p2p": False}


def write(folder, pgs):
    """Writes fr_trace_rank_<r>.json for RANKS ranks of a job with `pgs` pgs into `folder`."""
    os.makedirs(folder, exist_ok=True)
    members = json.dumps(list(range(RANKS)))
    for rank in range(RANKS):
        mine = pgs if rank < RANKS - 1 else pgs - 1  # the last rank never enters the last pg's all_reduce
        dump = {"version": "2.10",
                "pg_config": {str(p): {"name": str(p), "desc": "pg%d" % p, "ranks": members} for p in range(pgs)},
                "comm_lib_version": "2.21.5",
                "pg_status": {str(p): {"last_enqueued_collective": 1 if p < mine else 0,
                                       "last_started_collective": 1 if p < mine else 0,
                                       "last_completed_collective": 1 if p < pgs - 1 else 0}
                              for p in range(pgs)},
                "entries": [entry(rank, p, p, p < pgs - 1) for p in range(mine)]}
        with open(os.path.join(folder, "fr_trace_rank_%d.json" % rank), "w") as f:
            json.dump(dump, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--pgs", type=int)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    pgs = a.pgs or (100000 if a.long else 20000)
    if a.out:
        write(a.out, pgs)
        return 0
    with tempfile.TemporaryDirectory() as d:
        write(d, pgs)
        mb = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6
        # Linear: about 0.15 ms per pg here; the quadratic scan took 25 s at 20,000 pgs.
        seconds = max(12, pgs // 1600)
        p = check(["analyze", d, "--format", "json"], seconds, int(40 * mb) + 600, expect_exit={1},
                  name="analyze %d ranks x %d pgs (%.1f MB)" % (RANKS, pgs, mb), stdout=subprocess.PIPE)
        report = json.loads(p.stdout)
        culprits = sorted({r for f in report.get("findings", []) for r in f.get("culprit_ranks", [])})
        if culprits != [RANKS - 1]:
            sys.exit("hostile: FAIL: expected rank %d missing from pg %d, got culprits %s"
                     % (RANKS - 1, pgs - 1, culprits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
