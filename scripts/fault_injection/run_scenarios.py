#!/usr/bin/env python3
"""Run real multi-process PyTorch (gloo, loopback TCP) hang scenarios and
collect every live rank's Flight Recorder dump (pickle + JSON) and stderr.

Usage:
  python3 scripts/fault_injection/run_scenarios.py                  # all scenarios
  python3 scripts/fault_injection/run_scenarios.py --scenario c     # one (repeatable)
  python3 scripts/fault_injection/run_scenarios.py --out DIR        # default testdata/torch

Layout written per scenario (expected.json, hand-written, is left alone):
  <out>/<scenario>/pickle/fr_trace_rank_<r>
  <out>/<scenario>/json/fr_trace_rank_<r>.json
  <out>/<scenario>/stderr/rank_<r>.log
  <out>/<scenario>/stacks/faulthandler_rank_<r>.txt   (scenarios with stacks=True)
  <out>/<scenario>/pyspy/pyspy_rank_<r>.{txt,json}    (scenarios with pyspy=True; needs py-spy and ptrace)
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import neutral_paths  # noqa: E402


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one(sc, out_root, fr_buffer):
    out = os.path.join(out_root, sc.name)
    for sub in ("pickle", "json", "stderr", "stacks", "pyspy"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(os.path.join(out, "stderr"), exist_ok=True)
    port = free_port()
    env = dict(os.environ)
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    env.update({
        "TORCH_FR_BUFFER_SIZE": str(fr_buffer),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "GLOO_SOCKET_IFNAME": env.get("GLOO_SOCKET_IFNAME", "lo"),
    })
    env.update(sc.env)
    procs, logs = [], []
    t_start = time.time()
    for r in range(sc.world):
        lf = open(os.path.join(out, "stderr", "rank_%d.log" % r), "wb")
        logs.append(lf)
        cmd = [sys.executable, os.path.join(HERE, "worker.py"), "--scenario", sc.name,
               "--rank", str(r), "--world", str(sc.world), "--port", str(port), "--out", out,
               "--timeout", str(sc.timeout), "--deadline", str(sc.deadline_of(r))] + (["--stacks"] if sc.stacks else []) + (["--pyspy"] if sc.pyspy else [])
        procs.append(subprocess.Popen(cmd, env=dict(env, **sc.rank_env.get(r, {})), stdout=lf, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL))
    # startup (import torch on a busy 2-core box) + deadline + slack
    limit = 40 + max(sc.deadline_of(r) for r in range(sc.world)) + sc.timeout
    rcs = [None] * sc.world
    while time.time() - t_start < limit and any(rc is None for rc in rcs):
        time.sleep(0.2)
        rcs = [p.poll() for p in procs]
    for r, p in enumerate(procs):
        if p.poll() is None:
            print("  rank %d still running after %.0fs: killing it" % (r, limit), file=sys.stderr)
            p.kill()
            p.wait()
        rcs[r] = p.returncode
    for lf in logs:
        lf.close()
    # Committed artifacts carry no path of this machine (same-length prefixes).
    neutral_paths.main([out])
    dumped = sorted(int(f.rsplit("_", 1)[1]) for f in os.listdir(os.path.join(out, "pickle"))) \
        if os.path.isdir(os.path.join(out, "pickle")) else []
    print("%-9s world=%d %5.1fs exit codes %s dumps from ranks %s"
          % (sc.name, sc.world, time.time() - t_start, rcs, dumped))
    return rcs, dumped


def main():
    import scenarios
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", choices=sorted(scenarios.SCENARIOS),
                    help="run only this scenario (repeatable)")
    ap.add_argument("--out", default=os.path.join(REPO, "testdata", "torch"))
    ap.add_argument("--fr-buffer", type=int, default=200, help="TORCH_FR_BUFFER_SIZE (default 200)")
    ap.add_argument("--deadline", type=float,
                    help="override every scenario's dump deadline (seconds after init); e.g. 2.5 takes "
                         "all dumps while ranks are still blocked, before gloo's timeout fires")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for s in scenarios.SCENARIOS.values():
            print("%-9s world=%d  %s" % (s.name, s.world, s.doc))
        return
    names = a.scenario or list(scenarios.SCENARIOS)
    for n in names:
        if a.deadline is not None:
            scenarios.SCENARIOS[n].deadline = a.deadline
            scenarios.SCENARIOS[n].rank_deadline = {}
        run_one(scenarios.SCENARIOS[n], a.out, a.fr_buffer)


if __name__ == "__main__":
    main()
