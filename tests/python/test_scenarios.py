"""Real PyTorch (gloo) Flight Recorder dumps in testdata/torch/ vs hangdx.

For every testdata/torch/<scenario>/expected.json, run
  hangdx analyze <scenario>/pickle --format json
  hangdx analyze <scenario>/json   --format json
and compare findings[0] with the hand-written verdict.  The hangdx binary is
taken from $HANGDX_BIN, else from PATH; the tests are skipped without it.

An expected.json may carry "fr_evidence": false when the Flight Recorder dumps
alone cannot show the fault (gloo does not record P2P ops; the DETAIL wrapper
raises before the mismatched op is recorded); those cases are xfail (non-strict)
from the dumps alone because the evidence is only in the stderr logs. Where it
is ("log_evidence": true), test_verdict_from_logs_where_dumps_cannot_show_it
checks the verdict from the logs, alone and next to the dumps.
"""
import glob
import json
import os
import pickletools
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(REPO, "testdata", "torch")
ALL_EXPECTED = sorted(os.path.basename(os.path.dirname(p))
                      for p in glob.glob(os.path.join(TESTDATA, "*", "expected.json")))


def _has_inputs(name):
    with open(os.path.join(TESTDATA, name, "expected.json")) as f:
        return "inputs" in json.load(f)


# Flight Recorder scenarios (pickle/ and json/ dumps beside stderr); the
# consoles and logs of launcher exits name their inputs instead ("inputs").
SCENARIOS = [n for n in ALL_EXPECTED if not _has_inputs(n)]
CONSOLE_SCENARIOS = [n for n in ALL_EXPECTED if _has_inputs(n)]
PICKLES = sorted(glob.glob(os.path.join(TESTDATA, "*", "pickle", "fr_trace_rank_*")))

ALLOWED_OPCODES = {
    "PROTO", "EMPTY_DICT", "MARK", "SETITEMS", "EMPTY_LIST", "APPENDS", "EMPTY_TUPLE",
    "TUPLE1", "TUPLE2", "TUPLE3", "TUPLE", "BINUNICODE", "BINPUT", "LONG_BINPUT",
    "BINGET", "LONG_BINGET", "BININT1", "BININT2", "BININT", "LONG1", "BINFLOAT",
    "NEWTRUE", "NEWFALSE", "NONE", "STOP",
}


def hangdx_bin():
    b = os.environ.get("HANGDX_BIN") or shutil.which("hangdx")
    if not b or not os.path.exists(b):
        pytest.skip("hangdx binary not found (set HANGDX_BIN or put hangdx on PATH)")
    return b


def load_expected(name):
    with open(os.path.join(TESTDATA, name, "expected.json")) as f:
        return json.load(f)


def test_testdata_present():
    assert SCENARIOS, "no testdata/torch/*/expected.json found"
    for name in SCENARIOS:
        exp = load_expected(name)
        assert exp["kind"] in {"collective_mismatch", "size_mismatch", "missing_rank", "crashed_rank",
                               "straggler", "p2p_cycle", "p2p_mismatch", "order_inversion", "none"}, name
        assert exp["culprit_ranks"] == sorted(exp["culprit_ranks"]), name
        assert os.listdir(os.path.join(TESTDATA, name, "pickle")), name
        assert len(os.listdir(os.path.join(TESTDATA, name, "pickle"))) == \
            len(os.listdir(os.path.join(TESTDATA, name, "json"))), name


@pytest.mark.parametrize("fmt", ["pickle", "json"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_hangdx_verdict(name, fmt):
    exe = hangdx_bin()
    exp = load_expected(name)
    if exp.get("fr_evidence") is False:
        pytest.xfail("Flight Recorder dumps alone cannot show this fault: " + exp["why"][:200])
    d = os.path.join(TESTDATA, name, fmt)
    p = subprocess.run([exe, "analyze", d, "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.returncode in (0, 1), "hangdx failed (rc=%d): %s" % (p.returncode, p.stderr.decode()[-2000:])
    out = json.loads(p.stdout.decode())
    findings = out.get("findings") or []
    if exp["kind"] == "none":
        assert p.returncode == 0, out
        assert not [f for f in findings if f.get("severity") == "error"], findings
        return
    assert findings, "no finding; expected %s %s" % (exp["kind"], exp["culprit_ranks"])
    f0 = findings[0]
    assert f0["kind"] == exp["kind"], (f0, exp["why"])
    assert sorted(f0.get("culprit_ranks") or []) == exp["culprit_ranks"], (f0, exp["why"])
    if exp.get("seq") is not None and f0.get("seq") is not None:
        assert f0["seq"] == exp["seq"], (f0, exp["why"])
        assert f0["pg"]["name"] == exp["pg"], (f0, exp["why"])
    if exp["hang"]:
        assert p.returncode == 1, out
    else:  # a straggler, a latent deadlock: warnings, not a hang
        assert p.returncode == 0, out
        assert f0["severity"] == "warning", f0


def first_finding(*paths, unusable_ok=False):
    """(returncode, findings[0] or None) of `hangdx analyze PATHS --format json`;
    with unusable_ok, exit code 2 (no usable input) is an answer too."""
    p = subprocess.run([hangdx_bin(), "analyze", *paths, "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.returncode in ((0, 1, 2) if unusable_ok else (0, 1)), \
        "hangdx failed (rc=%d): %s" % (p.returncode, p.stderr.decode()[-2000:])
    findings = json.loads(p.stdout).get("findings") or []
    return p.returncode, (findings[0] if findings else None)


LOG_SCENARIOS = [n for n in SCENARIOS if load_expected(n).get("log_evidence")]


@pytest.mark.parametrize("parts", [("stderr",), ("pickle", "stderr"), ("json", "stderr")],
                         ids=["stderr", "pickle+stderr", "json+stderr"])
@pytest.mark.parametrize("name", LOG_SCENARIOS)
def test_verdict_from_logs_where_dumps_cannot_show_it(name, parts):
    """The DETAIL wrapper raises before the mismatched op reaches the Flight
    Recorder (c_detail): its 'Detected mismatch between collectives' lines
    name both fingerprints, and the verdict comes from them, alone or with
    the dumps next to them."""
    exp = load_expected(name)
    rc, f0 = first_finding(*[os.path.join(TESTDATA, name, part) for part in parts])
    assert f0, "no finding; expected %s" % exp["kind"]
    assert (f0["kind"], f0["culprit_ranks"]) == (exp["kind"], exp["culprit_ranks"]), (f0["summary"], exp["why"])
    assert (f0["pg"]["name"], f0["seq"]) == (exp["pg"], exp["seq"]), f0["summary"]
    assert f0["hang"] == exp["hang"], f0["summary"]
    assert rc == 1, "a mismatch error is something wrong found"


def test_some_scenarios_have_log_evidence():
    assert {"c_detail", "c_detail_sub"} <= set(LOG_SCENARIOS)


COMBINED_SCENARIOS = [n for n in SCENARIOS if load_expected(n).get("combined_evidence")]


def right(f0, exp):
    """How much of the hand-written verdict finding f0 gets: 2 the kind and
    culprits, 1 the culprits only (as candidates or culprits), 0 neither."""
    if f0 is None:
        return 0
    if (f0["kind"], f0["culprit_ranks"]) == (exp["kind"], exp["culprit_ranks"]):
        return 2
    named = set(f0.get("culprit_ranks") or []) | set(f0.get("candidates") or [])
    return 1 if named == set(exp["culprit_ranks"]) else 0


@pytest.mark.parametrize("fr", ["pickle", "json"])
@pytest.mark.parametrize("name", COMBINED_SCENARIOS)
def test_dumps_and_logs_together_are_at_least_as_right_as_either(name, fr):
    """A rank's dump taken a moment before its collective failed, and its
    stderr with that failure (a_early): together they must give the verdict,
    and never a worse one than either alone (the tester's case: pickle alone
    'not a hang yet' naming ranks 1,2, both together an undecided timeout
    naming nobody)."""
    exp = load_expected(name)
    _, both = first_finding(os.path.join(TESTDATA, name, fr), os.path.join(TESTDATA, name, "stderr"))
    assert both, "no finding; expected %s %s" % (exp["kind"], exp["culprit_ranks"])
    assert (both["kind"], both["culprit_ranks"]) == (exp["kind"], exp["culprit_ranks"]), (both["summary"], exp["why"])
    assert (both["pg"]["name"], both["seq"], both["hang"]) == (exp["pg"], exp["seq"], exp["hang"]), both["summary"]
    for part in (fr, "stderr"):
        _, alone = first_finding(os.path.join(TESTDATA, name, part), unusable_ok=True)
        assert right(both, exp) >= right(alone, exp), (part, alone and alone["summary"])


def test_some_scenarios_combine_dumps_and_logs():
    assert "a_early" in COMBINED_SCENARIOS


# "stacks_verdict": false: the stacks are of the blocked rank only (the
# others' collectives raised before the deadline: thread_crash), too few to
# give a verdict alone.
STACK_SCENARIOS = [n for n in SCENARIOS if os.path.isdir(os.path.join(TESTDATA, n, "stacks"))
                   and load_expected(n).get("stacks_verdict", True)]


@pytest.mark.parametrize("name", STACK_SCENARIOS)
def test_verdict_from_stacks_alone_matches_dumps(name):
    """Real Python stacks (faulthandler, all threads) of ranks blocked in a
    real gloo hang: the stacks alone give the dumps' kind and culprits."""
    exe = hangdx_bin()
    exp = load_expected(name)
    verdicts = {}
    for part in ("pickle", "stacks"):
        p = subprocess.run([exe, "analyze", os.path.join(TESTDATA, name, part), "--format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        findings = json.loads(p.stdout)["findings"]
        # p2p_tag's dumps: no finding (gloo records no P2P op, fr_evidence false)
        verdicts[part] = (findings[0]["kind"], findings[0]["culprit_ranks"], findings[0]["severity"]) \
            if findings else (None, None, None)
    if exp.get("stack_evidence") is False:
        # Stacks carry no pg (h_sub: an order inversion across sub-groups reads
        # as call sites that differ): a hang, blaming no rank outside the culprits.
        assert verdicts["pickle"][:2] == (exp["kind"], exp["culprit_ranks"]), verdicts
        assert verdicts["stacks"][2] == "error" and set(verdicts["stacks"][1]) <= set(exp["culprit_ranks"]), verdicts
        return
    if exp.get("fr_evidence") is False:
        # The dumps cannot show it (raise3_stacks: no timeout yet): the stacks alone must.
        assert verdicts["stacks"][:2] == (exp["kind"], exp["culprit_ranks"]), verdicts
        return
    assert verdicts["stacks"][:2] == verdicts["pickle"][:2] == (exp["kind"], exp["culprit_ranks"]), verdicts


def test_some_scenarios_have_stacks():
    assert len(STACK_SCENARIOS) >= 2
    assert "h_sub" in STACK_SCENARIOS


PYSPY_SCENARIOS = [n for n in SCENARIOS if os.path.isdir(os.path.join(TESTDATA, n, "pyspy"))]


@pytest.mark.parametrize("ext", ["txt", "json"], ids=["py-spy text", "py-spy --json"])
@pytest.mark.parametrize("name", PYSPY_SCENARIOS)
def test_verdict_from_pyspy_alone_matches_dumps(name, ext):
    """Real `py-spy dump` output (text, and --json) of ranks blocked in a real
    gloo hang: the py-spy dumps alone give the dumps' kind and culprits."""
    exp = load_expected(name)
    files = sorted(glob.glob(os.path.join(TESTDATA, name, "pyspy", "pyspy_rank_*." + ext)))
    assert len(files) == len(os.listdir(os.path.join(TESTDATA, name, "pickle")))
    _, from_pyspy = first_finding(*files)
    _, from_dumps = first_finding(os.path.join(TESTDATA, name, "pickle"))
    verdicts = {part: (f["kind"], f["culprit_ranks"]) for part, f in (("pyspy", from_pyspy), ("pickle", from_dumps))}
    assert verdicts["pyspy"] == verdicts["pickle"] == (exp["kind"], exp["culprit_ranks"]), verdicts


CRASHED_WAITERS = ["bcast_unpickle", "bcast_unpickle_empty"]


@pytest.mark.parametrize("fr", ["pickle", "json"])
@pytest.mark.parametrize("name", CRASHED_WAITERS)
def test_receivers_that_crashed_by_themselves_are_the_cause(name, fr):
    """broadcast_object_list whose receivers (ranks 1,2) fail to rebuild the
    object: with their stderr beside the dumps, their own crash is the cause,
    never the sender, also where the sender's dump records nothing
    (bcast_unpickle_empty: its Flight Recorder was off)."""
    exp = load_expected(name)
    rc, f0 = first_finding(os.path.join(TESTDATA, name, fr), os.path.join(TESTDATA, name, "stderr"))
    assert (f0["kind"], f0["culprit_ranks"]) == (exp["kind"], exp["culprit_ranks"]), f0["summary"]
    assert (f0["pg"]["name"], f0["seq"]) == (exp["pg"], exp["seq"]), f0["summary"]
    assert rc == 1


@pytest.mark.parametrize("fr", ["pickle", "json"])
def test_an_empty_dump_is_not_a_dead_rank(fr):
    """bcast_unpickle_empty's dumps alone: rank 0's records nothing, so
    nothing shows that it died or did not arrive: undecided, rank 0 only a
    candidate, no error."""
    _, f0 = first_finding(os.path.join(TESTDATA, "bcast_unpickle_empty", fr))
    assert (f0["kind"], f0["severity"], f0["culprit_ranks"]) == ("undecided", "warning", []), f0["summary"]
    assert f0["candidates"] == [0], f0
    assert "died" not in f0["summary"].replace("nothing shows that it died", ""), f0["summary"]


def test_some_scenarios_have_pyspy():
    assert {"b_pyspy", "c_pyspy"} <= set(PYSPY_SCENARIOS)


@pytest.mark.parametrize("name", CONSOLE_SCENARIOS)
def test_console_verdict(name):
    """Real torchrun consoles and per-rank logs of processes that exited,
    crashed or were stopped (testdata/torch/README.md, "Launcher exits"):
    hangdx analyze of the files expected.json names (with its args) gives
    the hand-written kind, culprits, candidates and the words the summary
    must hold."""
    exp = load_expected(name)
    paths = [os.path.join(TESTDATA, name, p) for p in exp["inputs"]]
    p = subprocess.run([hangdx_bin(), "analyze", *paths, *exp["args"], "--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == (1 if exp["hang"] else 0), p.stdout.decode()[-2000:]
    f0 = json.loads(p.stdout)["findings"][0]
    assert (f0["kind"], sorted(f0.get("culprit_ranks") or [])) == (exp["kind"], exp["culprit_ranks"]), \
        (f0["summary"], exp["why"])
    assert sorted(f0.get("candidates") or []) == exp["candidates"], f0["summary"]
    for words in exp["summary_has"]:
        assert words in f0["summary"], (words, f0["summary"])


def test_consoles_cover_the_launcher_cases():
    assert {"torchrun_os_exit", "torchrun_sigkill", "torchrun_all_segv", "torchrun_exit0", "all_segv",
            "lost_peer_partial"} <= set(CONSOLE_SCENARIOS)


# --- Same hang, different formats -------------------------------------------
# Each kind of artifact a scenario left, analysed alone. What each kind can
# show, and why (hand-written from how the scenarios were run, not from what
# hangdx prints):
#  * pickle / json (Flight Recorder): kind, culprits, pg and seq, unless
#    expected.json says "fr_evidence": false (gloo records no P2P op, g; the
#    DETAIL wrapper raises before the mismatched op is recorded, c_detail).
#    An order inversion spans two pgs: where the finding names no single
#    (pg, seq) there is none to compare (expected.json names the first pg).
#  * faulthandler stacks, py-spy text, py-spy --json: taken while every rank
#    was blocked, they show kind and culprits (each rank's collective call
#    site); never pg or seq: a Python stack carries no process group or
#    sequence number.
#  * stderr: gloo prints no watchdog lines (no SeqNum, no sizes); a rank's
#    stderr shows only a traceback when its collective raised, or DETAIL's
#    mismatch lines. STDERR_SHOWS lists where that is enough; elsewhere the
#    stderr must at least not blame another rank.
FORMATS = {
    "pickle": ("pickle", "*"),
    "json": ("json", "*"),
    "stderr": ("stderr", "*"),
    "faulthandler": ("stacks", "*"),
    "py-spy text": ("pyspy", "*.txt"),
    "py-spy json": ("pyspy", "*.json"),
}
STDERR_SHOWS = {
    # every rank timed out inside the mismatched collective and printed its traceback: call sites, no pg/seq
    "b": False,
    "c": False,
    # the DETAIL lines name both fingerprints with SequenceNumber: pg and seq too
    "c_detail": True,
    # the receivers' tracebacks end in their own error (no pg/seq); the sender's in its all_reduce
    "bcast_unpickle": False,
    "bcast_unpickle_empty": False,
    # the same inside a sub-group: the lines name ranks of the sub-group, each reporter itself first, and no
    # pg; the reporters' own fingerprints side by side show the deviating rank, under a pg said to be unknown
    "c_detail_sub": True,
}
# Not in STDERR_SHOWS, why: ddp_uneven, b_threads (dumps at the deadline, while blocked), a (ranks 1,2 sleep, print nothing), d/e (the deviating size/dtype is in no
# traceback; rank 2 aborts in C++), f1/f2 (the dead rank prints no traceback), g (gloo names no peer),
# h/i/j2/j3/k (nothing raises; the dumps come from the deadline watchdog), a_early (rank 0's timeout names no
# seq and no world: the dumps, taken before it, place it), *_stacks/*_pyspy (ranks raise
# only after the dumps, when rank 2 leaves at the end of the run), j1 (healthy).


def artifact_files(name, fmt):
    sub, pattern = FORMATS[fmt]
    return sorted(glob.glob(os.path.join(TESTDATA, name, sub, pattern)))


FORMAT_CASES = [(n, fmt) for n in SCENARIOS for fmt in FORMATS if artifact_files(n, fmt)]


def test_scenarios_have_several_kinds_of_artifacts():
    kinds = {n: [f for s, f in FORMAT_CASES if s == n] for n in SCENARIOS}
    assert all(len(k) >= 3 for k in kinds.values()), kinds
    assert {"pickle", "json", "stderr", "py-spy text", "py-spy json"} <= set(kinds["b_pyspy"])


@pytest.mark.parametrize("name,fmt", FORMAT_CASES, ids=["%s-%s" % c for c in FORMAT_CASES])
def test_same_hang_in_every_format(name, fmt):
    exp = load_expected(name)
    _, f0 = first_finding(*artifact_files(name, fmt), unusable_ok=True)  # a stderr may hold nothing usable
    dumps = fmt in ("pickle", "json")
    if dumps:
        shows, shows_pg_seq = exp.get("fr_evidence") is not False, True
    elif fmt == "stderr":
        shows, shows_pg_seq = name in STDERR_SHOWS, STDERR_SHOWS.get(name, False)
    else:  # stacks: unless expected.json says they cannot show it (h_sub: no pg in a stack)
        # or are too few (thread_crash: the blocked rank's only)
        shows = exp.get("stack_evidence") is not False and (fmt != "faulthandler" or exp.get("stacks_verdict", True))
        shows_pg_seq = False
    if exp["kind"] == "none":
        assert f0 is None or f0["severity"] != "error", f0["summary"]
        return
    if not shows:
        # It cannot show the fault; it must not blame another rank either.
        if f0 is not None and f0["severity"] == "error":
            assert set(f0["culprit_ranks"]) <= set(exp["culprit_ranks"]), (fmt, f0["summary"])
        return
    assert f0, "%s alone: no finding; expected %s %s" % (fmt, exp["kind"], exp["culprit_ranks"])
    assert (f0["kind"], f0["culprit_ranks"]) == (exp["kind"], exp["culprit_ranks"]), (fmt, f0["summary"])
    if shows_pg_seq and exp.get("seq") is not None and f0.get("seq") is not None:
        assert (f0["pg"]["name"], f0["seq"]) == (exp["pg"], exp["seq"]), (fmt, f0["summary"])
    if shows_pg_seq and exp["kind"] in ("collective_mismatch", "size_mismatch", "missing_rank", "crashed_rank"):
        assert f0.get("seq") is not None, "%s shows the seq of a %s" % (fmt, exp["kind"])
    if not shows_pg_seq:
        assert f0.get("seq") is None, "%s cannot know the seq" % fmt


@pytest.mark.parametrize("path", PICKLES, ids=[os.path.relpath(p, TESTDATA) for p in PICKLES])
def test_pickle_opcodes(path):
    """Documents the real byte layout of torch's FR pickles (torch::jit::Pickler, protocol 2)."""
    with open(path, "rb") as f:
        data = f.read()
    seen = set()
    for op, arg, pos in pickletools.genops(data):
        assert op.name in ALLOWED_OPCODES, "%s at byte %d in %s" % (op.name, pos, path)
        seen.add(op.name)
    assert data[:2] == b"\x80\x02" and data[-1:] == b"."
    assert {"PROTO", "EMPTY_DICT", "BINUNICODE", "STOP"} <= seen
