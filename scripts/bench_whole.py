#!/usr/bin/env python3
"""Whole-run benchmark: hangdx vs torchfrtrace on the same synthetic dumps.

1. Generates (or reuses, cached by parameters under --workdir) NCCL Flight
   Recorder pickle dumps with scripts/synth/gen_dumps.py.
2. Times `hangdx analyze DIR --format json` and torchfrtrace
   (`torchfrtrace DIR -p nccl_trace_rank_`, else
   `python -m torch.distributed.flight_recorder.fr_trace`) on them,
   alternating (hangdx, torchfrtrace, hangdx, ...), --runs times each:
   wall time and peak RSS of each child (os.wait4 rusage: ru_maxrss of that
   process tree's largest member). Prints medians and the ratio.
3. Determinism: runs hangdx with -j 1 and -j N and checks that the JSON
   documents are byte-identical (also to the timed runs' output).
4. `cat` of the same files to /dev/null, from the page cache (one cat
   first to warm it), alternating with the hangdx runs: the floor issue 13
   sets hangdx against ("within 2x of cat"), with wall and CPU times.

--format json writes the dumps as torch's _dump_nccl_trace_json does
(torchfrtrace reads only pickles, so it is skipped).

usage: bench_whole.py --ranks N --entries E [--pgs P] [--fault KIND]
                      [--format pickle|json] [--skip-cat]
                      [--hangdx PATH] [--skip-torchfrtrace] [--runs 3]
                      [--torchfrtrace-runs K] [--torchfrtrace-timeout S]
                      [--workdir /tmp/hangdx-bench] [--json FILE]
       bench_whole.py --smoke      (16 ranks x 50 entries, 1 run; < 30 s)
Exit status: 0 ok, 1 determinism check failed or a tool failed.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEN = os.path.join(HERE, "synth", "gen_dumps.py")


def run_measured(cmd, stdout_path, timeout, stdin_path=None):
    """Runs cmd (stdin from stdin_path when given); returns dict(wall_s, maxrss_mb, rc, timed_out, user_s, sys_s)."""
    with open(stdout_path, "wb") as out, open(stdin_path or os.devnull, "rb") as inp:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=inp, stdout=out, stderr=subprocess.STDOUT)
        timed_out = False
        delay = 0.001
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.perf_counter() - t0 > timeout:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                timed_out = True
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "maxrss_mb": ru.ru_maxrss / 1024.0, "rc": p.returncode,
            "timed_out": timed_out, "user_s": ru.ru_utime, "sys_s": ru.ru_stime}


def torchfrtrace_cmd():
    exe = shutil.which("torchfrtrace")
    if exe:
        return [exe]
    return [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace"]


def ensure_dumps(a):
    name = "r%d_e%d_p%d_%s_%s_s%d" % (a.ranks, a.entries, a.pgs, a.fault, a.format, a.seed)
    d = os.path.join(a.workdir, name)
    if os.path.exists(d + ".done"):
        print("dumps: reusing %s" % d)
        return d, 0.0
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(a.workdir, exist_ok=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, GEN, "--ranks", str(a.ranks), "--entries", str(a.entries),
                    "--pgs", str(a.pgs), "--fault", a.fault, "--format", a.format,
                    "--seed", str(a.seed), "--out", d], check=True)
    open(d + ".done", "w").close()
    return d, time.perf_counter() - t


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def cat_cmd(d, out):
    """`cat` of every file in d (through xargs when the names would not fit one command line)."""
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    if sum(len(f) + 1 for f in files) < 100000:
        return ["cat"] + files, None
    lst = os.path.join(out, "cat_files.txt")
    with open(lst, "wb") as f:
        f.write(b"\0".join(x.encode() for x in files))
    return ["xargs", "-0", "cat"], lst


def summarize(runs):
    ok = [r for r in runs if not r["timed_out"]]
    walls = [r["wall_s"] for r in ok] or [float("nan")]
    cpus = [r["user_s"] + r["sys_s"] for r in ok] or [float("nan")]
    return {"median_s": statistics.median(walls), "min_s": min(walls), "median_cpu_s": statistics.median(cpus),
            "max_rss_mb": max(r["maxrss_mb"] for r in runs),
            "runs": len(runs), "timed_out": any(r["timed_out"] for r in runs),
            "rcs": sorted({r["rc"] for r in runs})}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--entries", type=int)
    ap.add_argument("--pgs", type=int, default=3)
    ap.add_argument("--fault", default="missing_rank")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hangdx", default=os.path.join(ROOT, "build", "bin", "hangdx"))
    ap.add_argument("--format", choices=("pickle", "json"), default="pickle",
                    help="dump format (json: torchfrtrace is skipped, it reads pickles only)")
    ap.add_argument("--skip-torchfrtrace", action="store_true")
    ap.add_argument("--skip-cat", action="store_true", help="do not time cat of the same files")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--torchfrtrace-runs", type=int, default=None,
                    help="torchfrtrace runs (default: --runs), alternating with the first hangdx runs")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="-j for the timed hangdx runs and the -j N determinism run")
    ap.add_argument("--timeout", type=float, default=3600, help="per hangdx run, seconds")
    ap.add_argument("--torchfrtrace-timeout", type=float, default=1200,
                    help="per torchfrtrace run, seconds (killed and reported as capped)")
    ap.add_argument("--workdir", default="/tmp/hangdx-bench")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--smoke", action="store_true", help="16 ranks x 50 entries, 1 run (CI)")
    a = ap.parse_args(argv)
    if a.smoke:
        a.ranks, a.entries = a.ranks or 16, a.entries or 50
        a.runs = 1
        a.torchfrtrace_timeout = min(a.torchfrtrace_timeout, 20)
    if not a.ranks or not a.entries:
        ap.error("--ranks and --entries are required (or --smoke)")
    if a.format == "json" and not a.skip_torchfrtrace:
        print("note: torchfrtrace reads pickles only: skipped for --format json")
        a.skip_torchfrtrace = True
    if not os.access(a.hangdx, os.X_OK):
        ap.error("no hangdx binary at %s (build it, or pass --hangdx)" % a.hangdx)

    dumps, gen_s = ensure_dumps(a)
    out = os.path.join(a.workdir, "out")
    os.makedirs(out, exist_ok=True)
    tag = os.path.basename(dumps)
    size = dir_bytes(dumps)
    print("dumps: %s  %d files, %.1f MB%s" % (dumps, len(os.listdir(dumps)), size / 1e6,
                                               "  (generated in %.1f s)" % gen_s if gen_s else ""))

    hx = lambda j, o: [a.hangdx, "analyze", dumps, "--format", "json", "-j", str(j), "-o", o]  # noqa: E731
    tf = torchfrtrace_cmd() + [dumps, "-p", "nccl_trace_rank_"]
    res = {"ranks": a.ranks, "entries": a.entries, "pgs": a.pgs, "fault": a.fault, "format": a.format,
           "bytes": size, "threads": a.threads, "hangdx": [], "torchfrtrace": [], "cat": []}
    ok = True
    tf_capped = False
    tf_runs = a.runs if a.torchfrtrace_runs is None else a.torchfrtrace_runs
    cat, cat_in = cat_cmd(dumps, out)
    if not a.skip_cat:
        run_measured(cat, os.devnull, a.timeout, cat_in)  # warms the page cache
    res["load_before"] = os.getloadavg()[0]
    for i in range(a.runs):
        if not a.skip_cat:
            r = run_measured(cat, os.devnull, a.timeout, cat_in)
            res["cat"].append(r)
            print("run %d cat          %8.2f s  cpu %6.2f s  rc=%d" % (i, r["wall_s"], r["user_s"] + r["sys_s"],
                                                                      r["rc"]))
        o = os.path.join(out, "%s.hangdx.%d.json" % (tag, i))
        r = run_measured(hx(a.threads, o), o + ".log", a.timeout)
        res["hangdx"].append(r)
        print("run %d hangdx       %8.2f s  cpu %6.2f s  %8.1f MB  rc=%d  (load %.1f)"
              % (i, r["wall_s"], r["user_s"] + r["sys_s"], r["maxrss_mb"], r["rc"], os.getloadavg()[0]))
        if r["rc"] not in (0, 1):
            ok = False
        if not a.skip_torchfrtrace and not tf_capped and i < tf_runs:
            log = os.path.join(out, "%s.torchfrtrace.%d.txt" % (tag, i))
            r = run_measured(tf, log, a.torchfrtrace_timeout)
            res["torchfrtrace"].append(r)
            print("run %d torchfrtrace %8.2f s  %8.1f MB  rc=%d%s"
                  % (i, r["wall_s"], r["maxrss_mb"], r["rc"],
                     "  CAPPED at %.0f s" % a.torchfrtrace_timeout if r["timed_out"] else ""))
            if r["timed_out"]:
                tf_capped = True  # do not spend the cap again
    # Determinism: -j 1 vs -j N.
    o1 = os.path.join(out, "%s.j1.json" % tag)
    on = os.path.join(out, "%s.jN.json" % tag)
    r1 = run_measured(hx(1, o1), o1 + ".log", a.timeout)
    rn = run_measured(hx(max(2, a.threads), on), on + ".log", a.timeout)
    docs = [open(p, "rb").read() for p in (o1, on) if os.path.exists(p)]
    timed = [os.path.join(out, "%s.hangdx.%d.json" % (tag, i)) for i in range(a.runs)]
    docs += [open(p, "rb").read() for p in timed if os.path.exists(p)]
    same = len(docs) == 2 + a.runs and all(d == docs[0] for d in docs)
    res["deterministic"] = same
    res["hangdx_j1"] = r1
    res["hangdx_jN"] = rn
    ok = ok and same
    print("hangdx -j 1: %.2f s %.1f MB;  -j %d: %.2f s %.1f MB;  JSON identical across -j 1, -j %d and "
          "the timed runs: %s" % (r1["wall_s"], r1["maxrss_mb"], max(2, a.threads), rn["wall_s"],
                                  rn["maxrss_mb"], max(2, a.threads), "yes" if same else "NO"))
    try:
        verdict = json.loads(docs[0]).get("verdict", "") if docs else ""
    except ValueError:
        verdict = "(unparsable JSON)"
    res["verdict"] = verdict
    print("hangdx verdict: %s" % verdict[:200])
    # The generator wrote the injected fault's culprits beside the dumps.
    expected_path = dumps + ".expected.json"
    if docs and os.path.exists(expected_path):
        with open(expected_path) as f:
            want = json.load(f).get("culprit_ranks")
        try:
            findings = json.loads(docs[0]).get("findings") or []
        except ValueError:
            findings = []
        got = findings[0].get("culprit_ranks") if findings else None
        res["verdict_right"] = got == want
        print("culprits: hangdx %s, injected %s: %s" % (got, want, "right" if got == want else "WRONG"))
        ok = ok and got == want

    hs = summarize(res["hangdx"])
    res["hangdx_summary"] = hs
    res["load_after"] = os.getloadavg()[0]
    print("\n%-13s %10s %10s %12s %12s" % ("tool", "median s", "min s", "median cpu s", "peak RSS MB"))
    print("%-13s %10.2f %10.2f %12.2f %12.1f" % ("hangdx -j%d" % a.threads, hs["median_s"], hs["min_s"],
                                                 hs["median_cpu_s"], hs["max_rss_mb"]))
    if res["cat"]:
        cs = summarize(res["cat"])
        res["cat_summary"] = cs
        # (cat's ru_maxrss is the forked Python's, not its own: not shown)
        print("%-13s %10.2f %10.2f %12.2f %12s" % ("cat", cs["median_s"], cs["min_s"], cs["median_cpu_s"], "-"))
        res["cat_ratio"] = hs["median_s"] / max(cs["median_s"], 1e-9)
        res["cat_cpu_ratio"] = hs["median_cpu_s"] / max(cs["median_cpu_s"], 1e-9)
        print("hangdx / cat of the same files (page cache warm): %.1fx wall, %.1fx CPU  (%.0f MB/s hangdx, "
              "%.0f MB/s cat; load %.1f -> %.1f)"
              % (res["cat_ratio"], res["cat_cpu_ratio"], size / 1e6 / hs["median_s"],
                 size / 1e6 / max(cs["median_s"], 1e-9), res["load_before"], res["load_after"]))
    if res["torchfrtrace"]:
        ts = summarize(res["torchfrtrace"])
        res["torchfrtrace_summary"] = ts
        if ts["timed_out"] and not [r for r in res["torchfrtrace"] if not r["timed_out"]]:
            print("%-13s %10s %10s %12s %12.1f" % ("torchfrtrace", "> %.0f" % a.torchfrtrace_timeout, "-", "-",
                                                   ts["max_rss_mb"]))
            res["ratio"] = "> %.1f" % (a.torchfrtrace_timeout / hs["median_s"])
        else:
            print("%-13s %10.2f %10.2f %12.2f %12.1f" % ("torchfrtrace", ts["median_s"], ts["min_s"],
                                                         ts["median_cpu_s"], ts["max_rss_mb"]))
            res["ratio"] = ts["median_s"] / hs["median_s"]
            if set(ts["rcs"]) - {0}:
                print("note: torchfrtrace exited %s (see %s)" % (ts["rcs"], out))
        print("speed-up (torchfrtrace median / hangdx median): %s" %
              (res["ratio"] if isinstance(res["ratio"], str) else "%.1fx" % res["ratio"]))
        if isinstance(res["ratio"], float):
            print("memory (torchfrtrace / hangdx peak RSS): %.1fx"
                  % (ts["max_rss_mb"] / max(hs["max_rss_mb"], 1e-9)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if not ok:
        print("FAILED: %s" % ("outputs differ between thread counts" if not same else "hangdx failed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
