# Real console for testdata/torch/detail_shape_rank/combined.log (torch 2.13.0+cpu, gloo):
#   TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc_per_node 3 --tee 3 --master_port 29614 \
#       detail_shape_rank.py > combined.log 2>&1
# then the interpreter prefix of the venv rewritten to /usr and the run folder dropped from paths.
# Rank 2 all_reduces a tensor of another rank (dimensions) than ranks 0-1: DETAIL's fingerprint
# lengths differ, and the wrapper prints the other side's length decoded as a fingerprint.
import os, datetime, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
for i in range(2):
    dist.all_reduce(torch.ones(8))
if rank == 2:
    dist.all_reduce(torch.ones(8, 2))
else:
    dist.all_reduce(torch.ones(8))
print("done", rank)
