#!/usr/bin/env python3
"""Hostile input: Flight Recorder pickles that amplify through their memo, or are all brackets.

Issue 14: a 1 MB pickle whose memo shares a 200,000-key dict 200,000 times ran past 60 s; an
80 KB pickle sharing a 20,000-integer shape 20,000 times took 6.3 GB; 10 MB of `]` took 980
MB (about 100 bytes per input byte). `--check` runs `hangdx analyze` on each within time and
memory bounds (50x the input plus 200 MB of resident memory is the issue's target; the bound
here is address space, so 400 MB more for what the loader maps and threads reserve) and
checks that an amplification is reported as an error, not silently cut.

    tests/hostile/hostile_pickles.py --check          # CI: the issue's sizes (2 MB, 80 KB, 10 MB)
    tests/hostile/hostile_pickles.py --out DIR        # just write them
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check, generator_args  # noqa: E402


def su(s):
    return b"\x8c" + bytes([len(s)]) + s


def write(folder):
    os.makedirs(folder, exist_ok=True)
    paths = {}
    k = 200000  # a 200,000-key dict memoised once (q\x01) and fetched 199,999 times (h\x01)
    d = b"}(" + b"K\x01N" * k + su(b"profiling_name") + su(b"nccl:all_reduce") + b"u"
    paths["dict"] = os.path.join(folder, "amp_rank_3")
    with open(paths["dict"], "wb") as f:
        f.write(b"\x80\x02}(" + su(b"version") + su(b"2.10") + su(b"entries") + b"](" + d + b"q\x01"
                + b"h\x01" * (k - 1) + b"eu.")
    k = 20000  # a 20,000-integer shape shared 20,000 times by one entry's input_sizes
    shape = b"](" + b"K\x01" * k + b"eq\x02"
    entry = b"}(" + su(b"profiling_name") + su(b"nccl:all_reduce") + su(b"input_sizes") + b"](" + shape \
        + b"h\x02" * (k - 1) + b"eu"
    paths["shape"] = os.path.join(folder, "shape_rank_4")
    with open(paths["shape"], "wb") as f:
        f.write(b"\x80\x02}(" + su(b"version") + su(b"2.10") + su(b"entries") + b"](" + entry + b"eu.")
    paths["brackets"] = os.path.join(folder, "fr_trace_rank_5")
    with open(paths["brackets"], "wb") as f:
        f.write(b"\x80\x02" + b"]" * 10000000 + b".")
    return paths


def main():
    a = generator_args(__doc__)
    if a.out:
        write(a.out)
        return 0
    with tempfile.TemporaryDirectory() as d:
        paths = write(d)
        for name, path in sorted(paths.items()):
            mb = os.path.getsize(path) / 1e6
            p = check(["analyze", "--format", "json", path], 20, int(50 * mb) + 600,
                      name="analyze %s (%.2f MB)" % (name, mb), expect_exit={0, 1, 2}, stdout=subprocess.PIPE)
            if name == "shape":
                doc = json.loads(p.stdout)
                if not any("amplification" in g["message"] for g in doc["diagnostics"]):
                    sys.exit("hostile: FAIL: the shared shape is not reported as an amplification")
    return 0


if __name__ == "__main__":
    sys.exit(main())
