#!/usr/bin/env python3
"""Hostile input: a shared folder holding what is not a plain file.

Issue 14: the folder walk dropped a symlinked subfolder (a rank's dump behind it was lost), a
dangling symlink, a symlink loop, a FIFO, a socket, an unreadable subfolder and /proc-style
files without a word. `--check` builds such a folder and runs `hangdx analyze --format json`
on it within time and memory bounds: the dump behind the symlinked folder is read, a symlink
back up the tree is not followed twice, and every other entry is counted among the inputs and
named in a diagnostic with what it was (a FIFO must not block the walk: hangdx never opens it).

    tests/hostile/odd_folder.py --check        # CI
    tests/hostile/odd_folder.py --out DIR      # just build the folder
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounds import ROOT, check, generator_args  # noqa: E402

PICKLES = os.path.join(ROOT, "testdata", "torch", "c_detail", "pickle")

# Entry name -> words its diagnostic must hold.
EXPECTED = {
    "back": "already read",
    "dangling": "dangling symlink",
    "loopa": "symlink loop",
    "loopb": "symlink loop",
    "fifo": "FIFO",
    "sock": "socket",
    "proc_version": "not a format",
}


def write(folder):
    """Builds the folder; returns its top path and the socket (kept open while it is used)."""
    real, top = os.path.join(folder, "real"), os.path.join(folder, "top")
    os.makedirs(real)
    os.makedirs(top)
    shutil.copy(os.path.join(PICKLES, "fr_trace_rank_0"), top)
    shutil.copy(os.path.join(PICKLES, "fr_trace_rank_1"), real)  # only reachable through top/linked
    os.symlink("../real", os.path.join(top, "linked"))
    os.symlink("../top", os.path.join(top, "back"))
    os.symlink("nowhere", os.path.join(top, "dangling"))
    os.symlink("loopb", os.path.join(top, "loopa"))
    os.symlink("loopa", os.path.join(top, "loopb"))
    os.mkfifo(os.path.join(top, "fifo"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.path.join(top, "sock"))
    if os.path.exists("/proc/version"):  # size 0, content when read
        os.symlink("/proc/version", os.path.join(top, "proc_version"))
    locked = os.path.join(top, "locked")
    os.makedirs(locked)
    os.chmod(locked, 0)
    return top, sock


def main():
    a = generator_args(__doc__)
    if a.out:
        write(a.out)
        return 0
    with tempfile.TemporaryDirectory() as d:
        top, sock = write(d)
        try:
            p = check(["analyze", "--format", "json", top], 20, 600, name="analyze an odd folder",
                      stdout=subprocess.PIPE)
        finally:
            sock.close()
            os.chmod(os.path.join(top, "locked"), 0o755)
        doc = json.loads(p.stdout)
        by_file = {}
        for g in doc["diagnostics"]:
            by_file.setdefault(os.path.basename(g["file"]), []).append(g["message"])
        print("hostile: inputs %s" % doc["inputs"])
        if doc["inputs"]["used"] != 2:
            sys.exit("hostile: FAIL: the dump behind the symlinked folder was not read: %s" % doc["inputs"])
        expected = dict(EXPECTED)
        if not os.path.exists("/proc/version"):
            del expected["proc_version"]
        if os.geteuid() != 0:  # root lists any folder
            expected["locked"] = "cannot be listed"
        for name, words in sorted(expected.items()):
            if not any(words in m for m in by_file.get(name, [])):
                sys.exit("hostile: FAIL: no diagnostic for %s saying %r: %s" % (name, words, by_file.get(name)))
        counted = doc["inputs"]["files"]
        if counted < 2 + len(EXPECTED) - (0 if os.path.exists("/proc/version") else 1):
            sys.exit("hostile: FAIL: only %d inputs counted: %s" % (counted, doc["inputs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
