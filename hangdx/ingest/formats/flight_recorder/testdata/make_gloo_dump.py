"""Writes gloo_rank{0,1}.{pickle,json}: real Flight Recorder dumps of a
2-process gloo job (torch 2.13 CPU). Rank 0 issues one all_reduce more than
rank 1, then both dump. Run: python3 make_gloo_dump.py (takes ~10 s)."""
import datetime
import os
import subprocess
import sys


def child(rank, port):
    import torch
    import torch.distributed as dist
    from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=2))
    t = torch.ones(4, 4)
    for _ in range(3):
        dist.all_reduce(t)
    sub = dist.new_group([0, 1])
    dist.broadcast(t, 0, group=sub)
    try:
        if rank == 0:
            dist.all_reduce(t)  # rank 1 never joins: times out
        else:
            import time
            time.sleep(3)
    except RuntimeError:
        pass
    import time
    time.sleep(0.5)
    with open(f"gloo_rank{rank}.pickle", "wb") as f:
        f.write(_dump_fr_trace())
    with open(f"gloo_rank{rank}.json", "wb") as f:
        f.write(_dump_fr_trace_json())


if __name__ == "__main__":
    if len(sys.argv) == 3:
        child(int(sys.argv[1]), int(sys.argv[2]))
    else:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        env = dict(os.environ, TORCH_FR_BUFFER_SIZE="64")
        procs = [subprocess.Popen([sys.executable, __file__, str(r), str(port)], env=env) for r in (0, 1)]
        sys.exit(max(p.wait() for p in procs))
