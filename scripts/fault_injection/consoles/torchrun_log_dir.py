# Real logs for testdata/torch/torchrun_log_dir (torch 2.13.0+cpu, gloo): rank 1 skips the second all_reduce
# and exits (its interpreter's shutdown then aborts: SIGABRT, as in scenario f1):
#   torchrun --nproc_per_node 3 --log-dir logs --redirects 3 --master_port 29615 torchrun_log_dir.py > console.log 2>&1
# then the interpreter prefix of the venv rewritten to /usr and the run folder dropped from paths.
import os, time, datetime, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
dist.all_reduce(torch.ones(4))
if rank != 1:
    dist.all_reduce(torch.ones(4))   # rank 1 skips it
print("done", rank)
