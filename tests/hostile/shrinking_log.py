#!/usr/bin/env python3
"""Hostile input: a log that shrinks while hangdx reads it (copytruncate under a live job).

Issue 14: a 300 MB log truncated to 1,000 bytes 0.2 s after `hangdx analyze` started killed it
with SIGBUS (the file is mapped). `--check` writes a large NCCL log, starts `hangdx analyze
--format json` on it, truncates it `--after` seconds later, and checks, within time and memory
bounds, that hangdx was not killed and, when the truncation came while the file was read, that a
diagnostic says the file shrank. The race is repeated at several delays, since which of them
lands inside the read depends on the machine.

    tests/hostile/shrinking_log.py --check          # CI: 100 MB
    tests/hostile/shrinking_log.py --check --long   # the issue's 300 MB
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import check, generator_args  # noqa: E402

LINE = b"node1:1234:1300 [3] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f00 recvbuff 0x7f00 count 1024 " \
       b"datatype 7 op 0 root 0 comm 0x55aa nranks 8 stream 0x5600\n"


def write(path, mb):
    block = LINE * (1 << 20 // len(LINE) + 1)
    with open(path, "wb") as f:
        f.write(b"node1:1234:1234 [3] NCCL INFO NCCL version 2.18.3+cuda12.1\n")
        for _ in range(int(mb * 1e6 / len(block)) + 1):
            f.write(block)


def main():
    a = generator_args(__doc__, long=True)
    mb = 300 if a.long else 100
    if a.out:
        write(a.out, mb)
        return 0
    shrank_seen = False
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "nccl_rank_3.log")
        for after in (0.05, 0.2, 0.5):
            write(path, mb)
            timer = threading.Timer(after, lambda: os.truncate(path, 1000))
            timer.start()
            p = check(["analyze", "--format", "json", path], 120, int(2 * mb) + 600, expect_exit={0, 1, 2},
                      name="analyze a %d MB log truncated after %.2f s" % (mb, after), stdout=subprocess.PIPE)
            timer.join()
            doc = json.loads(p.stdout)
            if any("shrank" in g["message"] for g in doc["diagnostics"]):
                shrank_seen = True
        print("hostile: a diagnostic said the file shrank: %s" % shrank_seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
