#!/usr/bin/env python3
"""Hostile input: big NCCL INFO logs, whose memory must not grow with their lines.

Issue 13 item 1: every enqueue line of an NCCL log became a record (about 2.7 bytes of memory
per byte of log: 1 GB of one rank took 5.2 GB), so 10 GB of logs could not be read on a 24 GB
machine. Logs are now streamed into a compact history (DumpBuilder::StreamCut), the pending
op lines of a process held as a PeriodicLog, and the pages of the mapped file released as the
readers pass them (ReleaseReadPages). `--check` writes a 2-rank job's logs with
scripts/synth/gen_nccl_log.py (rank 1 one step short) and runs `hangdx analyze` on both logs
(every member logged: 'No hang found', as the logs show no op unfinished) and on rank 0's
alone (a partial view: rank 1 left no log, and an op enqueued with no timeout shows no hang,
exit 0), each within a peak RSS bound far below the input's size and flat in it (before the streaming: 2.7x the input).

    tests/hostile/nccl_log_memory.py --check          # CI: 2 x 40 MB
    tests/hostile/nccl_log_memory.py --check --long   # 2 x 1 GB
    tests/hostile/nccl_log_memory.py --out DIR        # just write the logs
"""
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import ROOT, check, generator_args  # noqa: E402

GEN = os.path.join(ROOT, "scripts", "synth", "gen_nccl_log.py")


def write(folder, mb):
    subprocess.run([sys.executable, GEN, "--ranks", "2", "--mb", str(mb), "--stop-rank", "1", "--out", folder],
                   check=True)


def peak_mib():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10


def main():
    a = generator_args(__doc__, long=True)
    mb = 1000 if a.long else 40
    if a.out:
        write(a.out, mb)
        return 0
    with tempfile.TemporaryDirectory() as d:
        write(d, mb)
        total = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6
        # Resident memory: a few MB of history and records, plus per parser thread (2) the mapped
        # pages of the file it reads, released every 32 MB (a file of up to 64 MB may stay resident
        # for a pass): flat in the logs' size. Before the streaming it was 2.7x the input. The
        # address space bound leaves room for the mapped files and the threads' arenas.
        rss_bound = 48 + 2 * min(mb, 64)
        space = int(total) + 1024
        seconds = max(60, int(total / 10))
        for name, path, status in (("both logs", d, {0}),
                                   ("rank 0's log alone", os.path.join(d, "nccl_rank_0.log"), {0})):
            before = peak_mib()
            check(["analyze", path, "--format", "json"], seconds, space, expect_exit=status,
                  name="analyze %s of 2 x %d MB" % (name, mb), stdout=subprocess.DEVNULL)
            peak = peak_mib()
            if peak > max(before, rss_bound):
                sys.exit("hostile: FAIL: analyze %s took %d MiB of resident memory (bound %d MiB for %.0f MB of logs)"
                         % (name, peak, rss_bound, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
