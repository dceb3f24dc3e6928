"""`hangdx watch` on real PyTorch: 4-rank gloo jobs on loopback, with
torch.distributed.debug.start_debug_server() (and, separately, the push
hook hangdx.torch.watch), driven into the hangs of the fault-injection
suite, plus a healthy and a slow run. Each test asserts the finding's kind
and culprit and the time from the hang's start to the finding; skipped
when torch is not installed. About 15 s each on 2 cores."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import free_port, wait_listening

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.debug")

WORLD = 4
INTERVAL, STALL_AFTER = 0.5, 5.0
SLACK = 6.0  # a loaded 2-core machine: starting the fetches, the analysis
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_job.py")


def start_job(procs, tmp_path, scenario, push=None, token=None):
    port = free_port()
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD),
               TORCH_FR_BUFFER_SIZE="200", OMP_NUM_THREADS="1")
    args = [sys.executable, JOB, "--scenario", scenario, "--marks", str(marks), "--frontend-port", str(free_port())]
    if push:
        args += ["--push", push, "--token", token]
    logs = []
    for r in range(WORLD):
        log = open(tmp_path / ("rank_%d.log" % r), "w")
        logs.append(log)
        procs.start(args, env=dict(env, RANK=str(r)), stdout=log, stderr=subprocess.STDOUT)
    return port, marks


def watch(hangdx_bin, procs, tmp_path, *source, duration=90):
    args = [hangdx_bin, "watch", *source, "--interval", str(INTERVAL), "--stall-after", str(STALL_AFTER),
            "--fetch-timeout", "3", "--exit-on-finding", "--format", "json", "--duration", str(duration),
            "--out", str(tmp_path / "out")]
    return procs.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(w, marks, tmp_path, timeout=120):
    out, err = w.communicate(timeout=timeout)
    ended = time.time()
    logs = "".join(open(tmp_path / ("rank_%d.log" % r)).read()[-600:] for r in range(WORLD))
    return out, err + "\n--- rank logs ---\n" + logs, ended


def check_hang(hangdx_bin, procs, tmp_path, scenario, kind, culprits, push=False):
    if push:
        port = free_port()
        (tmp_path / "token").write_text("tok")
        w = watch(hangdx_bin, procs, tmp_path, "--listen", "127.0.0.1:%d" % port, "--token-file",
                  str(tmp_path / "token"), "--world-size", str(WORLD))
        wait_listening(port)
        _, marks = start_job(procs, tmp_path, scenario, push="http://127.0.0.1:%d" % port, token="tok")
    else:
        store_port, marks = start_job(procs, tmp_path, scenario)
        w = watch(hangdx_bin, procs, tmp_path, "--store", "127.0.0.1:%d" % store_port, "--world-size", str(WORLD))
    out, err, ended = finish(w, marks, tmp_path)
    assert w.returncode == 1, err
    doc = json.loads(out)
    f = doc["findings"][0]
    assert f["kind"] == kind, err
    assert f["culprit_ranks"] == culprits, err
    started = float(open(marks / "hang_start").read())
    took = ended - started
    assert took < STALL_AFTER + 2 * INTERVAL + SLACK, "finding %.1f s after the hang\n%s" % (took, err)
    # The evidence bundle gives the same finding offline.
    bundle = [l for l in err.splitlines() if "FINDING" in l][0].split("evidence: ")[1].split(";")[0]
    replay = subprocess.run([hangdx_bin, "analyze", bundle, "--world-size", str(WORLD),
                             "--format", "json"], capture_output=True, text=True)
    again = json.loads(replay.stdout)
    assert again == json.load(open(os.path.join(bundle, ".watch", "report.json")))
    if push:
        # Reported from the first look (the Flight Recorder the ranks pushed),
        # before their stacks came: the whole bundle, stacks included, may add
        # details, never another finding.
        assert [again["findings"][0][k] for k in ("kind", "culprit_ranks", "pg", "seq")] == \
            [f[k] for k in ("kind", "culprit_ranks", "pg", "seq")], err
        assert "the same finding (" in err, err
    else:
        assert again["findings"][0] == f
    print("%s: %s %s, %.1f s after the hang" % (scenario, kind, culprits, took))
    return doc, bundle


def test_rank_that_never_arrives(hangdx_bin, procs, tmp_path):
    check_hang(hangdx_bin, procs, tmp_path, "never_arrives", "missing_rank", [3])


def test_rank_sleeping_in_user_code(hangdx_bin, procs, tmp_path):
    doc, bundle = check_hang(hangdx_bin, procs, tmp_path, "user_sleep", "missing_rank", [1])
    stacks = open(os.path.join(bundle, "stacks", "rank_1.txt")).read()
    assert "time.sleep" in stacks or "main" in stacks  # dump_traceback of the sleeping rank


def test_collective_mismatch(hangdx_bin, procs, tmp_path):
    check_hang(hangdx_bin, procs, tmp_path, "mismatch", "collective_mismatch", [2])


def test_rank_killed_with_sigkill(hangdx_bin, procs, tmp_path):
    doc, bundle = check_hang(hangdx_bin, procs, tmp_path, "sigkill", "crashed_rank", [1])
    stall = json.load(open(os.path.join(bundle, ".watch", "stall.json")))
    assert "1" in stall["unanswered"]


def test_two_pgs_in_opposite_orders(hangdx_bin, procs, tmp_path):
    doc, _ = check_hang(hangdx_bin, procs, tmp_path, "two_pgs", "order_inversion", [0, 2])
    assert doc["findings"][0]["blocked_behind"] == [1, 3]


def test_push_hook_names_the_sleeping_rank(hangdx_bin, procs, tmp_path):
    check_hang(hangdx_bin, procs, tmp_path, "user_sleep", "missing_rank", [1], push=True)


@pytest.mark.parametrize("scenario", ["healthy", "slow"])
def test_healthy_and_slow_runs_give_no_finding(hangdx_bin, procs, tmp_path, scenario):
    store_port, marks = start_job(procs, tmp_path, scenario)
    w = watch(hangdx_bin, procs, tmp_path, "--store", "127.0.0.1:%d" % store_port, "--world-size", str(WORLD),
              duration=120)
    out, err, _ = finish(w, marks, tmp_path, timeout=150)
    assert w.returncode == 0, err
    assert out == "", err
    assert "the job has ended" in err, err
    assert len([m for m in os.listdir(marks) if m.startswith("done_")]) == WORLD, err
