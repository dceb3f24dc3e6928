#!/usr/bin/env python3
"""Hostile input: rank numbers far past the evidence, and running out of memory.

Issue 14: a 2 KB Flight Recorder dump whose `pg_config` lists rank 16777215, `--world-size
16777216` or `--rank F=4611686018427387904` allocated about 1.2 KB per rank without data
(7.5 GB, then an abort), and `--rank F=5x` was read as rank 5. `--check` runs each within
time and memory bounds and checks that

  - the analysis does not grow with the rank numbers (the memory bound is far below what
    16 million ranks would take) and the JSON's `world_size` agrees with its rank lists
    (every rank any list names is below it, also when the world is unknown);
  - `--rank` with a rank out of range or not a number, and `--world-size` out of range,
    are refused with exit 2 and a message;
  - running out of memory on a file (a wait snapshot under an address-space limit too
    small for it) is that file's error and a normal exit, never an abort.

    tests/hostile/rank_bounds.py --check           # CI
    tests/hostile/rank_bounds.py --out DIR         # just write the inputs
"""
import json
import os
import pickle
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import ROOT, check, generator_args  # noqa: E402

BASE = os.path.join(ROOT, "testdata", "torch", "c_detail", "pickle", "fr_trace_rank_2")


def write(folder, snapshot_ranks):
    """Writes the inputs into `folder`; returns their paths by name."""
    os.makedirs(folder, exist_ok=True)
    with open(BASE, "rb") as f:
        o = pickle.load(f)
    o["pg_config"] = {"0": {"name": "0", "desc": "d", "ranks": "[16777215]"}}
    paths = {"far_pg": os.path.join(folder, "fr_trace_rank_3")}
    with open(paths["far_pg"], "wb") as f:
        f.write(pickle.dumps(o, 2))
    # A snapshot naming a waited-for rank far past the ranks that report.
    paths["far_wait"] = os.path.join(folder, "far_wait.json")
    with open(paths["far_wait"], "w") as f:
        json.dump({"0": {"current_op": "all_reduce", "waiting_for_ranks": [16777215], "op_seq": 7}}, f)
    # A c10d log whose second timeout line names rank 16777215 (the tester's tlog/bigrank.log).
    paths["big_ranks_log"] = os.path.join(folder, "ranks.log")
    with open(paths["big_ranks_log"], "w") as f:
        for r in (0, 16777215):
            f.write("[E ProcessGroupNCCL.cpp:457] [Rank %d] Watchdog caught collective operation timeout: "
                    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) "
                    "ran for 1800035 milliseconds before timing out.\n" % r)
    # One store-based barrier line naming a world of 2^20 (170 bytes: it listed a million
    # members, 1.1 GB and 7.7 s, before the barrier's pg was given its size only).
    paths["barrier_world"] = os.path.join(folder, "barrier.log")
    with open(paths["barrier_world"], "w") as f:
        f.write("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
                "store_based_barrier_key:1 (world_size=1048576, worker_count=7, timeout=0:30:00)\n")
    # A snapshot big enough that parsing it cannot fit in the address-space bound below.
    paths["big"] = os.path.join(folder, "big_wait.json")
    with open(paths["big"], "w") as f:
        f.write("{")
        for i in range(snapshot_ranks):
            f.write('%s"%d":{"current_op":"all_reduce","waiting_for_ranks":[%d],"op_seq":7}'
                    % ("," if i else "", i, (i + 1) % snapshot_ranks))
        f.write("}")
    return paths


def rank_lists(doc):
    """Every rank number the JSON report lists, by where (docs/json-schema.md): ranks, pg members,
    wait-for edges, ranks without a dump, unreadable dumps, and each finding's rank lists."""
    out = {"ranks_without_dump": set(doc.get("ranks_without_dump", [])),
           "ranks": {r["rank"] for r in doc.get("ranks", [])},
           "unreadable_dumps": {u["rank"] for u in doc.get("unreadable_dumps", [])},
           "process_groups": {r for p in doc.get("process_groups", []) for r in p["ranks"]},
           "wait_for_graph": {r for e in doc.get("wait_for_graph", {}).get("edges", []) for r in (e["from"], e["to"])},
           "findings": set()}
    for f in doc.get("findings", []):
        for key in ("culprit_ranks", "cycle", "blocked_behind", "candidates"):
            out["findings"].update(f.get(key) or [])
        for g in f.get("roles", []):
            out["findings"].update(g["ranks"])
        out["findings"].update(e["rank"] for e in f.get("evidence", []) if e.get("rank") is not None)
    return out


def agree(doc, name):
    """Exits 1 unless world_size exceeds every listed rank and ranks_without_dump names no rank with data."""
    ws = doc["world_size"]
    lists = rank_lists(doc)
    for where, ranks in lists.items():
        if ranks and (max(ranks) >= ws or min(ranks) < 0):
            sys.exit("hostile: FAIL: %s: %s lists rank %d, world_size is %d" % (name, where, max(ranks), ws))
    if lists["ranks_without_dump"] & {r["rank"] for r in doc["ranks"] if r.get("file")}:
        sys.exit("hostile: FAIL: %s: a rank with data is also without a dump" % name)
    return set().union(*lists.values())


def analyze_json(argv, name, world_size):
    """Runs analyze --format json within bounds; exits 1 unless its world_size is `world_size`
    (worked out by hand for each input) and agrees with every rank list."""
    p = check(["analyze", "--format", "json"] + argv, 20, 600, name=name, stdout=subprocess.PIPE)
    doc = json.loads(p.stdout)
    listed = agree(doc, name)
    ws = doc["world_size"]
    print("hostile: %s: world_size %d, %d ranks listed, %d diagnostics"
          % (name, ws, len(listed), len(doc.get("diagnostics", []))))
    if len(listed) > 1000:
        sys.exit("hostile: FAIL: %s: lists %d ranks for a few files" % (name, len(listed)))
    if ws != world_size:
        sys.exit("hostile: FAIL: %s: world_size %d, want %d" % (name, ws, world_size))
    return doc


def refused(argv, name, words):
    p = check(argv, 10, 600, expect_exit={2}, name=name)
    err = p.stderr.decode("utf-8", "replace")
    if words not in err:
        sys.exit("hostile: FAIL: %s: the message does not say %r:\n%s" % (name, words, err))


def main():
    a = generator_args(__doc__, long=True)
    snapshot_ranks = 600000 if a.long else 200000
    if a.out:
        write(a.out, snapshot_ranks)
        return 0
    with tempfile.TemporaryDirectory() as d:
        paths = write(d, snapshot_ranks)
        # The one dump is rank 3's (its name): the world is ranks 0-3, 0-2 without a dump.
        analyze_json([paths["far_pg"]], "pg_config rank 16777215", 4)
        analyze_json([paths["far_pg"], "--world-size", "16777216"], "--world-size 16777216", 4)
        # The world is unknown (rank 16777215 is too high to believe for one rank with data): its
        # size is still past every rank listed, 16777215 (the wait's edge, the dump's rank).
        analyze_json([paths["far_wait"]], "a wait for rank 16777215", 16777216)
        analyze_json([paths["far_pg"], "--rank", paths["far_pg"] + "=16777215"], "--rank F=16777215", 16777216)
        analyze_json([paths["big_ranks_log"]], "timeouts of ranks 0 and 16777215 in one log", 16777216)
        # A world of 2^20 named by one line is not believed: the world is the one rank seen.
        analyze_json([paths["barrier_world"]], "a store-based barrier of world_size 2^20", 1)
        refused(["analyze", paths["far_pg"], "--rank", paths["far_pg"] + "=4611686018427387904"],
                "--rank F=2^62", "RANK a whole number")
        refused(["analyze", paths["far_pg"], "--rank", paths["far_pg"] + "=5x"], "--rank F=5x", "RANK a whole number")
        refused(["analyze", paths["far_pg"], "--rank", paths["far_pg"] + "=-1"], "--rank F=-1", "RANK a whole number")
        refused(["analyze", paths["far_pg"], "--world-size", "4611686018427387904"], "--world-size 2^62",
                "range")
        # Out of memory while reading one file: that file's error, the other file is read.
        mb = os.path.getsize(paths["big"]) / 1e6
        p = check(["analyze", "--format", "json", paths["big"], paths["far_wait"]], 60, 120,
                  name="analyze a %.0f MB snapshot in 120 MiB" % mb, stdout=subprocess.PIPE)
        doc = json.loads(p.stdout)
        if not any("out of memory" in g["message"] for g in doc["diagnostics"]):
            sys.exit("hostile: FAIL: no diagnostic says the snapshot ran out of memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
