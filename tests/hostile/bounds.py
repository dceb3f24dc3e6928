"""Runs a hangdx command under a time and a memory bound, for the hostile-input generators in this folder.

A generator writes its input, then calls check():

    from bounds import check
    check(["simulate", path], seconds=20, memory_mb=400, expect_exit={0})

The command runs as `prlimit --as=BYTES -- timeout SECONDS hangdx ...` (address space, so an allocation past the
bound fails inside hangdx, which must then exit 2 with a diagnostic rather than abort); check() exits 1 and says why
when the command ran past either bound, was killed by a signal, or exited with a status not in `expect_exit`. It
prints the wall time and the peak resident memory either way, so a CI log shows how close each input runs to its
bound. HANGDX_BIN names the binary (default build/bin/hangdx under the repository root).
"""
import argparse
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def generator_args(doc, long=False):
    """The command line every generator here takes: --out DIR (write the input and stop), --check (the CI run,
    the default) and, with `long`, --long (the big sizes, not run in CI). Returns the parsed arguments."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    if long:
        ap.add_argument("--long", action="store_true")
    return ap.parse_args()


def binary():
    return os.environ.get("HANGDX_BIN", os.path.join(ROOT, "build", "bin", "hangdx"))


def check(argv, seconds, memory_mb, expect_exit=(0, 1), name=None, stdout=subprocess.DEVNULL):
    """Runs hangdx `argv` within `seconds` of wall time and `memory_mb` MiB of address space.

    Returns the completed process (stdout captured when `stdout` is subprocess.PIPE); exits the
    generator with status 1 on a breach of a bound, a signal, or an unexpected exit status."""
    name = name or " ".join(argv)
    cmd = ["prlimit", "--as=%d" % (memory_mb << 20), "--", "timeout", "-s", "KILL", str(seconds), binary()] + argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the largest child so far
    peak_note = "peak RSS %d MiB" % (peak >> 10) if peak > before else "peak RSS below an earlier command's"
    print("hostile: %s: exit %d in %.2f s (bound %d s), %s (bound %d MiB)"
          % (name, p.returncode, wall, seconds, peak_note, memory_mb))
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode in (124, 137, -9) or wall >= seconds:
        sys.exit("hostile: FAIL: %s ran past its time bound of %d s" % (name, seconds))
    if p.returncode < 0 or p.returncode >= 128:
        sys.exit("hostile: FAIL: %s was killed (status %d), e.g. an abort past the memory bound:\n%s"
                 % (name, p.returncode, err[-2000:]))
    if p.returncode not in expect_exit:
        sys.exit("hostile: FAIL: %s exited %d, expected one of %s:\n%s"
                 % (name, p.returncode, sorted(expect_exit), err[-2000:]))
    return p
