#!/usr/bin/env python3
"""Print a compact per-rank view of the Flight Recorder pickle dumps of scenario dirs.

  python3 scripts/fault_injection/summarize.py testdata/torch/c [testdata/torch/d ...]
"""
import os
import pickle
import sys


def load(d):
    pk = os.path.join(d, "pickle")
    out = {}
    if os.path.isdir(pk):
        for f in os.listdir(pk):
            with open(os.path.join(pk, f), "rb") as fh:
                out[int(f.rsplit("_", 1)[1])] = pickle.load(fh)
    return out


def show(d):
    dumps = load(d)
    print("## %s: dumps from ranks %s" % (d, sorted(dumps)))
    for r in sorted(dumps):
        t = dumps[r]
        ents = t.get("entries", [])
        print("rank %d: version %s pg_config %s pg_status %s, %d entries"
              % (r, t.get("version"), t.get("pg_config"), t.get("pg_status"), len(ents)))
        for e in ents:
            print("   rec %2d pg %-14s seq %2d p2p %d op %2d %-22s in %s %s out %s state %s retired %s nframes %d"
                  % (e["record_id"], "%s/%s" % tuple(e["process_group"]), e["collective_seq_id"],
                     e["p2p_seq_id"], e["op_id"], e["profiling_name"], e["input_sizes"],
                     e["input_dtypes"], e["output_sizes"], e["state"], e["retired"],
                     len(e.get("frames", []))))


if __name__ == "__main__":
    for d in sys.argv[1:]:
        show(d)
