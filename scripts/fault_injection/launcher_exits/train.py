"""Rank driver of the launcher-exit scenarios (testdata/torch/README.md, "Launcher exits").

One behaviour per MODE (env), gloo on CPU, 4 s pg timeout: two all_reduces, then
  all_segv  every rank reads address 0 after a barrier (SIGSEGV, faulthandler report)
  sigkill   rank 2 SIGKILLs itself
  exit0     rank 3 sys.exit(0)s
  kill3     rank 3 SIGKILLs itself
and a third all_reduce. Run by run.sh under torchrun or by hand (RANK, WORLD_SIZE, MASTER_*).
"""
import ctypes, datetime, faulthandler, os, signal, sys, time
import torch, torch.distributed as dist

faulthandler.enable()
mode = os.environ.get("MODE", "ok")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank}/{world} pid {os.getpid()} started", flush=True)
t = torch.ones(8)
for step in range(2):
    dist.all_reduce(t)
if mode == "all_segv":
    dist.barrier()          # all fault within the same instant, before the agent polls
    ctypes.string_at(0)     # a real NULL read: SIGSEGV
if mode == "sigkill" and rank == 2:
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "exit0" and rank == 3:
    sys.exit(0)             # leaves before the collective the others enter
if mode == "kill3" and rank == 3:
    os.kill(os.getpid(), signal.SIGKILL)
try:
    dist.all_reduce(t)
    print(f"rank {rank}: step 2 done", flush=True)
except Exception as e:
    print(f"rank {rank}: collective failed: {type(e).__name__}", flush=True)
    raise
dist.destroy_process_group()
