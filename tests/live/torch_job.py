#!/usr/bin/env python3
"""One rank of a small real gloo job for the `hangdx watch` tests
(test_torch_live.py): every rank runs all_reduce steps, with either
torch.distributed.debug.start_debug_server() (the watch polls it) or
hangdx.torch.watch() (the rank pushes), then the scenario's fault at step
HANG_STEP. The rank that causes the hang writes the time it did into
<marks>/hang_start.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=P RANK=r WORLD_SIZE=4 \
        torch_job.py --scenario user_sleep --marks DIR [--push URL --token T]
"""
import argparse
import datetime
import importlib.util
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

HANG_STEP = 6


def mark(marks, name):
    with open(os.path.join(marks, name), "w") as f:
        f.write("%.6f" % time.time())


def load_hook():
    try:
        import hangdx.torch as hook  # installed (pip install .)
        return hook
    except ImportError:  # the source tree: the hook needs only torch and the standard library
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        spec = importlib.util.spec_from_file_location("hangdx_torch_hook", os.path.join(root, "python", "hangdx", "torch.py"))
        hook = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hook)
        return hook


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--marks", required=True)
    ap.add_argument("--push")
    ap.add_argument("--token")
    ap.add_argument("--frontend-port", type=int, default=0)
    a = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    if a.push:
        load_hook().watch(a.push, interval_s=0.5, token=a.token)
    else:
        from torch.distributed.debug import start_debug_server
        start_debug_server(port=a.frontend_port)
    x = torch.ones(16)
    s = a.scenario
    steps = 12 if s in ("healthy", "slow") else HANG_STEP + 1
    if s == "never_arrives" and rank == world - 1:
        steps = HANG_STEP  # uneven data: one batch fewer
    pg_a = pg_b = None
    if s == "two_pgs":
        pg_a, pg_b = dist.new_group(list(range(world))), dist.new_group(list(range(world)))
        dist.all_reduce(x, group=pg_a)
        dist.all_reduce(x, group=pg_b)
    for step in range(1, steps + 1):
        # The step's compute. A healthy run's steps are longer, so that the
        # job lasts a few seconds: a 1-s job could end before the watch's
        # first probe (under load), and a job never seen is not "healthy".
        time.sleep(0.3 if s == "healthy" else 0.05)
        if s == "slow" and rank == 2:
            time.sleep(2.0)  # a slow rank, under --stall-after
        if step == HANG_STEP:
            if s == "user_sleep" and rank == 1:
                mark(a.marks, "hang_start")
                time.sleep(3600)  # stuck in user code (a data loader, a lock)
            if s == "mismatch" and rank == 2:
                mark(a.marks, "hang_start")
                dist.broadcast(x, src=0)  # where the others all_reduce
                continue
            if s == "sigkill" and rank == 1:
                mark(a.marks, "hang_start")
                os.kill(os.getpid(), signal.SIGKILL)
            if s == "two_pgs":
                if rank == 0:
                    mark(a.marks, "hang_start")
                first, second = (pg_a, pg_b) if rank < world // 2 else (pg_b, pg_a)
                dist.all_reduce(x, group=first)
                dist.all_reduce(x, group=second)
                continue
        try:
            dist.all_reduce(x)
        except RuntimeError as e:  # a peer died (gloo: connection closed): stay, as a hung rank would
            sys.stderr.write("rank %d: %s\n" % (rank, str(e).splitlines()[0]))
            time.sleep(3600)
    if s == "never_arrives" and rank == world - 1:
        mark(a.marks, "hang_start")
        time.sleep(3600)  # "writing the checkpoint": never enters the last all_reduce
    if s in ("healthy", "slow"):
        dist.barrier()
        mark(a.marks, "done_%d" % rank)
        return  # the processes end: the watch sees the job end
    time.sleep(3600)


if __name__ == "__main__":
    main()
