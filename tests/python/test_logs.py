"""Text artifacts of several ranks read together: what one rank's file says
about another (pg-local ranks mapped to global ones through the files that
name both).  The hangdx binary comes from $HANGDX_BIN, else PATH."""
import json
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOG101 = os.path.join(REPO, "testdata", "cases", "vllm-ascend3413-hccl-notify-wait-remote-rank", "rank101_plog.txt")


def hangdx_bin():
    b = os.environ.get("HANGDX_BIN") or shutil.which("hangdx")
    if not b or not os.path.exists(b):
        pytest.skip("hangdx binary not found (set HANGDX_BIN or put hangdx on PATH)")
    return b


def analyze(*paths):
    p = subprocess.run([hangdx_bin(), "analyze", *paths, "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.returncode in (0, 1), p.stderr.decode()[-2000:]
    return json.loads(p.stdout)


def plog_of(rank, group_rank, waits_for):
    """vllm-ascend#3413's plog as another NPU of the same group would print
    it: global RankID `rank`, rank `group_rank` in group_name_1654, stuck in
    the same AllReduce waiting for group rank `waits_for`."""
    with open(PLOG101) as f:
        text = f.read()
    for old, new in [("RankID:101", "RankID:%d" % rank), ("rankId[25 24]", "rankId[%d %d]" % (group_rank, waits_for)),
                     ("remote rank: [24]", "remote rank: [%d]" % waits_for),
                     ("remote rank:[24]", "remote rank:[%d]" % waits_for)]:
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_hccl_group_rank_alone_stays_pg_local():
    f0 = analyze(PLOG101)["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"], f0.get("culprit_ranks_are_pg_local")) == ("missing_rank", [24], True)


def test_hccl_group_rank_becomes_global_when_its_plog_is_there(tmp_path):
    # Global rank 7 is group rank 24, the rank 101 waits for; rank 7 itself
    # waits for group rank 3, whose plog is missing. So 101 is blocked behind
    # 7, and the open end of the chain is group rank 3 (still pg-local).
    shutil.copy(PLOG101, tmp_path / "rank101_plog.txt")
    (tmp_path / "rank7_plog.txt").write_text(plog_of(7, 24, 3))
    out = analyze(str(tmp_path))
    f0 = out["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"], f0.get("culprit_ranks_are_pg_local")) == ("missing_rank", [3], True)
    assert f0["pg"]["name"] == "group_name_1654"
    roles = {r["role"]: r["ranks"] for r in f0["roles"]}
    assert roles["waiting (global ranks)"] == [7]
    # Nobody is reported waiting for "rank 24 of the pg" any more.
    for f in out["findings"]:
        assert not (f.get("culprit_ranks_are_pg_local") and f["culprit_ranks"] == [24]), f["summary"]
    notes = [d["message"] for d in out["diagnostics"]]
    assert any("rank 24 of pg group_name_1654 is global rank 7" in m for m in notes), notes


def test_hccl_waits_mapped_both_ways_form_a_cycle(tmp_path):
    # Rank 7 (group rank 24) waits for group rank 25 = global 101, which waits for it.
    shutil.copy(PLOG101, tmp_path / "rank101_plog.txt")
    (tmp_path / "rank7_plog.txt").write_text(plog_of(7, 24, 25))
    f0 = analyze(str(tmp_path))["findings"][0]
    assert f0["kind"] == "wait_cycle", f0["summary"]
    assert f0["culprit_ranks"] == [7, 101]
    assert not f0.get("culprit_ranks_are_pg_local")


def console(name):
    return os.path.join(REPO, "testdata", "torch", name, "combined.log")


def test_gloo_init_store_wait_names_the_rank_that_never_came():
    # rank 2 slept past init_process_group's 5 s timeout; torchrun calls rank
    # 0 (the first waiter to give up) the root cause.
    f0 = analyze(console("store_wait_init"))["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"], f0["pg"]["name"]) == ("missing_rank", [2], "0"), f0


def rank_files(name):
    d = os.path.join(REPO, "testdata", "torch", name)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("rank") and f.endswith(".log"))


@pytest.mark.parametrize("name, missing", [("store_host_waits", [2]), ("store_host_waits_w4", [2, 3])])
def test_store_host_waiting_for_clients_is_not_the_culprit(name, missing):
    # No torchrun: rank 0 hosts the TCPStore ("N/M clients joined"), rank 1
    # waits for rank 0's address (key .../0), the late ranks print nothing.
    # The culprits are the late ranks, read from the console or the per-rank
    # files alike; rank 0 is a waiter.
    for paths in ([console(name)], rank_files(name)):
        f0 = analyze(*paths)["findings"][0]
        assert (f0["kind"], f0["culprit_ranks"]) == ("missing_rank", missing), (paths, f0)


def test_gloo_new_group_store_wait_names_the_pg_rank():
    f0 = analyze(console("store_wait_new_group"))["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"], f0.get("culprit_ranks_are_pg_local")) == ("missing_rank", [1], True), f0


def test_detail_length_decoded_fingerprint_is_not_read_as_the_peers_op():
    # ranks 0-1 all_reduce [8], rank 2 [8, 2]: each line's other fingerprint
    # is a length decoded as one (SCATTER / GATHER); only the own ones count.
    f0 = analyze(console("detail_shape_rank"))["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"], f0["seq"]) == ("size_mismatch", [2], 3), f0


def test_torchrun_log_dir_layout_gives_the_local_ranks():
    # logs/<run>/attempt_0/<local_rank>/stderr.log: rank 1's log holds no
    # error and no rank prefix; its folder says it is rank 1.
    f0 = analyze(os.path.join(REPO, "testdata", "torch", "torchrun_log_dir", "logs"))["findings"][0]
    assert (f0["kind"], f0["culprit_ranks"]) == ("crashed_rank", [1]), f0
