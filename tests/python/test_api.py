"""The Python package: hangdx.analyze returns the CLI's JSON document."""
import json
import os
import shutil
import subprocess

import pytest

import hangdx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "mismatch")


def cli():
    b = os.environ.get("HANGDX_BIN") or shutil.which("hangdx")
    if not b:
        pytest.skip("hangdx binary not found")
    return b


def test_analyze_returns_the_cli_document():
    d = hangdx.analyze(EXAMPLE)
    out = subprocess.run([cli(), "analyze", EXAMPLE, "--format", "json"], stdout=subprocess.PIPE, check=False)
    assert out.returncode == 1
    assert d == json.loads(out.stdout)


def test_analyze_example_verdict():
    # examples/mismatch: ranks 0,1 all_reduce, rank 2 broadcast at seq 3 (scenario c).
    d = hangdx.analyze([EXAMPLE])
    assert d["schema_version"] == 1
    assert d["hang"] is True
    f = d["findings"][0]
    assert (f["kind"], f["culprit_ranks"], f["seq"], f["pg"]["name"]) == ("collective_mismatch", [2], 3, "0")


def test_render_formats_and_exit_code():
    text, code = hangdx.render(EXAMPLE, "text")
    assert code == 1 and text.startswith("HANG")
    dot, _ = hangdx.render(EXAMPLE, "dot")
    assert dot.startswith("digraph")
    with pytest.raises(hangdx.Error):
        hangdx.render(EXAMPLE, "xml")


def test_formats_are_the_cli_table_and_the_docstring_names_them():
    names = [name for name, _ in hangdx.formats()]
    assert "fr-pickle" in names and "nccl-log" in names and len(set(names)) == len(names)
    out = subprocess.run([cli(), "formats"], stdout=subprocess.PIPE, check=True, text=True)
    assert [line.split()[0] for line in out.stdout.splitlines()] == names
    for name in names:
        assert "``%s``" % name in hangdx.analyze.__doc__


def test_missing_path_raises():
    with pytest.raises(hangdx.Error, match="no such file"):
        hangdx.analyze("/nonexistent/hangdx")


def test_world_size_and_rank_override(tmp_path):
    src = os.path.join(REPO, "testdata", "torch", "f1", "json")
    for name in os.listdir(src):  # names without rank numbers
        shutil.copy(os.path.join(src, name), tmp_path / name.replace("fr_trace_rank_", "host-").replace(".json", "x"))
    files = sorted(os.listdir(tmp_path))
    rank_of = {str(tmp_path / f): int(f.split("-")[1].rstrip("x")) for f in files}
    d = hangdx.analyze(str(tmp_path), rank_of=rank_of, world_size=4)
    assert d["findings"][0]["kind"] == "crashed_rank"
    assert d["findings"][0]["culprit_ranks"] == [1]


def test_hostile_pickle_has_no_side_effect(tmp_path):
    import pickle

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(marker),))

    (tmp_path / "trace_0").write_bytes(pickle.dumps(Evil(), protocol=2))
    d = hangdx.analyze(str(tmp_path))
    assert not marker.exists()
    assert any("refused opcode GLOBAL" in g["message"] for g in d["diagnostics"])


@pytest.mark.parametrize("kwargs, message", [
    # The CLI's bounds: --world-size 1..16777216, a rank 0..16777215 (1 << 24 ranks).
    (dict(world_size=-5), "world_size: Value -5 not in range 1 to 16777216"),
    (dict(world_size=0), "world_size: Value 0 not in range 1 to 16777216"),
    (dict(world_size=2**40), "world_size: Value 1099511627776 not in range 1 to 16777216"),
    (dict(rank_of={os.path.join(EXAMPLE, "fr_trace_rank_0"): -7}), "Value -7 not in range 0 to 16777215"),
    (dict(rank_of={os.path.join(EXAMPLE, "fr_trace_rank_0"): 2**24}), "Value 16777216 not in range 0 to 16777215"),
    (dict(world_size="4"), "world_size: '4' is not an integer"),
])
def test_out_of_range_world_size_and_rank_are_refused(kwargs, message):
    # Before, -5/0/-7 silently dropped data and 2**40 allocated until MemoryError.
    with pytest.raises(hangdx.Error) as e:
        hangdx.analyze(EXAMPLE, **kwargs)
    assert message in str(e.value)


def test_bounds_themselves_are_accepted():
    d = hangdx.analyze(EXAMPLE, world_size=3, rank_of={os.path.join(EXAMPLE, "fr_trace_rank_0"): 0})
    assert d["findings"][0]["culprit_ranks"] == [2]
