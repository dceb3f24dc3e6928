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
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=100.0, help="size of the log in MB (default 100)")
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--nranks", type=int, default=8)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    rng = random.Random(1)
    host, pid, tid, dev = "node01", 4711, 4790, a.rank % 8
    pre = "%s:%d:%d [%d] NCCL INFO " % (host, pid, tid, dev)
    comm = "0x55e4c9a3b010"
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
    limit = int(a.mb * 1e6)
    size = sum(len(l) + 1 for l in lines)
    opcount = 0
    with open(a.output, "w") as f:
        f.write("\n".join(lines) + "\n")
        buf = []
        while size < limit:
            for name, dtype, count in step:
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


if __name__ == "__main__":
    main()
