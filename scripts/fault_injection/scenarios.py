"""Scenario bodies for the gloo fault-injection suite.

Each scenario is run on `world` ranks by worker.py.  The body runs after
init_process_group; the worker dumps the Flight Recorder when a collective
raises, or at `deadline` seconds after init (every live rank).

Tiny training loop used by several scenarios: a Linear(8, 4) model, one
all_reduce of the flattened gradients per step (36 floats), plus a distinct
extra op where the scenario says so.
"""
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict

import torch
import torch.distributed as dist


@dataclass
class Ctx:
    rank: int
    world: int
    timeout: float
    log: Callable[[str], None]


@dataclass
class Scenario:
    name: str
    world: int
    body: Callable[[Ctx], None]
    timeout: float = 4.0       # init_process_group / new_group timeout (s)
    deadline: float = 8.0      # watchdog dump, seconds after init
    env: Dict[str, str] = field(default_factory=dict)
    doc: str = ""
    stacks: bool = False       # also write faulthandler stacks at the deadline
    pyspy: bool = False        # also write `py-spy dump` (text, JSON) at the deadline
    rank_env: Dict[int, Dict[str, str]] = field(default_factory=dict)  # extra environment of some ranks
    # Per-rank dump deadlines overriding `deadline` (rank -> seconds after
    # init): dumps of one moment are never taken at quite the same time.
    rank_deadline: Dict[int, float] = field(default_factory=dict)

    def deadline_of(self, rank):
        return self.rank_deadline.get(rank, self.deadline)


class Trainer:
    def __init__(self, ctx):
        torch.manual_seed(0)  # same weights everywhere
        self.model = torch.nn.Linear(8, 4)
        self.gen = torch.Generator().manual_seed(100 + ctx.rank)  # per-rank data
        self.ctx = ctx

    def step(self, i, group=None):
        x = torch.randn(16, 8, generator=self.gen)
        y = torch.randn(16, 4, generator=self.gen)
        self.model.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in self.model.parameters()])
        self.ctx.log("step %d: all_reduce(grads, numel=%d)" % (i, flat.numel()))
        dist.all_reduce(flat, group=group)
        with torch.no_grad():
            off = 0
            for p in self.model.parameters():
                n = p.numel()
                p -= 0.01 * flat[off:off + n].reshape(p.shape) / self.ctx.world
                off += n
        return loss.detach()


def sleep_forever(ctx, what):
    ctx.log("%s (no collective); sleeping until the dump deadline" % what)
    time.sleep(3600)


# a. `if rank == 0: all_reduce(loss)` at the logging step of the loop.
def sc_a(ctx):
    tr = Trainer(ctx)
    steps = 3
    for i in range(steps):
        loss = tr.step(i)
        if i == steps - 1 and ctx.rank == 0:  # rank-dependent logging branch
            ctx.log("rank 0 only: all_reduce(loss) for logging")
            dist.all_reduce(loss.reshape(1))
    sleep_forever(ctx, "training loop done, writing local checkpoint")


# b. uneven number of batches; the short rank goes on to the end-of-epoch barrier.
def sc_b(ctx):
    tr = Trainer(ctx)
    nbatches = 3 if ctx.rank == 2 else 4
    for i in range(nbatches):
        tr.step(i)
    ctx.log("epoch done after %d batches: barrier" % nbatches)
    dist.barrier()
    sleep_forever(ctx, "after barrier")


# c. all_reduce on ranks 0,1 and broadcast on rank 2 at the same seq.
def sc_c(ctx):
    tr = Trainer(ctx)
    for i in range(2):
        tr.step(i)
    t = torch.ones(8)
    if ctx.rank == 2:
        ctx.log("broadcast(src=0, numel=8)")
        dist.broadcast(t, src=0)
    else:
        ctx.log("all_reduce(numel=8)")
        dist.all_reduce(t)
    sleep_forever(ctx, "after the mismatched op")


# d. same op, different sizes: rank 3 of 4 all_reduces 24 elements, the others 16.
# (world 4: gloo aborts the process of a rank that receives a wrongly sized
# chunk, so one innocent rank leaves no dump; 4 ranks keep a clear majority.)
def sc_d(ctx):
    tr = Trainer(ctx)
    for i in range(2):
        tr.step(i)
    t = torch.ones(24 if ctx.rank == 3 else 16)
    ctx.log("all_reduce(numel=%d)" % t.numel())
    dist.all_reduce(t)
    sleep_forever(ctx, "after the mismatched op")


# e. same op, same shape, different dtype: rank 3 of 4 float64, the others float32.
def sc_e(ctx):
    tr = Trainer(ctx)
    for i in range(2):
        tr.step(i)
    t = torch.ones(16, dtype=torch.float64 if ctx.rank == 3 else torch.float32)
    ctx.log("all_reduce(dtype=%s)" % t.dtype)
    dist.all_reduce(t)
    sleep_forever(ctx, "after the mismatched op")


# f1/f2. rank 1 of 4 leaves in the middle of training (exit / SIGKILL) before step 2's all_reduce.
def _sc_f(ctx, how):
    tr = Trainer(ctx)
    for i in range(4):
        if i == 2 and ctx.rank == 1:
            if how == "exit":
                ctx.log("rank 1: sys.exit(0) in the middle of training")
                sys.stderr.flush()
                sys.exit(0)
            ctx.log("rank 1: SIGKILL to self in the middle of training")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        tr.step(i)
    sleep_forever(ctx, "training loop done")


def sc_f1(ctx):
    _sc_f(ctx, "exit")


def sc_f2(ctx):
    _sc_f(ctx, "kill")


# g. P2P: both ranks send first, then receive.
G_NUMEL = 4 * 1024 * 1024  # 16 MiB of float32


def sc_g(ctx):
    tr = Trainer(ctx)
    tr.step(0)
    peer = 1 - ctx.rank
    out = torch.full((G_NUMEL,), float(ctx.rank))
    inp = torch.empty(G_NUMEL)
    ctx.log("send(%d floats) to %d" % (G_NUMEL, peer))
    dist.send(out, peer)
    ctx.log("send returned; recv from %d" % peer)
    dist.recv(inp, peer)
    ctx.log("recv returned (value %.0f)" % inp[0].item())
    tr.step(1)
    sleep_forever(ctx, "after the exchange")


# h. two process groups over the same ranks, issued in opposite orders.
def sc_h(ctx):
    ga = dist.new_group([0, 1], group_desc="pg_a")
    gb = dist.new_group([0, 1], group_desc="pg_b")
    tr = Trainer(ctx)
    tr.step(0, group=ga)
    t = torch.ones(8)
    dist.all_reduce(t, group=gb)  # both in the same order once: fine
    order = [("pg_a", ga), ("pg_b", gb)] if ctx.rank == 0 else [("pg_b", gb), ("pg_a", ga)]
    for desc, g in order:
        ctx.log("all_reduce on %s" % desc)
        dist.all_reduce(torch.ones(8), group=g)
    sleep_forever(ctx, "after both all_reduces")


# h3. as h on 3 ranks: ranks 0,1 issue pg_a then pg_b, rank 2 pg_b then pg_a.
# The odd order is rank 2's: ranks 0,1 wait in pg_a for rank 2, which waits in
# pg_b for them.
def sc_h3(ctx):
    ga = dist.new_group([0, 1, 2], group_desc="pg_a")
    gb = dist.new_group([0, 1, 2], group_desc="pg_b")
    tr = Trainer(ctx)
    tr.step(0, group=ga)
    dist.all_reduce(torch.ones(8), group=gb)  # the same order once: fine
    order = [("pg_a", ga), ("pg_b", gb)] if ctx.rank != 2 else [("pg_b", gb), ("pg_a", ga)]
    for desc, g in order:
        ctx.log("all_reduce on %s" % desc)
        dist.all_reduce(torch.ones(8), group=g)
    sleep_forever(ctx, "after both all_reduces")


# h3_first. h3 without the warm-up collectives: each sub-group's first use is
# the inversion (the fresh-user tester's inv3). gloo's recorder lists no
# sub-group members, so pg_a is recorded by ranks 0,1 only and pg_b by rank 2
# only: nothing in the dumps says rank 2 is in pg_a but that pg_a would have
# finished without another member.
def sc_h3_first(ctx):
    ga = dist.new_group([0, 1, 2])
    gb = dist.new_group([0, 1, 2])
    tr = Trainer(ctx)
    tr.step(0)
    order = [("pg_a", ga), ("pg_b", gb)] if ctx.rank != 2 else [("pg_b", gb), ("pg_a", ga)]
    for desc, g in order:
        ctx.log("all_reduce on %s" % desc)
        dist.all_reduce(torch.ones(8), group=g)
    sleep_forever(ctx, "after both all_reduces")


# i. new_group called in different orders: rank 2 creates "dp" before "tp".
def sc_i(ctx):
    if ctx.rank == 2:
        dp = dist.new_group([0, 1, 2], group_desc="dp")
        tp = dist.new_group([0, 1, 2], group_desc="tp")
    else:
        tp = dist.new_group([0, 1, 2], group_desc="tp")
        dp = dist.new_group([0, 1, 2], group_desc="dp")
    ctx.log("groups created; all_reduce on tp then dp")
    dist.all_reduce(torch.ones(8), group=tp)
    dist.all_reduce(torch.ones(16), group=dp)
    sleep_forever(ctx, "after both all_reduces")


# k. latent order inversion: two pgs over the same ranks whose all_reduces are
# issued asynchronously in opposite orders on ranks 0,1 and ranks 2,3. gloo runs
# each pg on its own thread, so this run completes; on one serial device
# resource (an AICPU slot, one launch queue) the same order would deadlock.
def sc_k(ctx):
    ga = dist.new_group([0, 1, 2, 3], group_desc="pg_a")
    gb = dist.new_group([0, 1, 2, 3], group_desc="pg_b")
    tr = Trainer(ctx)
    tr.step(0, group=ga)
    dist.all_reduce(torch.ones(8), group=gb)  # same order everywhere: seq 1 on both pgs
    order = [("pg_a", ga), ("pg_b", gb)] if ctx.rank < 2 else [("pg_b", gb), ("pg_a", ga)]
    works = []
    for desc, g in order:
        ctx.log("async all_reduce on %s" % desc)
        works.append(dist.all_reduce(torch.ones(8), group=g, async_op=True))
    for w in works:
        w.wait()
    tr.step(1, group=ga)  # seq 3 on pg_a, in order everywhere
    ctx.log("both inverted all_reduces completed")
    sleep_forever(ctx, "training done")


# j1. healthy.
def sc_j1(ctx):
    tr = Trainer(ctx)
    for i in range(3):
        tr.step(i)
    dist.barrier()
    sleep_forever(ctx, "training done")


# j2. rank 2 is slow (1.2 s of extra compute per step, then one 10 s step) but
# progresses; the dumps are taken during the long step, before any timeout, so
# the pickle and the JSON dump (taken ~1-2 s apart) see the same state.
def sc_j2(ctx):
    tr = Trainer(ctx)
    for i in range(5):
        if ctx.rank == 2:
            time.sleep(10.0 if i == 3 else 1.2)
        tr.step(i)
    sleep_forever(ctx, "training done")


# Helper threads a training process typically has beside its main thread,
# started after init so that faulthandler (newest thread first) and py-spy
# list them before the main thread: a heartbeat thread asleep in
# Event.wait (threading.py), and a control-channel reader blocked in
# multiprocessing's Connection.recv (the frame is named `recv`, as
# torch.distributed's P2P call is). Neither is in a collective.
def start_helper_threads(ctx):
    import multiprocessing
    import threading
    reader, writer = multiprocessing.Pipe(duplex=False)
    stop = threading.Event()

    def heartbeat():
        while not stop.wait(3600):
            pass

    def control_channel():
        try:
            reader.recv()
        except EOFError:
            pass

    threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
    threading.Thread(target=control_channel, name="control-channel", daemon=True).start()
    ctx.log("helper threads started: heartbeat (Event.wait), control-channel (Connection.recv)")
    return writer  # kept open by the caller: the reader blocks until the process ends


# ddp_uneven. DistributedDataParallel with uneven inputs: rank 3 of 4 has 3
# batches, ranks 0-2 have 4. Rank 3 leaves the loop and calls the end-of-epoch
# barrier while ranks 0-2 are inside loss.backward(), where DDP's Reducer
# launches the gradient all_reduce from the autograd engine and waits for it
# at the end of backward. Helper threads on every rank (start_helper_threads).
def sc_ddp_uneven(ctx):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(100 + ctx.rank)
    keep = start_helper_threads(ctx)  # noqa: F841
    nbatches = 3 if ctx.rank == 3 else 4
    for i in range(nbatches):
        x = torch.randn(16, 8, generator=gen)
        y = torch.randn(16, 4, generator=gen)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        ctx.log("step %d: loss.backward() (DDP gradient all_reduce)" % i)
        loss.backward()
        opt.step()
    ctx.log("epoch done after %d batches: barrier" % nbatches)
    dist.barrier()
    sleep_forever(ctx, "after barrier")


# b_threads. Scenario b (rank 2 of 3 has one batch fewer, then barrier) with
# the helper threads of start_helper_threads on every rank.
def sc_b_threads(ctx):
    keep = start_helper_threads(ctx)  # noqa: F841
    sc_b(ctx)


class _FailsToUnpickle:
    """Pickles on every rank; unpickling raises on every rank but the sender
    (rank 0), as an object of a class or library version that only the
    sender's environment can rebuild does."""

    def __init__(self, payload):
        self.payload = payload

    def __reduce__(self):
        return (_rebuild_on_sender_only, (self.payload,))


def _rebuild_on_sender_only(payload):
    if os.environ.get("RANK") != "0":
        raise ValueError("cannot rebuild the broadcast object on this rank (its environment lacks the sender's version)")
    return _FailsToUnpickle(payload)


# bcast_unpickle. Rank 0 sends an object with broadcast_object_list at start-up,
# before any other collective; its unpickling raises on the receivers (ranks
# 1,2), which crash by themselves. The sender is fine and goes on to its
# first training step's all_reduce, where it waits for the receivers.
def sc_bcast_unpickle(ctx):
    objs = [_FailsToUnpickle({"lr": 0.01, "vocab": list(range(16))})] if ctx.rank == 0 else [None]
    ctx.log("broadcast_object_list(src=0)")
    dist.broadcast_object_list(objs, src=0)
    ctx.log("broadcast_object_list returned")
    tr = Trainer(ctx)
    for i in range(3):
        tr.step(i)
    sleep_forever(ctx, "training done")


# j3. healthy, but the dumps are taken at different moments around the
# closing barrier: rank 2 computes until +6 s and then enters it; ranks 0,1
# wait in it from the start and dump at +2 s (both dumps done by ~+5 s, so
# pickle and JSON agree), rank 2 dumps at +8 s, after the barrier completed
# on every rank (at ~+6 s). Ranks 0,1 show the barrier pending, rank 2 ended.
def sc_j3(ctx):
    tr = Trainer(ctx)
    for i in range(3):
        tr.step(i)
    if ctx.rank == 2:
        time.sleep(6.0)
    ctx.log("barrier")
    dist.barrier()
    ctx.log("barrier done")
    sleep_forever(ctx, "training done")


# c_detail_sub. Scenario c inside a sub-group under TORCH_DISTRIBUTED_DEBUG=DETAIL:
# world 4, sub = new_group([1, 2, 3]); 2 steps on the default pg, 1 step on
# sub, then ranks 1,2 all_reduce on sub while rank 3 broadcasts (src=1) on it.
# Rank 0 is not in sub and sleeps. The wrapper of sub compares fingerprints
# and names the deviating rank by its rank *inside sub* (global 3 = sub rank 2).
def sc_c_detail_sub(ctx):
    sub = dist.new_group([1, 2, 3], group_desc="sub")
    tr = Trainer(ctx)
    for i in range(2):
        tr.step(i)
    if ctx.rank == 0:
        sleep_forever(ctx, "not in sub")
    tr.step(2, group=sub)
    t = torch.ones(8)
    if ctx.rank == 3:
        ctx.log("broadcast(src=1, numel=8) on sub")
        dist.broadcast(t, src=1, group=sub)
    else:
        ctx.log("all_reduce(numel=8) on sub")
        dist.all_reduce(t, group=sub)
    sleep_forever(ctx, "after the mismatched op")


# h_sub. The fresh-user tester's order inversion in sub-groups (3 ranks): gA,
# gB = new_group([0, 1]) twice (every rank calls new_group, rank 2 too, which
# is no member of either), two all_reduces on the default pg, then rank 0
# all_reduces on gA then gB, rank 1 on gB then gA, and every rank calls the
# next barrier. Rank 0 waits in gA (pg "1") for rank 1, rank 1 in gB (pg "2")
# for rank 0, rank 2 in the barrier (pg 0 seq 3) for both. gloo's Flight
# Recorder records no member list once new_group is called, and each of pg 1
# and pg 2 is recorded by one rank only.
def sc_h_sub(ctx):
    ga = dist.new_group([0, 1])
    gb = dist.new_group([0, 1])
    t = torch.ones(8)
    for step in range(2):
        ctx.log("step %d: all_reduce(numel=8)" % step)
        dist.all_reduce(t)
    if ctx.rank == 0:
        ctx.log("all_reduce on gA, then on gB")
        dist.all_reduce(t, group=ga)
        dist.all_reduce(t, group=gb)
    elif ctx.rank == 1:
        ctx.log("all_reduce on gB, then on gA")
        dist.all_reduce(t, group=gb)
        dist.all_reduce(t, group=ga)
    ctx.log("barrier")
    dist.barrier()
    sleep_forever(ctx, "after the barrier")


# sub_sleep. Fault A inside a sub-group: 4 ranks, new_group([0, 1]) and
# new_group([2, 3]); a few steps of all_reduce on each pair and on the world,
# then rank 1 sleeps in user code (a slow checkpoint on one rank) while rank 0
# waits in the pair's all_reduce and ranks 2-3 go on to the world's
# all_reduce and wait there. Dumps and stacks at +6 s, before the 60 s timeout.
def sc_sub_sleep(ctx):
    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    mine = pairs[ctx.rank // 2]
    t = torch.ones(8)
    for step in range(3):
        ctx.log("step %d: all_reduce on the pair, then on the world" % step)
        dist.all_reduce(t, group=mine)
        dist.all_reduce(t)
    if ctx.rank == 1:
        ctx.log("sleeping in user code before the pair's all_reduce")
        time.sleep(3600)
    ctx.log("step 3: all_reduce on the pair, then on the world")
    dist.all_reduce(t, group=mine)
    dist.all_reduce(t)
    sleep_forever(ctx, "after step 3")


# irecv2. Fault C: a 2-rank world, one all_reduce, then both ranks irecv
# from the other and wait on it before sending: neither send is ever posted.
def sc_irecv2(ctx):
    t = torch.ones(8)
    dist.all_reduce(t)
    peer = 1 - ctx.rank
    ctx.log("irecv from %d, then wait, then send" % peer)
    req = dist.irecv(t, src=peer)
    req.wait()
    dist.send(t, dst=peer)
    sleep_forever(ctx, "after the p2p")


# bcast_src. Fault B without a recorded difference: 3 ranks, two
# all_reduces, then ranks 0-1 broadcast(src=0) and rank 2 broadcast(src=1):
# neither the Flight Recorder (no root in an entry) nor the stacks show src.
# Rank 0 sends to 1 and 2, rank 1 receives from 0 and completes, rank 2
# waits for rank 1, which never sends: ranks 0 and 2 time out (8 s).
def sc_bcast_src(ctx):
    t = torch.ones(8)
    for step in range(2):
        ctx.log("step %d: all_reduce" % step)
        dist.all_reduce(t)
    src = 1 if ctx.rank == 2 else 0
    ctx.log("broadcast(src=%d)" % src)
    dist.broadcast(t, src=src)
    sleep_forever(ctx, "after the broadcast")


# p2p_tag. Fault C: a 2-rank world, rank 0 sends with tag 1, rank 1
# receives with tag 2: the recv never matches (gloo pairs by tag), both hang.
def sc_p2p_tag(ctx):
    t = torch.ones(8)
    dist.all_reduce(t)
    if ctx.rank == 0:
        ctx.log("send(tag=1) to 1")
        dist.send(t, dst=1, tag=1)
    else:
        ctx.log("recv(tag=2) from 0")
        dist.recv(t, src=0, tag=2)
    sleep_forever(ctx, "after the p2p")


# tri_cycle. Fault C across three sub-groups: 3 ranks, gA=[0,1], gB=[1,2],
# gC=[0,2] (created in the same order everywhere), one all_reduce on the
# world, then rank 0 all_reduces on gA then gC, rank 1 on gB then gA, rank 2
# on gC then gB: rank 0 waits in gA for rank 1, which waits in gB for rank 2,
# which waits in gC for rank 0, a 3-rank cycle with no 2-rank one in it.
def sc_tri_cycle(ctx):
    groups = {"gA": dist.new_group([0, 1]), "gB": dist.new_group([1, 2]), "gC": dist.new_group([0, 2])}
    t = torch.ones(8)
    dist.all_reduce(t)
    order = {0: ["gA", "gC"], 1: ["gB", "gA"], 2: ["gC", "gB"]}[ctx.rank]
    for name in order:
        ctx.log("all_reduce on %s" % name)
        dist.all_reduce(t, group=groups[name])
    sleep_forever(ctx, "after both sub-group all_reduces")


class _BadShard(Exception):
    """What a data-loading thread raises on a record it cannot decode."""


def _loader_thread(ctx, q, fail_at, name):
    """A data-loader-like helper thread: puts one batch per step on `q`;
    raises at batch `fail_at` (None: never). Python's threading excepthook
    prints "Exception in thread NAME:" and the traceback; the process lives
    on and the thread's consumer waits in q.get() for a batch that never
    comes."""
    import threading

    def run():
        gen = torch.Generator().manual_seed(100 + ctx.rank)
        for i in range(100):
            if fail_at is not None and i == fail_at:
                time.sleep(0.5)  # decoding; the main thread is in q.get() by then
                raise _BadShard("cannot decode record %d of shard 7 (truncated)" % (16 * i))
            q.put((torch.randn(16, 8, generator=gen), torch.randn(16, 4, generator=gen)))

    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    return t


# thread_crash. Every rank trains from a loader thread's queue; rank 1's
# loader raises at batch 2. Its process stays alive: the main thread waits in
# q.get() for batch 2 and never reaches step 2's all_reduce (seq 3), where
# ranks 0,2 wait for it until their timeout.
def sc_thread_crash(ctx):
    import queue
    q = queue.Queue(maxsize=2)
    _loader_thread(ctx, q, 2 if ctx.rank == 1 else None, "loader")
    tr = Trainer(ctx)
    for i in range(4):
        ctx.log("step %d: waiting for a batch" % i)
        x, y = q.get()
        tr.model.zero_grad()
        loss = torch.nn.functional.mse_loss(tr.model(x), y)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in tr.model.parameters()])
        ctx.log("step %d: all_reduce(grads, numel=%d)" % (i, flat.numel()))
        dist.all_reduce(flat)
    sleep_forever(ctx, "training done")


# thread_crash_bystander. Scenario a (rank 0 alone all_reduces the loss at
# the last step) where rank 2's metrics-upload thread raised after step 0 and
# its main thread went on training: the thread's exception is not why the
# job hangs (ranks 1 and 2 both never call the extra all_reduce).
def sc_thread_crash_bystander(ctx):
    import threading

    def upload():
        time.sleep(0.3)
        raise ConnectionError("metrics endpoint refused the connection")

    if ctx.rank == 2:
        threading.Thread(target=upload, name="metrics-upload", daemon=True).start()
    sc_a(ctx)


# raise3. rank 3 of 4 raises a Python exception after step 1 (before step
# 2's all_reduce, seq 3): the harness's handler dumps its FR (every op
# completed, seq 1-2) and the process exits; ranks 0-2 wait in seq 3.
class _EvalError(ValueError):
    pass


def sc_raise3(ctx):
    tr = Trainer(ctx)
    for i in range(4):
        if i == 2 and ctx.rank == 3:
            ctx.log("rank 3: raising in the middle of training")
            raise _EvalError("bad batch on rank 3 (loss is nan)")
        tr.step(i)
    sleep_forever(ctx, "training loop done")


# raise3_caught: raise3 where rank 3's loop catches the exception, prints its
# traceback and waits (a cleanup that never ends) instead of exiting: its
# peers' sockets stay open, so all four are still there at the stack deadline.
def sc_raise3_caught(ctx):
    import traceback
    try:
        sc_raise3(ctx)
    except _EvalError:
        traceback.print_exc()
        sys.stderr.flush()
        sleep_forever(ctx, "rank 3: exception caught; waiting in cleanup")


SCENARIOS = {s.name: s for s in [
    Scenario("a", 3, sc_a, deadline=7.0, doc="rank 0 only: all_reduce(loss) at the last step"),
    Scenario("b", 3, sc_b, deadline=7.0, doc="rank 2 has 3 batches, ranks 0,1 have 4; then barrier"),
    Scenario("c", 3, sc_c, deadline=7.0, doc="all_reduce on ranks 0,1 vs broadcast on rank 2"),
    Scenario("c_detail", 3, sc_c, deadline=7.0, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
             doc="scenario c with TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    Scenario("d", 4, sc_d, deadline=7.0, doc="all_reduce numel 16 on ranks 0-2 vs 24 on rank 3"),
    Scenario("e", 4, sc_e, deadline=7.0, doc="all_reduce float32 on ranks 0-2 vs float64 on rank 3"),
    Scenario("f1", 4, sc_f1, deadline=7.0, doc="rank 1 calls sys.exit(0) before step 2"),
    Scenario("f2", 4, sc_f2, deadline=7.0, doc="rank 1 SIGKILLs itself before step 2"),
    Scenario("g", 2, sc_g, deadline=7.0, doc="both ranks send 16 MiB first, then recv"),
    Scenario("h", 2, sc_h, deadline=7.0, doc="pg_a/pg_b all_reduce in opposite orders on ranks 0 and 1"),
    Scenario("h3", 3, sc_h3, deadline=7.0,
             doc="pg_a/pg_b all_reduce: ranks 0,1 in one order, rank 2 in the other"),
    Scenario("h3_first", 3, sc_h3_first, deadline=7.0,
             doc="two sub-groups (no desc) first used in opposite orders: ranks 0,1 a then b, rank 2 b then a"),
    Scenario("i", 3, sc_i, deadline=7.0, doc="rank 2 creates new_group dp before tp, ranks 0,1 tp before dp"),
    Scenario("j1", 3, sc_j1, deadline=3.0, doc="healthy: 3 steps + barrier"),
    Scenario("k", 4, sc_k, deadline=5.0,
             doc="no hang, latent: async all_reduces on pg_a/pg_b issued in opposite orders by ranks 0,1 and 2,3"),
    # b and c again, with a timeout long enough that every rank is still
    # blocked at the deadline: Python stacks of all threads (faulthandler)
    # beside the dumps, to check that stacks alone give the same verdict.
    Scenario("b_stacks", 3, sc_b, timeout=60.0, deadline=6.0, stacks=True,
             doc="scenario b, dumps and faulthandler stacks taken while blocked"),
    Scenario("c_stacks", 3, sc_c, timeout=60.0, deadline=6.0, stacks=True,
             doc="scenario c, dumps and faulthandler stacks taken while blocked"),
    # The same with real py-spy dumps (py-spy run on each blocked rank).
    Scenario("b_pyspy", 3, sc_b, timeout=60.0, deadline=6.0, pyspy=True,
             doc="scenario b, dumps and py-spy dumps (text, JSON) taken while blocked"),
    Scenario("c_pyspy", 3, sc_c, timeout=60.0, deadline=6.0, pyspy=True,
             doc="scenario c, dumps and py-spy dumps (text, JSON) taken while blocked"),
    # DDP with uneven inputs, and b, with helper threads beside the main thread:
    # stacks taken while blocked (faulthandler and py-spy).
    Scenario("ddp_uneven", 4, sc_ddp_uneven, timeout=60.0, deadline=20.0, stacks=True, pyspy=True,
             doc="DDP: rank 3 has 3 batches, ranks 0-2 have 4 (in loss.backward()); then barrier; helper threads"),
    Scenario("b_threads", 3, sc_b_threads, timeout=60.0, deadline=6.0, stacks=True, pyspy=True,
             doc="scenario b with a heartbeat and a control-channel helper thread on every rank"),
    Scenario("bcast_unpickle", 3, sc_bcast_unpickle, deadline=7.0,
             doc="broadcast_object_list from rank 0 whose unpickling raises on ranks 1,2"),
    Scenario("bcast_unpickle_empty", 3, sc_bcast_unpickle, deadline=7.0, rank_env={0: {"TORCH_FR_BUFFER_SIZE": "0"}},
             doc="bcast_unpickle with the Flight Recorder off on rank 0 (TORCH_FR_BUFFER_SIZE=0): its dump has no entries"),
    # a again, but every rank dumps at +2.5 s, before rank 0's 4 s gloo
    # timeout fires: rank 0's dump shows seq 4 pending, its stderr then the
    # timeout of that same all_reduce (it stays alive 6 s after its dump).
    Scenario("a_early", 3, sc_a, deadline=2.5,
             doc="scenario a, dumps at +2.5 s, before rank 0's 4 s timeout that its stderr then shows"),
    Scenario("j3", 3, sc_j3, timeout=30.0, rank_deadline={0: 2.0, 1: 2.0, 2: 8.0},
             doc="healthy; ranks 0,1 dump at +2 s while in the final barrier, rank 2 at +8 s after it"),
    Scenario("c_detail_sub", 4, sc_c_detail_sub, deadline=7.0, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
             doc="scenario c in new_group([1,2,3]) under DETAIL: rank 3 broadcasts, ranks 1,2 all_reduce"),
    # The tester's sub-group order inversion, with a timeout long enough that
    # every rank is still blocked at the deadline: dumps and faulthandler stacks.
    Scenario("h_sub", 3, sc_h_sub, timeout=60.0, deadline=6.0, stacks=True,
             doc="new_group([0,1]) gA, gB: rank 0 all_reduces on gA then gB, rank 1 on gB then gA; rank 2 in the barrier"),
    # The same program in a world of 2 (fault A): no rank outside the
    # sub-groups, so nothing in the dumps gives the world's size.
    Scenario("h_sub2", 2, sc_h_sub, timeout=60.0, deadline=6.0, stacks=True,
             doc="h_sub in a world of 2: rank 0 all_reduces on gA then gB, rank 1 on gB then gA"),
    Scenario("sub_sleep", 4, sc_sub_sleep, timeout=60.0, deadline=6.0, stacks=True,
             doc="pairs [0,1], [2,3]; after 3 steps rank 1 sleeps in user code; rank 0 waits in the pair's all_reduce, "
                 "ranks 2-3 in the world's; dumps and stacks at +6 s"),
    Scenario("tri_cycle", 3, sc_tri_cycle, timeout=60.0, deadline=6.0, stacks=True,
             doc="gA=[0,1], gB=[1,2], gC=[0,2]: rank 0 all_reduces on gA then gC, rank 1 gB then gA, "
                 "rank 2 gC then gB: a 3-rank cycle; dumps and stacks at +6 s"),
    Scenario("irecv2", 2, sc_irecv2, timeout=60.0, deadline=6.0, stacks=True,
             doc="both ranks irecv from the other and wait before sending; dumps and stacks at +6 s"),
    Scenario("bcast_src", 3, sc_bcast_src, timeout=8.0, deadline=14.0,
             doc="ranks 0-1 broadcast(src=0), rank 2 broadcast(src=1); 8 s timeout, dumps at +14 s"),
    Scenario("p2p_tag", 2, sc_p2p_tag, timeout=60.0, deadline=6.0, stacks=True,
             doc="rank 0 send(tag=1) to 1, rank 1 recv(tag=2) from 0"),
    Scenario("j2", 3, sc_j2, timeout=30.0, deadline=5.0,
             doc="rank 2 sleeps 1.2 s per step, 10 s in step 3; dump at +5 s, before the 30 s timeout"),
    Scenario("thread_crash", 3, sc_thread_crash, deadline=7.0, stacks=True,
             doc="rank 1's loader thread raises at batch 2; its main thread waits in queue.get(), alive"),
    Scenario("thread_crash_bystander", 3, sc_thread_crash_bystander, deadline=7.0,
             doc="scenario a, and rank 2's metrics thread raised early while its main thread went on"),
    Scenario("raise3", 4, sc_raise3, deadline=7.0,
             doc="rank 3 raises a Python exception before step 2 (seq 3); its handler dumps, it exits"),
    Scenario("raise3_stacks", 4, sc_raise3_caught, timeout=60.0, deadline=6.0, stacks=True,
             doc="raise3, rank 3 catches it and waits; 60 s timeout; faulthandler stacks and dumps at +6 s"),
]}
