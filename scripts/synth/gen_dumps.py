#!/usr/bin/env python3
"""Writes synthetic, format-faithful PyTorch NCCL Flight Recorder dumps.

One file per rank, named as PyTorch names them: `nccl_trace_rank_<r>` (pickle,
byte layout of torch's C++ pickler, see frpickle.py) and/or
`nccl_trace_rank_<r>.json` (FlightRecorder::dump_json: no frames, sorted
keys, pg_status values as strings, time_discovered_* 0 when unset).

Flavour: NCCL, version "2.10". Process groups (pg_config keyed by pg name,
`ranks` as the string "[0, 1, 2]"): pg "0" default_pg = all ranks, then
families of new_group()s created in the same order on every rank (so the
counter names agree): tp = blocks of 8 consecutive ranks, dp = stride 8,
cp = blocks of 4, cp_dp = stride 4, pp = blocks of 2, ... (--pgs = how many
pgs each rank is a member of, default pg included). pg_id is the rank-local
creation index (0 = default, 1 = its tp group, ...).

Each rank runs the same training step (per family: two collectives; then a
loss all_reduce on pg 0); the ring buffer keeps the last E entries, so
record_id and the seq ids start high. Every op of a healthy rank is
`completed` and retired. A fault changes the last step:

  none             nothing wrong (the last step completed everywhere)
  missing_rank     one rank never issues the final all_reduce of pg 0
  mismatch         one rank issues broadcast instead of all_reduce there
  size_mismatch    one rank's final all_reduce has another size
  crashed_rank     one rank's file is absent (it died); the rest wait in pg 0
  p2p_cycle        two ranks of one tp group both send to each other first
  order_inversion  one rank issues pg 0's all_reduce before its tp all_reduce,
                   its tp peers the other way round: a circular wait

Ops a rank is blocked in (and everything it issued after) are `scheduled`,
not retired. The culprit rank is drawn from --seed (printed, and written to
DIR.expected.json, beside DIR so that analyzers do not read it).

usage: gen_dumps.py --ranks N --entries E [--pgs P] [--fault KIND]
                    [--format pickle|json|both] --out DIR [--seed S] [-j JOBS]
                    [--only R1,R2,...]
tiny CI mode:  gen_dumps.py --ranks 16 --entries 50 --out /tmp/x
"""
import argparse
import json
import multiprocessing
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frpickle  # noqa: E402

FAULTS = ["none", "missing_rank", "mismatch", "size_mismatch", "crashed_rank",
          "p2p_cycle", "order_inversion"]
# (desc, block size, kind): "block" = consecutive ranks, "stride" = r % size.
FAMILIES = [("tp", 8, "block"), ("dp", 8, "stride"), ("cp", 4, "block"),
            ("cp_dp", 4, "stride"), ("pp", 2, "block"), ("pp_dp", 2, "stride"),
            ("ep", 16, "block"), ("ep_dp", 16, "stride")]
T0_NS = 1_760_000_000_000_000_000  # wall clock of the first recorded op
STEP0 = 1000                       # steps run before the ring window
TIMEOUT_MS = 600000

C10D = "/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
LOGGER = "/usr/local/lib/python3.11/site-packages/torch/distributed/c10d_logger.py"
FSDP = "/usr/local/lib/python3.11/site-packages/torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py"
TRAIN = "/workspace/megatron/training.py"
MODEL = "/workspace/megatron/model/transformer.py"


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


# Shared frame dicts (one dict per unique frame, as FlightRecorder::dump does).
F = {
    "all_reduce": frame("all_reduce", C10D, 2950),
    "all_gather_into_tensor": frame("all_gather_into_tensor", C10D, 3870),
    "reduce_scatter_tensor": frame("reduce_scatter_tensor", C10D, 4377),
    "broadcast": frame("broadcast", C10D, 2760),
    "send": frame("send", C10D, 2484),
    "wrapper": frame("wrapper", LOGGER, 81),
    "fsdp_ag": frame("foreach_all_gather", FSDP, 226),
    "fsdp_rs": frame("foreach_reduce", FSDP, 436),
    "attn": frame("forward", MODEL, 612),
    "mlp": frame("forward", MODEL, 233),
    "layer": frame("_call_impl", "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", 1784),
    "loss": frame("reduce_loss", TRAIN, 301),
    "step": frame("train_step", TRAIN, 512),
    "loop": frame("train", TRAIN, 1010),
    "main": frame("pretrain", TRAIN, 344),
    "module": frame("<module>", "/workspace/pretrain_gpt.py", 230),
}
OUTER = [F["step"], F["loop"], F["main"], F["module"]]
TRACE = {
    "all_reduce": [F["all_reduce"], F["wrapper"], F["attn"], F["layer"]] + OUTER,
    "all_reduce2": [F["all_reduce"], F["wrapper"], F["mlp"], F["layer"]] + OUTER,
    "all_gather_into_tensor": [F["all_gather_into_tensor"], F["wrapper"], F["fsdp_ag"]] + OUTER,
    "reduce_scatter_tensor": [F["reduce_scatter_tensor"], F["wrapper"], F["fsdp_rs"]] + OUTER,
    "loss": [F["all_reduce"], F["wrapper"], F["loss"]] + OUTER,
    "broadcast": [F["broadcast"], F["wrapper"], F["loss"]] + OUTER,
    "send": [F["send"], F["wrapper"], F["step"], F["loop"], F["main"], F["module"]],
}


class World:
    """Process-group layout of the job (same on every rank)."""

    def __init__(self, n, pgs):
        self.n = n
        self.families = []  # (desc, [groups: sorted rank lists], first pg name)
        name = 1
        for desc, size, kind in FAMILIES[:max(0, pgs - 1)]:
            size = max(1, min(size, n))
            if kind == "block":
                groups = [list(range(s, min(s + size, n))) for s in range(0, n, size)]
            else:
                groups = [list(range(o, n, size)) for o in range(min(size, n))]
            self.families.append((desc, groups, name))
            name += len(groups)

    def member_pgs(self, r):
        """[(pg_id, name, desc, ranks)] of rank r: default pg first."""
        out = [(0, "0", "default_pg", list(range(self.n)))]
        for f, (desc, groups, first) in enumerate(self.families):
            for gi, g in enumerate(groups):
                if r in g:  # groups are small or strided; fine for n <= 100k
                    out.append((f + 1, str(first + gi), desc, g))
                    break
        return out


def ranks_str(ranks):
    return "[" + ", ".join(map(str, ranks)) + "]"


def step_ops(world_fams):
    """The ops of one training step: [(pg_id, op, in_sizes, out_sizes, dtype, trace)]."""
    ops = []
    for f in range(world_fams):
        pg = f + 1
        if f % 2 == 0:  # block families: tensor-parallel style all_reduces
            ops.append((pg, "all_reduce", [[4096, 1024]], [[4096, 1024]], "BFloat16", "all_reduce"))
            ops.append((pg, "all_reduce", [[4096, 4096]], [[4096, 4096]], "BFloat16", "all_reduce2"))
        else:           # stride families: FSDP style gather / reduce-scatter
            ops.append((pg, "_all_gather_base", [[1048576]], [["G", 1048576]], "BFloat16",
                        "all_gather_into_tensor"))
            ops.append((pg, "_reduce_scatter_base", [["G", 1048576]], [[1048576]], "Float",
                        "reduce_scatter_tensor"))
    ops.append((0, "all_reduce", [[1]], [[1]], "Float", "loss"))
    return ops


class Plan:
    """What every rank does; picklable so pool workers can rebuild a rank."""

    def __init__(self, args):
        self.n, self.e, self.pgs = args.ranks, args.entries, args.pgs
        self.fault, self.fmt, self.out, self.seed = args.fault, args.format, args.out, args.seed
        rng = random.Random(args.seed)
        self.culprit = rng.randrange(1, self.n) if self.n > 1 else 0
        if self.fault == "p2p_cycle":
            # two ranks of one tp group (or of pg 0 without tp groups)
            self.culprit = self.culprit - (self.culprit % 2)
            if self.culprit + 1 >= self.n:
                self.culprit = max(0, self.n - 2)
        if self.fault == "order_inversion" and self.pgs < 2:
            raise SystemExit("order_inversion needs --pgs >= 2")
        if self.fault == "p2p_cycle" and self.n < 2:
            raise SystemExit("p2p_cycle needs --ranks >= 2")

    def expected(self):
        c = self.culprit
        culprits = {"none": [], "p2p_cycle": [c, c + 1]}.get(self.fault, [c])
        return {"fault": self.fault, "culprit_ranks": culprits, "ranks": self.n,
                "entries": self.e, "pgs": self.pgs, "seed": self.seed}


def rank_ops(plan, world, r):
    """The full op list of rank r's ring window: [(pg_id, op, ins, outs, dtype, trace, kind)].

    kind: "done" (completed, retired), "pending" (scheduled, not retired),
    "p2p" (pending send). Returns (ops, ops_before_window_per_step_offset).
    """
    nf = len(world.families)
    step = step_ops(nf)
    fault, c = plan.fault, plan.culprit
    last = [list(o) + ["done"] for o in step]
    if fault == "none":
        tail = last
    elif fault in ("missing_rank", "mismatch", "size_mismatch", "crashed_rank"):
        tail = last[:-1] + [step[-1] + ("pending",)]
        if r == c and fault == "missing_rank":
            tail = last[:-1]
        elif r == c and fault == "mismatch":
            tail[-1] = [0, "broadcast", [[1]], [[1]], "Float", "broadcast", "pending"]
        elif r == c and fault == "size_mismatch":
            tail[-1] = [0, "all_reduce", [[2]], [[2]], "Float", "loss", "pending"]
    elif fault == "p2p_cycle":
        tail = last[:-1] + [step[-1] + ("pending",)]
        if r in (c, c + 1):
            peer = c + 1 if r == c else c
            pg = 1 if nf >= 1 else 0
            tail = last[:-1] + [[pg, "send", [[1 << 24]], [[1 << 24]], "Float", "send",
                                 "p2p", peer]]
    elif fault == "order_inversion":
        # the last step ends with tp all_reduce then pg 0 all_reduce
        tp = [1, "all_reduce", [[8]], [[8]], "Float", "all_reduce"]
        l0 = list(step[-1])
        tpg = world.families[0][1][next(i for i, g in enumerate(world.families[0][1]) if c in g)]
        if r == c:
            tail = last[:-1] + [l0 + ["pending"]]
        elif r in tpg:
            tail = last[:-1] + [tp + ["pending"]]
        else:
            tail = last[:-1] + [tp + ["done_unretired"], l0 + ["pending"]]
    else:
        raise SystemExit("unknown fault " + fault)
    return step, tail


def build_rank(plan, world, r):
    """Builds rank r's dump as a Python object (pickle key order)."""
    step, tail = rank_ops(plan, world, r)
    L = len(step)
    # Window: the last E ops of (the same number of full steps on every rank) + the tail.
    n_full = (plan.e + L - 1) // L
    first_step = STEP0 + 1
    ops = []
    for s in range(n_full):
        for o in step:
            ops.append(list(o) + ["done"])
    ops += [list(o) for o in tail]
    skip = len(ops) - plan.e if len(ops) > plan.e else 0
    # Counters at the start of the window (everything before was completed).
    pgs = world.member_pgs(r)
    per_step = {}
    for o in step:
        per_step[o[0]] = per_step.get(o[0], 0) + 1
    coll = {pg: (first_step - 1) * k for pg, k in per_step.items()}
    p2p = {pg: 0 for pg, *_ in pgs}
    opid = dict(coll)
    record_id = (first_step - 1) * L
    thread_id = str(139_900_000_000_000 + r * 4096)
    pg_name = {pid: (name, desc) for pid, name, desc, _ in pgs}
    pg_size = {pid: len(rk) for pid, _, _, rk in pgs}
    pg_ranks = {pid: rk for pid, _, _, rk in pgs}
    status = {}
    entries = []
    uses = {}
    for i, o in enumerate(ops):
        pg, op, ins, outs, dtype, trace, kind = o[:7]
        opid[pg] = opid.get(pg, 0) + 1
        if kind == "p2p":
            p2p[pg] += 1
            peer = o[7]
            me_l, peer_l = pg_ranks[pg].index(r), pg_ranks[pg].index(peer)
            pname = "nccl:send %d->%d" % (me_l, peer_l)
            seq = coll.get(pg, 0)
        else:
            coll[pg] = coll.get(pg, 0) + 1
            seq = coll[pg]
            pname = "nccl:" + op
        rid = record_id
        record_id += 1
        st = status.setdefault(pg, [-1, -1, -1])
        if kind != "p2p":
            st[0] = seq
        if i < skip:
            continue
        g = pg_size[pg]
        ins_ = [[g * sh[1]] if sh and sh[0] == "G" else sh for sh in ins]
        outs_ = [[g * sh[1]] if sh and sh[0] == "G" else sh for sh in outs]
        created = T0_NS + rid * 1_000_000 + (r % 97) * 1000
        done = kind in ("done", "done_unretired")
        if done and kind != "p2p":
            st[2] = seq
        frames = TRACE[trace]
        for fr in frames:
            uses[id(fr)] = uses.get(id(fr), 0) + 1
        entries.append({
            "frames": list(frames),
            "record_id": rid,
            "pg_id": pg,
            "process_group": pg_name[pg],
            "thread_name": "pt_main_thread",
            "thread_id": thread_id,
            "collective_seq_id": seq,
            "p2p_seq_id": p2p[pg],
            "op_id": opid[pg],
            "profiling_name": pname,
            "time_created_ns": created,
            "input_sizes": ins_,
            "input_dtypes": [dtype] * len(ins_),
            "output_sizes": outs_,
            "output_dtypes": [dtype] * len(outs_),
            "state": "completed" if done else "scheduled",
            "time_discovered_started_ns": None,
            "time_discovered_completed_ns": created + 2_500_000 if done else None,
            "retired": kind == "done",
            "timeout_ms": TIMEOUT_MS,
            "is_p2p": kind == "p2p",
        })
    # Entries skipped before the window still count in pg_status.
    for pg, (enq, _, comp) in status.items():
        status[pg] = [enq, -1, comp]
    d = {
        "version": "2.10",
        "pg_config": {name: {"name": name, "desc": desc, "ranks": ranks_str(rk)}
                      for name, desc, rk in sorted((n_, d_, rk) for _, n_, d_, rk in pgs)},
        "comm_lib_version": "2.27.3",
        "pg_status": {str(pg): {"last_enqueued_collective": s[0],
                                "last_started_collective": s[1],
                                "last_completed_collective": s[2]}
                      for pg, s in sorted(status.items())},
        "entries": entries,
    }
    shared = {i for i, k in uses.items() if k > 1}
    return d, shared


def to_json(d):
    """FlightRecorder::dump_json's rendering of the same dump."""
    j = {k: v for k, v in d.items() if k != "entries"}
    j["pg_status"] = {pg: {k: str(v) for k, v in s.items()} for pg, s in d["pg_status"].items()}
    ents = []
    for e in d.get("entries", []):
        e = {k: v for k, v in e.items() if k != "frames"}
        e["process_group"] = list(e["process_group"])
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            if e.get(k) is None and k in e:
                e[k] = 0
        ents.append(e)
    if ents:
        j["entries"] = ents
    j["nccl_comm_state"] = {}
    return json.dumps(j, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_STATE = {}


def _init(plan):
    _STATE["plan"] = plan
    _STATE["world"] = World(plan.n, plan.pgs)


def write_rank(r):
    plan, world = _STATE["plan"], _STATE["world"]
    if plan.fault == "crashed_rank" and r == plan.culprit:
        return r, 0, 0
    d, shared = build_rank(plan, world, r)
    nb_p = nb_j = 0
    base = os.path.join(plan.out, "nccl_trace_rank_%d" % r)
    if plan.fmt in ("pickle", "both"):
        enc = frpickle.Encoder(shared)
        data = enc.dumps(d)
        with open(base, "wb") as f:
            f.write(data)
        nb_p = len(data)
    if plan.fmt in ("json", "both"):
        data = to_json(d).encode("utf-8")
        with open(base + ".json", "wb") as f:
            f.write(data)
        nb_j = len(data)
    return r, nb_p, nb_j


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--entries", type=int, required=True)
    ap.add_argument("--pgs", type=int, default=3, help="pgs per rank incl. the default pg (1-9)")
    ap.add_argument("--fault", choices=FAULTS, default="missing_rank")
    ap.add_argument("--format", choices=["pickle", "json", "both"], default="pickle")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default=None,
                    help="write only these ranks (comma-separated) of the N-rank job")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not 1 <= args.pgs <= len(FAMILIES) + 1:
        ap.error("--pgs must be 1..%d" % (len(FAMILIES) + 1))
    if args.ranks < 1 or args.entries < 1:
        ap.error("--ranks and --entries must be >= 1")
    os.makedirs(args.out, exist_ok=True)
    plan = Plan(args)
    t = time.time()
    tot_p = tot_j = 0
    todo = range(args.ranks)
    if args.only:
        todo = sorted({int(x) for x in args.only.split(",") if x.strip()})
        if any(not 0 <= r < args.ranks for r in todo):
            ap.error("--only: rank out of range")
    if args.jobs <= 1 or len(todo) < 8:
        _init(plan)
        results = map(write_rank, todo)
        for _, p, j in results:
            tot_p += p
            tot_j += j
    else:
        with multiprocessing.Pool(args.jobs, _init, (plan,)) as pool:
            for _, p, j in pool.imap_unordered(write_rank, todo,
                                               chunksize=max(1, len(todo) // (args.jobs * 16))):
                tot_p += p
                tot_j += j
    with open(args.out.rstrip("/") + ".expected.json", "w") as f:
        json.dump(plan.expected(), f, indent=1)
    if not args.quiet:
        print("gen_dumps: %d ranks x %d entries, %d pgs, fault %s (culprit %s): pickle %.1f MB, "
              "json %.1f MB in %.1f s -> %s"
              % (args.ranks, args.entries, args.pgs, args.fault, plan.expected()["culprit_ranks"],
                 tot_p / 1e6, tot_j / 1e6, time.time() - t, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
