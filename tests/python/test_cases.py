"""Real hang reports from public bug trackers (testdata/cases/, copied from
../shared/cases): hangdx must reach each case's verdict (kind and culprit
ranks in its expected.json, written from the maintainers' diagnosis) from the
artifacts alone."""
import glob
import json
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(REPO, "testdata", "cases", "*", "expected.json")))
# Real native stacks (gdb) of real gloo hangs, with the verdict written from
# what the program did (each case's case.py and notes).
GDB_CASES = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(REPO, "testdata", "gdb", "*", "expected.json")))


def hangdx_bin():
    b = os.environ.get("HANGDX_BIN") or shutil.which("hangdx")
    if not b:
        pytest.skip("hangdx binary not found")
    return b


@pytest.mark.parametrize("case", CASES + GDB_CASES, ids=[os.path.basename(c) for c in CASES + GDB_CASES])
def test_case_verdict(case):
    with open(os.path.join(case, "expected.json")) as f:
        exp = json.load(f)
    p = subprocess.run([hangdx_bin(), "analyze", case, "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 1, p.stderr.decode()[-2000:]
    out = json.loads(p.stdout)
    f0 = out["findings"][0]
    assert f0["kind"] == exp["kind"], (f0["summary"], exp["notes"])
    assert f0["culprit_ranks"] == exp["culprit_ranks"], (f0["summary"], exp["notes"])
    # Every claim carries evidence naming a file of the case.
    assert f0["evidence"] and all(os.path.exists(e["file"]) for e in f0["evidence"])


def test_cases_present():
    assert len(CASES) >= 7
