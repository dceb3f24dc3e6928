# Real console for testdata/torch/store_wait_init/combined.log (torch 2.13.0+cpu, gloo), rank 2 sleeps 30 s before `init_process_group` (timeout 5 s):
#   torchrun --nproc_per_node 3 --tee 3 --master_port 29611 store_wait_init.py > combined.log 2>&1
# then the interpreter prefix of the venv rewritten to /usr and the run folder dropped from paths.
import os, time, datetime, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
if rank == 2:
    time.sleep(30)   # never joins in time (stalled data loader / slow start)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
t = torch.ones(4)
dist.all_reduce(t)
print("done", rank)
