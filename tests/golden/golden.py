#!/usr/bin/env python3
"""Golden outputs: what hangdx prints for every input folder and file under
testdata/ and examples/ (analyze and stacks, text and JSON; simulate for
every device schedule), kept under tests/golden/out/ so that a change shows
its effect on every case in one diff.

  tests/golden/golden.py --check    # compare (CI: ctest 'golden'); exit 1 on a difference
  tests/golden/golden.py --update   # rewrite the goldens after an intended change

Paths are given relative to the repository root, so outputs name no
absolute path; wall-clock figures (simulate's seconds, JSON and text) are masked. Each golden file holds the command's stdout, then a line
`[exit N]`. HANGDX_BIN names the binary (default build/bin/hangdx).
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "out")
NOT_INPUT = {"README.md", "expected.json"}


def is_input(name):
    return name not in NOT_INPUT and not name.endswith((".py", ".md"))


def case_inputs(d):
    """A case folder's artifacts, as tests/public/score.py passes them: every
    file but its verdict (expected.json) and README, so that hangdx never reads
    the verdict as evidence. [] for a folder that is not a case."""
    if not os.path.exists(os.path.join(d, "expected.json")):
        return []
    return sorted(os.path.relpath(os.path.join(dd, f), ROOT)
                  for dd, _, ff in os.walk(d) for f in ff if is_input(f))


def device_kind(path):
    """'schedule', 'snapshot' or None for a JSON file."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if b'"hangdx_schedule"' in head:
        return "schedule"
    if b'"hangdx_snapshot"' in head:
        return "snapshot"
    return None


def units():
    """(name, [argv...]) for every golden, in a stable order."""
    out = []
    for top in ("testdata", "examples"):
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs.sort()
            rel = os.path.relpath(d, ROOT)
            inputs = sorted(f for f in files if is_input(f))
            device = [f for f in inputs if device_kind(os.path.join(d, f))]
            # A folder of device files holds one job per file.
            for f in device:
                p = os.path.join(rel, f)
                out.append((p, [["analyze", p], ["analyze", p, "--format", "json"]]))
                if device_kind(os.path.join(d, f)) == "schedule":
                    out.append((p + "@simulate", [["simulate", p], ["simulate", p, "--format", "json"]]))
            has_inputs = any(f not in device for f in inputs)
            subtree_inputs = has_inputs or any(
                is_input(f) and not device_kind(os.path.join(dd, f))
                for dd, _, ff in os.walk(d) for f in ff)
            depth = rel.count(os.sep)
            # testdata/ and its collections of cases mix unrelated jobs: not a unit.
            if subtree_inputs and depth >= 1 and rel not in ("testdata/torch", "testdata/cases", "testdata/public", "testdata/wait"):
                if not has_inputs and not any(os.path.isdir(os.path.join(d, x)) for x in dirs):
                    continue
                args = case_inputs(d) or [rel]
                out.append((rel, [["analyze"] + args, ["analyze"] + args + ["--format", "json"],
                                  ["stacks"] + args, ["stacks"] + args + ["--format", "json"]]))
    return out


def golden_path(name, argv):
    sub = argv[0] + ("-json" if "json" in argv else "-text")
    return os.path.join(OUT, name.replace(os.sep, "__") + "." + sub + ".txt")


# Wall-clock figures (simulate's JSON "seconds" and its text "explored N
# states in 0.000 s") differ run to run: masked.
SECONDS = re.compile(r'("seconds": )[0-9.e+-]+')
TEXT_SECONDS = re.compile(r'(explored [0-9,]+ states in )[0-9.]+( s)')


def run(binary, argv):
    p = subprocess.run([binary] + argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       timeout=120)
    text = TEXT_SECONDS.sub(r'\1*\2', SECONDS.sub(r'\1"*"', p.stdout.decode("utf-8", "replace")))
    return text + "[exit %d]\n" % p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true")
    g.add_argument("--update", action="store_true")
    a = ap.parse_args()
    binary = os.environ.get("HANGDX_BIN", os.path.join(ROOT, "build", "bin", "hangdx"))
    want = {}
    for name, cmds in units():
        for argv in cmds:
            want[golden_path(name, argv)] = argv
    if a.update:
        os.makedirs(OUT, exist_ok=True)
        for f in os.listdir(OUT):
            if os.path.join(OUT, f) not in want:
                os.remove(os.path.join(OUT, f))
        for path, argv in sorted(want.items()):
            with open(path, "w") as f:
                f.write(run(binary, argv))
        print("golden: %d outputs written to %s" % (len(want), os.path.relpath(OUT, ROOT)))
        return 0
    bad = 0
    for path, argv in sorted(want.items()):
        got = run(binary, argv)
        try:
            with open(path) as f:
                have = f.read()
        except FileNotFoundError:
            have = None
        if have == got:
            continue
        bad += 1
        print("golden: hangdx %s differs from %s" % (" ".join(argv), os.path.relpath(path, ROOT)))
        if have is not None:
            sys.stdout.writelines(list(difflib.unified_diff(
                have.splitlines(True), got.splitlines(True), "golden", "now", n=1))[:60])
    extra = [f for f in os.listdir(OUT) if os.path.join(OUT, f) not in want] if os.path.isdir(OUT) else []
    for f in extra:
        bad += 1
        print("golden: %s has no input any more (run --update)" % f)
    print("golden: %d of %d outputs differ%s" % (bad, len(want), "" if not bad else
          "; if intended, run tests/golden/golden.py --update and explain each difference in the commit"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
