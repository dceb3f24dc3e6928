#!/usr/bin/env python3
"""Compare PyTorch's Flight Recorder analyzer (torchfrtrace) with hangdx on the
fault-injection scenarios in testdata/torch/ (see testdata/torch/README.md).

For every <root>/<scenario>/expected.json it runs
  torchfrtrace <scenario>/pickle -p fr_trace_rank_            (retried with
      --allow-incomplete-ranks when that fails on missing dumps)
  hangdx analyze <scenario>/pickle --format json              (if a binary is found)
and prints a Markdown table.  Raw analyzer output goes to --log-dir if given.

  python3 scripts/compare_torchfrtrace.py [--root testdata/torch] [--hangdx build/hangdx]
"""
import argparse
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torchfrtrace_cmd():
    exe = shutil.which("torchfrtrace")
    if exe:
        return [exe]
    return [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace"]


def run(cmd, timeout=300):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode("utf-8", "replace") + "\n<timeout>"
    except OSError as e:
        return 127, str(e)


def summarize_frt(rc, text):
    """One-line summary of torchfrtrace's verdict."""
    parts = []
    if "Traceback (most recent call last)" in text:
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else "?"
        return "crash: " + last.strip()[:120]
    # "Not all ranks joining collective, sequence number: N" ... "missing ranks: {..}"
    miss = []
    for m in re.finditer(r"Not all ranks joining collective, sequence number: (\S+)", text):
        block = text[m.end():].split("Not all ranks joining", 1)[0]
        mr = re.search(r"missing ranks: (\{[^}]*\})", block)
        ws = re.search(r"world size: (\d+)", block)
        miss.append("%s:%s" % (m.group(1), mr.group(1) if mr else
                               "(none listed, world size %s)" % (ws.group(1) if ws else "?")))
    if miss:
        shown = miss if len(miss) <= 3 else miss[:3] + ["... %d in all" % len(miss)]
        parts.append("not all ranks joining at seq " + ", ".join(shown))
    for m in re.finditer(r"Collective sequence number: (\S+) has errors", text):
        tail = text[m.end():]
        cr = re.findall(r"Culprit rank (\d+); ([^,\n]*)", tail.split("\n\n")[0] if False else tail[:2000])
        blamed = ", ".join("rank %s %s" % (r, why.strip()[:60]) for r, why in cr[:3]) or "?"
        parts.append("seq %s errors: %s" % (m.group(1), blamed))
    for m in re.finditer(r"Input/output mismatch in the collective sequence number: (\S+)", text):
        parts.append("seq %s: all_to_all numel mismatch" % m.group(1))
    nund = len(re.findall(r"We cannot decide what's wrong", text))
    if nund:
        mr = re.search(r"missed FR dumps from ranks \((\{[^}]*\})\)", text)
        parts.append("%d undecidable (no dumps from %s)" % (nund, mr.group(1) if mr else "?"))
    nok = text.count("No errors found for this collective entry")
    if nok:
        parts.append("No errors found (x%d)" % nok)
    if "Too many mismatches" in text:
        parts.append("aborted: too many mismatches")
    if not parts:
        parts.append("rc=%d, no verdict lines" % rc)
    return "; ".join(parts)


def run_torchfrtrace(pickle_dir):
    base = torchfrtrace_cmd() + [pickle_dir, "-p", "fr_trace_rank_"]
    rc, out = run(base)
    out = "$ %s\n%s" % (" ".join(base), out)
    used = base
    if rc != 0 and ("missing" in out.lower() or "AssertionError" in out):
        used = base + ["--allow-incomplete-ranks"]
        rc2, out2 = run(used)
        out = out + "\n$ %s\n%s" % (" ".join(used), out2)
        rc = rc2
        summary = "[--allow-incomplete-ranks] " + summarize_frt(rc2, out2)
    else:
        summary = summarize_frt(rc, out)
    return rc, out, summary, used


def repair_pg_config(src, dst):
    """Copies the gloo dumps in `src` to `dst` with pg_config rewritten the way
    ProcessGroupNCCL writes it (one entry per pg name with its member ranks),
    so that torchfrtrace's matching logic can be judged on the same hangs
    (on the raw gloo dumps it crashes before matching anything).

    Members: the world listed under gloo's '' entry (or every rank with a dump)
    for the default pg; for other pgs, the ranks whose dumps record them.
    This is the repair a user would do by hand; hangdx needs none of it."""
    dumps = {}
    for name in sorted(os.listdir(src)):
        m = re.search(r"(\d+)$", name)
        if not m:
            continue
        with open(os.path.join(src, name), "rb") as f:
            dumps[int(m.group(1))] = (name, pickle.load(f))
    world = set(dumps)
    for _, d in dumps.values():
        listed = (d.get("pg_config") or {}).get("", {}).get("ranks", "[]")
        world |= set(json.loads(listed))
    members, descs = {}, {}
    for r, (_, d) in dumps.items():
        for e in d.get("entries", []):
            pg_name, desc = e["process_group"]
            members.setdefault(pg_name, set()).add(r)
            descs[pg_name] = desc
    for r, (name, d) in dumps.items():
        cfg = {}
        for pg_name, ranks in members.items():
            ranks = world if pg_name == "0" else ranks
            cfg[pg_name] = {"name": pg_name, "desc": descs[pg_name], "ranks": str(sorted(ranks))}
        d["pg_config"] = cfg
        with open(os.path.join(dst, name), "wb") as f:
            pickle.dump(d, f, protocol=2)


def run_hangdx(hangdx, d):
    if not hangdx:
        return None, "", "n/a", None
    rc, out = run([hangdx, "analyze", d, "--format", "json"])
    try:
        j = json.loads(out[out.index("{"):]) if "{" in out else None
    except ValueError:
        j = None
    if j is None:
        return rc, out, "no JSON (rc=%d)" % rc, None
    f = j.get("findings") or []
    if not f:
        return rc, out, "no findings (hang=%s)" % j.get("hang"), j
    return rc, out, "%s %s (hang=%s)" % (f[0].get("kind"), sorted(f[0].get("culprit_ranks") or []),
                                       j.get("hang")), j


def judge_frt(exp, summary):
    """Loose right/wrong for torchfrtrace's free-text verdict."""
    kind, culprits = exp["kind"], exp["culprit_ranks"]
    if summary.startswith("crash") or "crash:" in summary:
        return "wrong (crash)"
    if kind == "none" or kind == "straggler":
        bad = ("missing ranks" in summary) or ("errors:" in summary)
        return "wrong" if bad else "right"
    if "No errors found" in summary and "missing" not in summary and "errors:" not in summary:
        return "wrong (no error)"
    m = re.findall(r":\{([^}]*)\}", summary) + re.findall(r"rank (\d+)", summary)
    blamed = set()
    for x in m:
        blamed |= {int(v) for v in re.findall(r"\d+", x)}
    return "right" if blamed and blamed <= set(culprits) | set() and set(culprits) <= blamed else \
        ("partly" if blamed & set(culprits) else "wrong")


def judge_hangdx(exp, j, rc):
    if j is None:
        return "n/a"
    f = j.get("findings") or []
    if exp["kind"] == "none":
        ok = rc == 0 and not any(x.get("severity") == "error" for x in f)
        return "right" if ok else "wrong"
    if not f:
        return "wrong (no finding)"
    ok = f[0].get("kind") == exp["kind"] and sorted(f[0].get("culprit_ranks") or []) == exp["culprit_ranks"]
    if exp["kind"] == "straggler" and rc != 0:
        ok = False
    return "right" if ok else "wrong"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(REPO, "testdata", "torch"))
    ap.add_argument("--hangdx", default=os.environ.get("HANGDX_BIN") or shutil.which("hangdx"))
    ap.add_argument("--log-dir", help="write each analyzer's raw output here")
    ap.add_argument("scenario", nargs="*", help="only these scenarios")
    a = ap.parse_args()
    if a.hangdx and not os.path.exists(a.hangdx) and not shutil.which(a.hangdx):
        print("warning: hangdx binary %s not found; hangdx column is n/a" % a.hangdx, file=sys.stderr)
        a.hangdx = None
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    names = a.scenario or sorted(n for n in os.listdir(a.root)
                                 if os.path.isfile(os.path.join(a.root, n, "expected.json")))
    print("| scenario | expected (kind, culprits) | torchfrtrace verdict | torchfrtrace | "
          "torchfrtrace, pg_config repaired | repaired | hangdx verdict | hangdx |")
    print("|---|---|---|---|---|---|---|---|")
    for n in names:
        d = os.path.join(a.root, n)
        with open(os.path.join(d, "expected.json")) as f:
            exp = json.load(f)
        rc, out, summary, used = run_torchfrtrace(os.path.join(d, "pickle"))
        with tempfile.TemporaryDirectory() as fixed:
            repair_pg_config(os.path.join(d, "pickle"), fixed)
            _, rout, rsummary, _ = run_torchfrtrace(fixed)
        hrc, hout, hsum, hj = run_hangdx(a.hangdx, os.path.join(d, "pickle"))
        if a.log_dir:
            with open(os.path.join(a.log_dir, n + ".torchfrtrace.log"), "w") as f:
                f.write(out)
            if a.hangdx:
                with open(os.path.join(a.log_dir, n + ".hangdx.json"), "w") as f:
                    f.write(hout)
        if a.log_dir:
            with open(os.path.join(a.log_dir, n + ".torchfrtrace-repaired.log"), "w") as f:
                f.write(rout)
        print("| %s | %s %s | %s | %s | %s | %s | %s | %s |" % (
            n, exp["kind"], exp["culprit_ranks"], summary.replace("|", "/"), judge_frt(exp, summary),
            rsummary.replace("|", "/"), judge_frt(exp, rsummary), hsum, judge_hangdx(exp, hj, hrc)))


if __name__ == "__main__":
    main()
