#!/usr/bin/env python3
"""Hostile input: JSON that parses, but says less than it seems to.

Issue 14: a Flight Recorder JSON dump that starts with a UTF-8 byte order mark was not read at
all, and wait-snapshot keys that name one rank twice ("7" and "007") lost one wait without a
word. `--check` runs `hangdx analyze --format json` on each within time and memory bounds: the
dump with a BOM is used, and the colliding key gets a warning naming it.

    tests/hostile/odd_json.py --check        # CI
    tests/hostile/odd_json.py --out DIR      # just write the inputs
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import ROOT, check, generator_args  # noqa: E402

FR_JSON = os.path.join(ROOT, "testdata", "torch", "a", "json", "fr_trace_rank_0.json")


def write(folder):
    os.makedirs(folder, exist_ok=True)
    bom = os.path.join(folder, "fr_trace_rank_0.json")
    with open(FR_JSON, "rb") as f, open(bom, "wb") as out:
        out.write(b"\xef\xbb\xbf" + f.read())
    keys = os.path.join(folder, "snapshot.json")
    with open(keys, "w") as f:
        f.write('{"7": {"current_op": "all_reduce", "waiting_for_ranks": [1], "op_seq": 7},'
                ' "007": {"current_op": "all_reduce", "waiting_for_ranks": [2], "op_seq": 7}}')
    return bom, keys


def diagnostics(path, name):
    p = check(["analyze", "--format", "json", path], 20, 600, name=name, stdout=subprocess.PIPE)
    doc = json.loads(p.stdout)
    return doc, [g["message"] for g in doc["diagnostics"]]


def main():
    a = generator_args(__doc__)
    if a.out:
        write(a.out)
        return 0
    with tempfile.TemporaryDirectory() as d:
        bom, keys = write(d)
        doc, _ = diagnostics(bom, "a Flight Recorder JSON dump with a BOM")
        if doc["inputs"]["used"] != 1:
            sys.exit("hostile: FAIL: the dump with a BOM was not used: %s" % doc["inputs"])
        _, msgs = diagnostics(keys, "snapshot keys 7 and 007")
        if not any("names rank 7 again" in m for m in msgs):
            sys.exit("hostile: FAIL: no warning for the colliding keys: %s" % msgs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
