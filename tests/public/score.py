#!/usr/bin/env python3
"""Scores hangdx on the real public hang reports (testdata/public/ and
testdata/cases/): for each case, runs `hangdx analyze CASE --format json`
and compares its first finding with expected.json, which holds the
maintainers' or reporter's verdict.

  tests/public/score.py                 # print the table and the score
  tests/public/score.py --check         # also fail if a case in baseline.txt now fails (ctest)
  tests/public/score.py --update-baseline

A case passes when:
  - kind no_hang: hangdx read the files (exit 0, not 2 "no usable input") and reports no hang;
  - kind undecided: the first finding is `undecided`, naming no rank outside the candidates;
  - a verdict with candidates but no culprit (the thread cannot tell which side deviated): the first
    finding has the expected kind or is `undecided`, and blames no rank outside the candidates;
  - otherwise: the first finding has the expected kind and exactly the expected culprit ranks.
"Kind right" counts cases whose first finding has the right kind whatever the culprits.
HANGDX_BIN names the binary (default build/bin/hangdx).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASELINE = os.path.join(ROOT, "tests", "public", "baseline.txt")


def cases():
    out = []
    for top in ("testdata/public", "testdata/cases"):
        d = os.path.join(ROOT, top)
        for name in sorted(os.listdir(d)):
            if os.path.exists(os.path.join(d, name, "expected.json")):
                out.append(os.path.join(top, name))
    return out


def judge(expected, doc, code):
    """(passed, kind_right, what hangdx said) for one case."""
    want = expected["kind"]
    culprits = set(expected.get("culprit_ranks") or [])
    candidates = set(expected.get("candidates") or [])
    findings = (doc or {}).get("findings") or []
    hang = any(f.get("hang") for f in findings)
    first = findings[0] if findings else {}
    kind = first.get("kind", "none")
    got = set(first.get("culprit_ranks") or [])
    said = "%s %s%s" % (kind, sorted(got) if got else "[]", "" if hang else " (no hang)")
    if doc is None:
        return False, False, "no JSON output"
    if want == "no_hang":
        if code == 2:
            return False, False, "no usable input (exit 2)"
        return not hang, not hang, said
    if want == "undecided":
        ok = kind == "undecided" and got <= candidates
        return ok, kind == "undecided", said
    if candidates and not culprits:
        ok = kind in (want, "undecided") and got <= candidates
        return ok, kind in (want, "undecided"), said
    return kind == want and got == culprits, kind == want, said


def inputs(case):
    """The case's artifacts: every file but the verdict (expected.json) and the README, which
    hangdx must not read (their text quotes the very lines it would take for evidence)."""
    return sorted(os.path.join(case, f) for f in os.listdir(os.path.join(ROOT, case))
                  if f not in ("expected.json", "README.md"))


def run(binary, case):
    p = subprocess.run([binary, "analyze", *inputs(case), "--format", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=120)
    try:
        return json.loads(p.stdout.decode("utf-8", "replace")), p.returncode
    except ValueError:
        return None, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()
    binary = os.environ.get("HANGDX_BIN", os.path.join(ROOT, "build", "bin", "hangdx"))
    baseline = set()
    if os.path.exists(BASELINE):
        baseline = {l.strip() for l in open(BASELINE) if l.strip() and not l.startswith("#")}
    passed, kind_right, regressions = [], 0, []
    rows = []
    for case in cases():
        with open(os.path.join(ROOT, case, "expected.json")) as f:
            expected = json.load(f)
        ok, kr, said = judge(expected, *run(binary, case))
        kind_right += kr
        want = "%s %s" % (expected["kind"], expected.get("culprit_ranks") or
                          ("candidates %s" % expected["candidates"] if expected.get("candidates") else "[]"))
        rows.append(("PASS" if ok else "fail", os.path.basename(case), want, said))
        if ok:
            passed.append(case)
        elif case in baseline:
            regressions.append(case)
    width = max(len(r[1]) for r in rows)
    for r in rows:
        print("%s  %-*s  want %-34s got %s" % (r[0], width, r[1], r[2], r[3]))
    n = len(rows)
    print("public corpus: %d of %d cases right (%.0f%%); first finding of the right kind in %d" %
          (len(passed), n, 100.0 * len(passed) / n, kind_right))
    if a.update_baseline:
        with open(BASELINE, "w") as f:
            f.write("# Cases hangdx gets right; score.py --check fails if one of them stops passing.\n")
            f.writelines(c + "\n" for c in passed)
    if a.check and regressions:
        print("public corpus: these cases passed before and fail now: " + ", ".join(regressions))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
