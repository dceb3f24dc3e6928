#!/usr/bin/env python3
"""Fusing more evidence never makes a verdict worse than one artifact gives
(issue 11, item 4): for every real case of testdata/public/ and
testdata/cases/ with two or more artifacts, runs `hangdx analyze` on each
artifact alone and on all of them together, and judges each run against the
case's expected.json as score.py does.

  tests/public/fusion.py            # print one line per case
  tests/public/fusion.py --check    # also fail when an artifact alone passes and all together fail (ctest)

HANGDX_BIN names the binary (default build/bin/hangdx).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402  (the corpus and its judge)


def analyze(binary, paths):
    """hangdx's JSON report (None when it printed none) and exit code for these files."""
    p = subprocess.run([binary, "analyze", *paths, "--format", "json"], cwd=score.ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=120)
    try:
        return json.loads(p.stdout.decode("utf-8", "replace")), p.returncode
    except ValueError:
        return None, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    binary = os.environ.get("HANGDX_BIN", os.path.join(score.ROOT, "build", "bin", "hangdx"))
    worse = []
    for case in score.cases():
        d = os.path.join(score.ROOT, case)
        files = score.inputs(case)
        if len(files) < 2:
            continue
        with open(os.path.join(d, "expected.json")) as f:
            expected = json.load(f)
        together = score.judge(expected, *analyze(binary, files))
        alone = [(os.path.basename(f), score.judge(expected, *analyze(binary, [f]))) for f in files]
        right_alone = [name for name, r in alone if r[0]]
        print("%s  together: %s %s; right alone: %s" % (os.path.basename(case), "PASS" if together[0] else "fail",
                                                       together[2], ", ".join(right_alone) or "none"))
        if right_alone and not together[0]:
            worse.append(os.path.basename(case))
    if worse:
        print("fusion: all artifacts together are wrong where one alone is right: " + ", ".join(worse))
        return 1 if a.check else 0
    print("fusion: no case is worse with all its artifacts than with one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
