#!/usr/bin/env python3
"""One rank of a fault-injection scenario (started by run_scenarios.py).

The rank initialises a gloo process group over loopback TCP, runs the scenario
body from scenarios.py, and dumps the generic Flight Recorder
(torch._C._distributed_c10d._dump_fr_trace / _dump_fr_trace_json) exactly once:

* when a collective raises (gloo timeout, connection closed, mismatch error),
  from the exception handler, then the process exits with code 1;
* otherwise from a background "watchdog" thread at a fixed deadline measured
  from the end of init_process_group (this imitates PyTorch's coordinated
  dump-on-timeout signal, which makes every live rank dump, including ranks
  that are sleeping or already finished).  After that dump the process exits
  with code 0 (os._exit), whatever the main thread is doing.

A rank that dies (sys.exit / SIGKILL) writes nothing.  The bytes returned by
PyTorch are written unchanged.
"""
import argparse
import faulthandler
import datetime
import os
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios  # noqa: E402

_lock = threading.Lock()
_dumped = False
_raised = False  # a collective raised: the rank is in its exception handler, not blocked
EXIT_GRACE_S = 6.0  # > the time every rank needs for its two dumps (1-2 s each)


def log(msg):
    sys.stderr.write("[hangdx-fi rank %s %.3f] %s\n" % (os.environ.get("RANK", "?"), time.time(), msg))
    sys.stderr.flush()


def dump(out, rank, reason):
    """Write this rank's FR dump (pickle + JSON) once; later calls are no-ops."""
    global _dumped
    with _lock:
        if _dumped:
            return False
        _dumped = True
        pkl = torch._C._distributed_c10d._dump_fr_trace()
        js = torch._C._distributed_c10d._dump_fr_trace_json()
        os.makedirs(os.path.join(out, "pickle"), exist_ok=True)
        os.makedirs(os.path.join(out, "json"), exist_ok=True)
        with open(os.path.join(out, "pickle", "fr_trace_rank_%d" % rank), "wb") as f:
            f.write(pkl)
        if isinstance(js, str):
            js = js.encode()
        with open(os.path.join(out, "json", "fr_trace_rank_%d.json" % rank), "wb") as f:
            f.write(js)
        log("dumped flight recorder (%s): pickle %d bytes, json %d bytes" % (reason, len(pkl), len(js)))
        return True


def pyspy_dump(out, rank):
    """`py-spy dump --pid <this process>` (text, then --json) into
    <out>/pyspy/: a real py-spy run on the blocked rank, needs ptrace (root
    or CAP_SYS_PTRACE).  py-spy's stdout is written unchanged; a refusal
    (its stderr) goes to this rank's log."""
    import shutil
    import subprocess
    exe = shutil.which("py-spy")
    if not exe:
        log("py-spy not installed: no py-spy dump")
        return
    os.makedirs(os.path.join(out, "pyspy"), exist_ok=True)
    for ext, extra in (("txt", []), ("json", ["--json"])):
        p = subprocess.run([exe, "dump", "--pid", str(os.getpid())] + extra, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if p.returncode != 0:
            log("py-spy dump failed (rc %d): %s" % (p.returncode, p.stderr.decode(errors="replace").strip()))
            return
        with open(os.path.join(out, "pyspy", "pyspy_rank_%d.%s" % (rank, ext)), "wb") as f:
            f.write(p.stdout)
    log("wrote py-spy dumps (text and JSON)")


def main():
    global _raised
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("--deadline", type=float, required=True,
                    help="seconds after init at which every live rank dumps")
    ap.add_argument("--stacks", action="store_true",
                    help="also write faulthandler stacks of all threads at the deadline")
    ap.add_argument("--pyspy", action="store_true",
                    help="also write `py-spy dump` (text and --json) of this process at the deadline")
    a = ap.parse_args()
    os.environ["RANK"] = str(a.rank)
    sc = scenarios.SCENARIOS[a.scenario]

    torch.manual_seed(1234)
    dist.init_process_group(
        "gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=a.rank,
        world_size=a.world, timeout=datetime.timedelta(seconds=a.timeout))
    t0 = time.time()
    log("init_process_group done (world %d, timeout %.1fs, dump deadline +%.1fs)"
        % (a.world, a.timeout, a.deadline))

    def watchdog():
        time.sleep(max(0.0, t0 + a.deadline - time.time()))
        # A rank whose collective raised is writing its dump from the handler
        # (slow: it imports torch._dynamo): its stacks would show that dump,
        # not where it waited.
        if a.stacks and not _raised:
            # Every thread's Python stack, as py-spy would show it, taken while
            # the rank is still blocked (faulthandler: no ptrace needed).
            os.makedirs(os.path.join(a.out, "stacks"), exist_ok=True)
            with open(os.path.join(a.out, "stacks", "faulthandler_rank_%d.txt" % a.rank), "w") as f:
                faulthandler.dump_traceback(file=f, all_threads=True)
        if a.pyspy and not _raised:
            pyspy_dump(a.out, a.rank)
        if dump(a.out, a.rank, "deadline reached: rank alive and not in a failed collective"):
            sys.stderr.flush()
            # Stay alive while the other ranks dump: an exit here would close
            # this rank's connections and fail their pending collectives
            # between their pickle and their JSON dump.
            time.sleep(EXIT_GRACE_S)
            os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()

    ctx = scenarios.Ctx(rank=a.rank, world=a.world, timeout=a.timeout, log=log)
    try:
        sc.body(ctx)
    except Exception as e:  # gloo raises RuntimeError / DistBackendError
        _raised = True
        if _dumped:
            # The deadline dump is taken and the run is over: the first rank
            # to exit after its grace fails the others' pending collectives.
            # That teardown is the harness's, not the scenario's fault: say so
            # without gloo's error, which would read as a lost peer.
            log("run over (dumped at the deadline); a collective ended by the teardown; exiting")
            sys.stderr.flush()
            os._exit(0)
        log("collective raised %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        traceback.print_exc()
        dump(a.out, a.rank, "collective raised")
        sys.stderr.flush()
        os._exit(1)
    log("scenario body finished; waiting for the dump deadline")
    while True:  # the watchdog thread dumps and exits the process
        time.sleep(1)


if __name__ == "__main__":
    main()
