# Real console for testdata/torch/store_wait_new_group/combined.log (torch 2.13.0+cpu, gloo), all ranks init and all_reduce; rank 1 sleeps 25 s before `new_group([0, 1, 2], timeout=5 s)`:
#   torchrun --nproc_per_node 3 --tee 3 --master_port 29611 store_wait_new_group.py > combined.log 2>&1
# then the interpreter prefix of the venv rewritten to /usr and the run folder dropped from paths.
import os, time, datetime, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
dist.all_reduce(torch.ones(2))
a = dist.new_group([0, 1])
if rank == 1:
    time.sleep(25)
b = dist.new_group([0, 1, 2], timeout=datetime.timedelta(seconds=5))
dist.all_reduce(torch.ones(2), group=b)
print("done", rank)
