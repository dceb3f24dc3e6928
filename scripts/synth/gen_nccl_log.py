#!/usr/bin/env python3
"""Writes a big, format-faithful NCCL_DEBUG=INFO log of one rank, for
throughput measurements of the text readers (hangdx analyze FILE, the
catalogue scan).

The lines are those NCCL 2.18-2.21 prints (src/init.cc, src/transport/*.cc,
src/enqueue.cc; docs/field-survey/nccl.md): the version line, bootstrap and
topology INFO lines, Channel lines (hundreds per communicator), the Init
COMPLETE line, then one COLL enqueue line per collective (AllGather /
ReduceScatter / AllReduce of a training step, opCount in hex) until the file
reaches --mb megabytes. A few WARN lines sit in between, as in real logs.

  scripts/synth/gen_nccl_log.py --mb 200 -o /tmp/big_rank3.log

A whole job (issue 13's log-set benchmark): --ranks N writes one log per rank,
DIR/nccl_rank_<r>.log of --mb MB each, every rank a member of the same N-rank
communicator (one commId, its own comm pointer, pid and host per 8 ranks);
--stop-rank R makes rank R stop one training step (5 collectives) before the
others, so the job hangs in the first collective R never enqueued:

  scripts/synth/gen_nccl_log.py --ranks 2 --mb 512 --stop-rank 1 --out /tmp/logs1g
"""
import argparse
import os
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=100.0, help="size of the log in MB (default 100)")
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--nranks", type=int, default=8)
    ap.add_argument("-o", "--output", help="the log of one rank (--rank of --nranks)")
    ap.add_argument("--ranks", type=int, help="write one log per rank of an N-rank job into --out")
    ap.add_argument("--out", help="folder for --ranks")
    ap.add_argument("--stop-rank", type=int, default=-1, help="with --ranks: this rank stops one step early")
    a = ap.parse_args()
    if a.ranks:
        if not a.out:
            ap.error("--ranks needs --out")
        os.makedirs(a.out, exist_ok=True)
        limit = None
        for r in range(a.ranks):
            path = os.path.join(a.out, "nccl_rank_%d.log" % r)
            # Every rank writes the same number of op lines: the size of rank 0's.
            n = write_rank(path, r, a.ranks, int(a.mb * 1e6), limit, 5 if r == a.stop_rank else 0)
            if limit is None:  # not the short rank's count: the ranks after it would stop short too
                limit = n
        return
    if not a.output:
        ap.error("-o or --ranks is needed")
    write_rank(a.output, a.rank, a.nranks, int(a.mb * 1e6), None, 0)


def write_rank(path, rank, nranks, size_limit, op_limit, short):
    """Writes rank `rank`'s log of an `nranks`-rank job to `path`: about `size_limit` bytes, or exactly
    `op_limit` - `short` op lines when `op_limit` is given. Returns the op lines a full rank writes."""
    a = argparse.Namespace(rank=rank, nranks=nranks)
    rng = random.Random(1)
    host, pid, tid, dev = "node%02d" % (1 + a.rank // 8), 4711 + a.rank, 4790 + a.rank, a.rank % 8
    pre = "%s:%d:%d [%d] NCCL INFO " % (host, pid, tid, dev)
    comm = "0x55e4c9a3%04x" % (0xb010 + 16 * a.rank)
    lines = [
        "%s:%d:%d [%d] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>" % (host, pid, pid, dev),
        "%s:%d:%d [%d] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)" % (host, pid, pid, dev),
        "NCCL version 2.21.5+cuda12.4",
        pre + "NCCL_IB_DISABLE set by environment to 0.",
        pre + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
        pre + "Using network IB",
        pre + "comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 1a000 commId 0x8d3fa5bc24e1f9c7 - Init START"
        % (comm, a.rank, a.nranks, dev, dev),
        pre + "Setting affinity for GPU %d to ffff,ffffffff" % dev,
        pre + "comm %s rank %d nRanks %d nNodes 1 localRanks %d localRank %d MNNVL 0"
        % (comm, a.rank, a.nranks, a.nranks, a.rank),
    ]
    for c in range(32):
        lines.append(pre + "Channel %02d/32 :    0   1   2   3   4   5   6   7" % c)
    for c in range(32):
        nxt = (a.rank + 1) % a.nranks
        lines.append(pre + "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read" % (c, a.rank, dev, nxt, nxt % 8))
    lines.append(pre + "Connected all rings")
    lines.append(pre + "Connected all trees")
    lines.append(pre + "threadThresholds 8/8/64 | 64/8/64 | 512 | 512")
    lines.append(pre + "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer")
    lines.append(pre + "comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 1a000 commId 0x8d3fa5bc24e1f9c7 - Init COMPLETE"
                 % (comm, a.rank, a.nranks, dev, dev))
    step = [("AllGather", 9, 1048576), ("AllGather", 9, 524288), ("ReduceScatter", 9, 1048576),
            ("ReduceScatter", 9, 524288), ("AllReduce", 7, 1)]
    limit = size_limit
    size = sum(len(l) + 1 for l in lines)
    opcount = 0
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
        buf = []
        while (opcount < op_limit - short) if op_limit is not None else size < limit:
            for name, dtype, count in step:
                if op_limit is not None and opcount >= op_limit - short:
                    break
                l = (pre + "%s: opCount %x sendbuff 0x7f1fd894af00 recvbuff 0x7f1ed1c00100 count %d datatype %d op 0 "
                     "root 0 comm %s [nranks=%d] stream 0x559c248a3630" % (name, opcount, count, dtype, comm, a.nranks))
                buf.append(l)
                size += len(l) + 1
                opcount += 1
            if rng.random() < 0.001:
                l = "\n%s:%d:%d [%d] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got async event : port active" % (
                    host, pid, tid, dev)
                buf.append(l)
                size += len(l) + 1
            if len(buf) > 10000:
                f.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")
    return opcount


if __name__ == "__main__":
    main()
