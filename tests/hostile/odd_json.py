#!/usr/bin/env python3
"""Hostile input: JSON that parses, but says less than it seems to.

Issue 14: a Flight Recorder JSON dump that starts with a UTF-8 byte order mark was not read at
all, wait-snapshot keys that name one rank twice ("7" and "007") lost one wait without a
word, and a key repeated in one object (a dump's "collective_seq_id", a snapshot's "7", a device
snapshot's "ranks") kept its later value in silence. `--check` runs `hangdx analyze --format
json` on each within time and memory bounds: the dump with a BOM is used, and the colliding or
repeated key gets a warning naming the file and the key.

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
    # The same key twice in one object, in each JSON format hangdx reads.
    dups = {"fr": os.path.join(folder, "fr_trace_rank_1.json"),
            "snapshot": os.path.join(folder, "dup_snapshot.json"),
            "device": os.path.join(folder, "dup_device.json")}
    with open(FR_JSON) as f:
        text = f.read()
    at = text.index('"collective_seq_id"')
    with open(dups["fr"], "w") as f:  # the first entry's seq twice: 999, then its own
        f.write(text[:at] + '"collective_seq_id": 999, ' + text[at:])
    with open(dups["snapshot"], "w") as f:
        f.write('{"7": {"current_op": "all_reduce", "waiting_for_ranks": [1], "op_seq": 7},'
                ' "7": {"current_op": "barrier", "waiting_for_ranks": [2], "op_seq": 8}}')
    with open(dups["device"], "w") as f:
        f.write('{"hangdx_snapshot": 1, "ranks": [], "ranks": [{"rank": 0, "streams": []}]}')
    return bom, keys, dups


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
        bom, keys, dups = write(d)
        doc, _ = diagnostics(bom, "a Flight Recorder JSON dump with a BOM")
        if doc["inputs"]["used"] != 1:
            sys.exit("hostile: FAIL: the dump with a BOM was not used: %s" % doc["inputs"])
        _, msgs = diagnostics(keys, "snapshot keys 7 and 007")
        if not any("names rank 7 again" in m for m in msgs):
            sys.exit("hostile: FAIL: no warning for the colliding keys: %s" % msgs)
        for fmt, key, where in (("fr", "collective_seq_id", "in entries[0]"), ("snapshot", "7", "at the top level"),
                                ("device", "ranks", "at the top level")):
            doc, _ = diagnostics(dups[fmt], "a %s key twice" % fmt)
            want = 'duplicate JSON key "%s" %s' % (key, where)
            if not any(want in g["message"] and g["file"] == dups[fmt] for g in doc["diagnostics"]):
                sys.exit("hostile: FAIL: no warning %r naming %s: %s" % (want, dups[fmt], doc["diagnostics"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
