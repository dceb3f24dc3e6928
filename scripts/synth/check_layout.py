#!/usr/bin/env python3
"""Checks scripts/synth/frpickle.py against real Flight Recorder pickles.

For each real dump: load it with pickle, re-encode the object with the
torch-style encoder, and compare bytes. Two runs per file:
  * policy "tree":  containers memoized when referenced twice in the tree
                    (the encoder's default, what gen_dumps.py uses);
  * policy "memo":  containers memoized exactly when the real dump memoized
                    them (read from the unpickler's memo), to isolate the
                    byte layout from the sharing policy.
On a difference it prints the first differing offset and the pickletools
disassembly around it. Exit 0 when every file is byte-identical (policy tree).

usage: check_layout.py [FILE_OR_DIR ...]   (default: testdata/torch/*/pickle)
"""
import glob
import io
import os
import pickle
import pickletools
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frpickle  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dis_around(data, offset, n=6):
    out = io.StringIO()
    try:
        pickletools.dis(data, out=out)
    except Exception as e:  # noqa: BLE001
        out.write("(dis failed: %s)\n" % e)
    lines = out.getvalue().splitlines()
    best = 0
    for i, line in enumerate(lines):
        try:
            if int(line.split(":")[0]) <= offset:
                best = i
        except ValueError:
            pass
    return "\n".join(lines[max(0, best - n):best + n])


def check(path):
    real = open(path, "rb").read()
    u = pickle._Unpickler(io.BytesIO(real))  # pure-Python: memo is visible
    obj = u.load()
    memo_shared = {id(v) for v in u.memo.values() if isinstance(v, (dict, list, tuple))}
    keep = list(u.memo.values())  # noqa: F841  (ids stay valid)
    res = {}
    for policy, shared in (("tree", frpickle.count_shared(obj)), ("memo", memo_shared)):
        mine = frpickle.Encoder(shared).dumps(obj)
        if mine == real:
            res[policy] = None
        else:
            off = next((i for i, (a, b) in enumerate(zip(mine, real)) if a != b),
                       min(len(mine), len(real)))
            res[policy] = (off, len(real), len(mine), mine)
    return real, res


def selftest():
    """Round trip through pickle.loads of an object whose memo passes 255
    (LONG_BINPUT / LONG_BINGET, which the small real dumps never reach),
    with every int width, floats, None, bools, tuples of 0-4 items."""
    shared_d = {"name": "f", "line": 7}
    obj = {"s%d" % i: [i, -i, 1 << 40, 70000, 300, None, True, False, 1.5, (), (i,),
                       ("a", "b"), (1, 2, 3), (1, 2, 3, 4), shared_d, "s%d" % i]
           for i in range(400)}
    data = frpickle.dumps(obj)
    back = pickle.loads(data)
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    need = {"LONG_BINPUT", "LONG_BINGET", "BINPUT", "BINGET", "BININT1", "BININT2",
            "BININT", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE", "NONE", "EMPTY_TUPLE",
            "TUPLE1", "TUPLE2", "TUPLE3", "TUPLE", "SETITEMS", "APPENDS"}
    ok = back == obj and need <= ops and back["s1"][14] is back["s2"][14]
    print("selftest: round trip of a %d-byte pickle with %s: %s"
          % (len(data), ", ".join(sorted(need)), "ok" if ok else "FAILED (missing %s)" % (need - ops)))
    return ok


def check_json(pickle_path):
    """Renders the real pickle's object as gen_dumps.to_json and compares with
    the JSON dump of the same rank (taken by a separate dump call, so it may
    legitimately differ in state/retired/pg_status)."""
    import gen_dumps  # noqa: E402
    jpath = pickle_path.replace("/pickle/", "/json/") + ".json"
    if not os.path.exists(jpath):
        return None
    obj = pickle.load(open(pickle_path, "rb"))
    return gen_dumps.to_json(obj).encode("utf-8") == open(jpath, "rb").read()


def main(argv):
    if not selftest():
        return 1
    args = argv[1:] or sorted(glob.glob(os.path.join(ROOT, "testdata/torch/*/pickle")))
    files = []
    for a in args:
        if os.path.isdir(a):
            files += sorted(os.path.join(a, f) for f in os.listdir(a))
        else:
            files.append(a)
    ok = {"tree": 0, "memo": 0}
    total_bytes = 0
    failed = False
    json_same = json_total = 0
    for f in files:
        js = check_json(f)
        if js is not None:
            json_total += 1
            json_same += js
        real, res = check(f)
        total_bytes += len(real)
        for policy, r in res.items():
            if r is None:
                ok[policy] += 1
            else:
                off, lr, lm, mine = r
                print("DIFF %-7s %s: first difference at byte %d (real %d bytes, ours %d)"
                      % (policy, os.path.relpath(f, ROOT), off, lr, lm))
                print("  real:\n" + dis_around(real, off))
                print("  ours:\n" + dis_around(mine, off))
                if policy == "tree":
                    failed = True
    n = len(files)
    print("check_layout: %d real dumps (%d bytes); byte-identical re-encodings: "
          "%d/%d (tree-sharing policy), %d/%d (real memo policy)"
          % (n, total_bytes, ok["tree"], n, ok["memo"], n))
    if json_total:
        print("check_layout: JSON rendering (gen_dumps.to_json of the pickle's object) equals the "
              "real JSON dump byte for byte on %d/%d ranks (the JSON was a separate dump call)"
              % (json_same, json_total))
    return 1 if failed or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
