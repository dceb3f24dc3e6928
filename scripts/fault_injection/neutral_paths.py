#!/usr/bin/env python3
"""Replaces this machine's absolute path prefixes in collected artifacts with
neutral ones of the same byte length, so committed dumps, logs and stacks
carry no path of the machine they were made on.

Same length matters: pickle strings are length-prefixed, so a replacement of
another length would break every dump. Prefixes replaced: the checkout's root
(stack frames of scripts/fault_injection/worker.py), the Python prefix
(site-packages/torch frames) and the user's home and temp folders.

Usage (run_scenarios.py calls it on what it wrote):
  python3 scripts/fault_injection/neutral_paths.py FILE_OR_DIR...
"""
import os
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def neutral(prefix, nice):
    """A neutral path of len(prefix) bytes: `nice` when it fits exactly,
    else `nice` cut or padded with '_' (no '/' at the end, as the prefix)."""
    n = len(prefix)
    if len(nice) >= n:
        return nice[:n]
    return nice + "_" * (n - len(nice))


def replacements():
    """(old, new) byte pairs, longest old first so nested prefixes are safe."""
    pairs = {}
    py = sysconfig.get_paths().get("purelib", "")  # .../lib/python3.11/site-packages
    py_prefix = py.split("/lib/python")[0] if "/lib/python" in py else sys.prefix
    for old, nice in ((REPO, "/opt/train"),
                      (py_prefix, "/opt/conda/envs/train/3.11.7"),
                      (os.path.expanduser("~"), "/home"),
                      (tempfile.gettempdir(), "/var")):
        if old and old != "/" and len(old) >= 4:
            pairs[old.encode()] = neutral(old, nice).encode()
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def fix_file(path, pairs):
    with open(path, "rb") as f:
        data = f.read()
    new = data
    for old, rep in pairs:
        assert len(old) == len(rep)
        new = new.replace(old + b"/", rep + b"/")
    if new != data:
        with open(path, "wb") as f:
            f.write(new)
        return True
    return False


def main(argv):
    pairs = replacements()
    changed = 0
    for top in argv:
        paths = [top] if os.path.isfile(top) else [
            os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
        for p in paths:
            changed += fix_file(p, pairs)
    print("neutral_paths: %d files rewritten" % changed)


if __name__ == "__main__":
    main(sys.argv[1:])
