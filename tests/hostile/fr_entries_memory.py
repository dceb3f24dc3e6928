#!/usr/bin/env python3
"""Flight Recorder dumps with many entries: peak RSS must not grow with entries per rank.

Issue 13 item 1: a dump's pickle was parsed into a value tree of the whole file (1.1 KB per
entry), converted into a vector of every entry (248 bytes each) before the cut to a compact
history, and the latent-order check gathered every rank's collectives at once; at 256 ranks
peak RSS went from 38 MB at 2,000 entries per rank to 245 MB at 20,000. Entries are now read
one at a time from the pickle machine (PickleDocument::ParseViewStreaming), cut as they come
(DumpBuilder::StreamFlightRecorderOps) and the latent-order check reads one rank's collectives
at a time. `--check` writes 4 ranks x 2,000 and 4 ranks x 20,000 entries with
scripts/synth/gen_dumps.py (rank 2 missing from the last all_reduce) and runs
`hangdx analyze -j 2` on each: the peak RSS at 20,000 must stay within 1.5 times that at 2,000
plus 4 MiB (before: 18.5 -> 89 MiB, 4.8 times).

    tests/hostile/fr_entries_memory.py --check          # CI: 4 ranks, 2,000 and 20,000 entries
    tests/hostile/fr_entries_memory.py --check --long   # 64 ranks
    tests/hostile/fr_entries_memory.py --out DIR        # just write the 20,000-entry dumps
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import ROOT, binary, generator_args  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_whole import run_measured  # noqa: E402  (per-child peak RSS through os.wait4)

GEN = os.path.join(ROOT, "scripts", "synth", "gen_dumps.py")


def write(folder, ranks, entries):
    subprocess.run([sys.executable, GEN, "--ranks", str(ranks), "--entries", str(entries), "--pgs", "3",
                    "--fault", "missing_rank", "--format", "pickle", "--seed", "1", "--out", folder],
                   check=True, stdout=subprocess.DEVNULL)


def peak_mib(folder, seconds):
    """Runs `hangdx analyze folder -j 2`; returns its own peak RSS in MiB (os.wait4's rusage of
    that child, not the largest child so far). Exits with status 1 on a timeout or a failure."""
    cmd = [binary(), "analyze", folder, "--format", "json", "-j", "2", "-o", os.devnull]
    r = run_measured(cmd, os.devnull, seconds)
    if r["timed_out"]:
        sys.exit("hostile: FAIL: analyze %s ran past %d s" % (folder, seconds))
    if r["rc"] not in (0, 1):
        sys.exit("hostile: FAIL: analyze %s exited %d" % (folder, r["rc"]))
    return r["maxrss_mb"]


def main():
    a = generator_args(__doc__, long=True)
    ranks = 64 if a.long else 4
    if a.out:
        write(a.out, ranks, 20000)
        return 0
    with tempfile.TemporaryDirectory() as d:
        small, big = os.path.join(d, "e2000"), os.path.join(d, "e20000")
        write(small, ranks, 2000)
        write(big, ranks, 20000)
        seconds = 60 + ranks * 2
        at_small, at_big = peak_mib(small, seconds), peak_mib(big, seconds)
        bound = 1.5 * at_small + 4
        print("hostile: %d ranks: peak RSS %.1f MiB at 2,000 entries, %.1f MiB at 20,000 (bound %.1f MiB)"
              % (ranks, at_small, at_big, bound))
        if at_big > bound:
            sys.exit("hostile: FAIL: peak RSS grows with entries per rank: %.1f MiB at 20,000 vs %.1f at 2,000"
                     % (at_big, at_small))
    return 0


if __name__ == "__main__":
    sys.exit(main())
