#!/usr/bin/env python3
"""What does gloo's Flight Recorder record for P2P?  Runs 2 ranks doing
all_reduce, send/recv, barrier, isend/irecv, batch_isend_irecv, all_reduce and
prints rank 0's entries and pg_status (findings: testdata/torch/README.md).

  python3 scripts/fault_injection/p2p_probe.py
"""
import datetime, os, pickle, socket, subprocess, sys, time


def rank_main(r, port):
    import torch, torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=r, world_size=2,
                            timeout=datetime.timedelta(seconds=5))
    t = torch.ones(10)
    dist.all_reduce(t)                                   # expected op_id 1
    if r == 0:                                           # op_id 2, 3
        dist.send(torch.ones(1 << 20), 1); dist.recv(t, 1)
    else:
        dist.recv(torch.zeros(1 << 20), 0); dist.send(t, 0)
    dist.barrier()                                       # op_id 4
    (dist.isend(torch.ones(5), 1) if r == 0 else dist.irecv(torch.ones(5), 0)).wait()   # 5
    ops = [dist.P2POp(dist.isend, torch.ones(3), 1 - r), dist.P2POp(dist.irecv, torch.zeros(3), 1 - r)]
    for w in dist.batch_isend_irecv(ops):               # 6, 7
        w.wait()
    dist.all_reduce(t)                                   # 8
    time.sleep(1)  # completion is recorded asynchronously
    d = pickle.loads(torch._C._distributed_c10d._dump_fr_trace())
    if r == 0:
        print("pg_config", d["pg_config"], "\npg_status", d["pg_status"])
        for e in d.get("entries", []):
            print("record %d op_id %d seq %d p2p_seq %d %s is_p2p %s retired %s" % (
                e["record_id"], e["op_id"], e["collective_seq_id"], e["p2p_seq_id"],
                e["profiling_name"], e["is_p2p"], e["retired"]))
    dist.barrier()


if __name__ == "__main__":
    if len(sys.argv) == 3:
        rank_main(int(sys.argv[1]), int(sys.argv[2]))
        sys.exit(0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    env = dict(os.environ, TORCH_FR_BUFFER_SIZE="200")
    ps = [subprocess.Popen([sys.executable, __file__, str(r), str(port)], env=env) for r in range(2)]
    sys.exit(max(p.wait() for p in ps))
