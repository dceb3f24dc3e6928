#!/usr/bin/env python3
"""Load benchmark of `hangdx watch` (docs/performance.md, "hangdx watch";
docs/live.md, "Design for 100,000 ranks"). Not a test: it measures, on
loopback, bounded in time (about 3 minutes for 10,000 ranks):

  probe   one watch polls N fake torch workers (hangdx_fake_workers, NCCL
          shape: dump_nccl_trace_json?includecollectives=false with pg_config's
          rank list, as torch writes it) every --interval; then one rank hangs:
          rounds per second, round time, p50 / p99 request latency, bytes per
          probe, time from the hang to the finding, the watch's memory.
  push    N ranks push reports (hangdx_push_load) to a watch --listen: reports
          per second sustained, p50 / p99, time from the hang to the finding;
          with --redis, the same into Redis.
  agents  A agents (--role agent, N/A ranks each) write progress into Redis, one
          coordinator reads it: its round time, Redis operations per second.

    bench/live_bench.py [--ranks 10000] [--build build] [--only probe,push,agents]
    bench/live_bench.py --smoke     # 100 ranks, probe and push, ~40 s (ctest live_bench_smoke)

Prints each phase's figures and one JSON document (--json FILE to keep it).
With --smoke, exits 1 unless every phase named the hung rank.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, token=None, timeout=60):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("nothing listens on %d" % port)


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):  # peak resident set
                return int(line.split()[1]) / 1024.0
    return 0.0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


class Fleet:
    """N fake workers in two processes (a port and a connection per rank
    make 2 descriptors a rank), modelling one job with one start time."""

    def __init__(self, binary, ranks, tmp, parts=2):
        self.procs, self.files = [], []
        start = time.monotonic_ns()
        per = (ranks + parts - 1) // parts
        for i in range(parts):
            lo, hi = i * per, min(ranks, (i + 1) * per)
            f = os.path.join(tmp, "workers_%d.txt" % i)
            p = subprocess.Popen([binary, "--ranks", str(ranks), "--serve", "%d:%d" % (lo, hi), "--base-port",
                                  "20000", "--start-ns", str(start), "--step", "0.05", "--backend", "nccl",
                                  "--out", f], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            self.files.append(f)
        for p in self.procs:
            line = p.stdout.readline()
            if not line.startswith("ready"):
                raise RuntimeError("fake workers did not start: " + line)
        self.file = os.path.join(tmp, "workers.txt")
        with open(self.file, "w") as out:
            for f in self.files:
                out.write(open(f).read())

    def fault(self, cmd):
        at = time.monotonic_ns()
        for p in self.procs:
            p.stdin.write("%s @%d\n" % (cmd, at))
            p.stdin.flush()
        for p in self.procs:
            p.stdout.readline()
        return at

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


class PeakRss:
    """Samples a process's peak resident set (VmHWM) until it exits."""

    def __init__(self, pid):
        import threading
        self.pid, self.peak, self.stop = pid, 0.0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except OSError:
                return
            time.sleep(0.05)


def watch_finding(w, timeout):
    """The watch's stdout and stderr once it exits, and when (monotonic ns)
    its first document was whole on stdout: the finding is out then, even
    if the watch goes on completing the bundle before it exits."""
    import threading
    out, err, first = [], [], [None]

    def read_out():
        for line in w.stdout:
            out.append(line)
            if first[0] is None and line.startswith("}"):  # a document's last line
                try:
                    json.loads("".join(out))
                    first[0] = time.monotonic_ns()
                except ValueError:
                    pass

    def read_err():
        for line in w.stderr:
            err.append(line)

    threads = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    for t in threads:
        t.start()
    w.wait(timeout=timeout)
    for t in threads:
        t.join(10)
    return "".join(out), "".join(err), first[0] or time.monotonic_ns()


def same_replay(a, bundle, doc):
    """True when `hangdx analyze BUNDLE` gives the watch's first finding
    (kind, culprits, pg, seq)."""
    r = subprocess.run([a.hangdx, "analyze", bundle, "--format", "json"], stdout=subprocess.PIPE, text=True)
    try:
        replay = json.loads(r.stdout)["findings"][0]
    except (ValueError, IndexError, KeyError):
        return False
    f = doc["findings"][0]
    return all(replay.get(k) == f.get(k) for k in ("kind", "culprit_ranks", "pg", "seq"))


def first_document(out):
    """The first JSON document of a watch's stdout (a changed finding may
    follow it)."""
    return json.JSONDecoder().raw_decode(out.lstrip())[0]


def bundle_of(err):
    """The evidence bundle the watch's first FINDING line names."""
    m = re.search(r"FINDING .*; evidence: (\S+); replay", err)
    return m.group(1) if m else None


def investigation_times(err):
    """The first look's and the second step's timings, as the watch logs
    them (a small stall fetched at once logs one line without "first look")."""
    res = {}
    m = re.search(r"details of (\d+) ranks in (\S+) s.*, bundle in (\S+) s, analysis in (\S+) s", err)
    if m:
        res["details_ranks"] = int(m.group(1))
        res["details_s"], res["bundle_s"], res["analysis_s"] = (float(m.group(i)) for i in (2, 3, 4))
    m = re.search(r"analysis in \S+ s \((\S+) s of this thread's CPU\)", err)
    if m:  # the rest of the analysis' wall time waited for the shared cores
        res["analysis_cpu_s"] = float(m.group(1))
    m = re.search(r"every rank's records: details of (\d+) (?:more )?ranks(?: \(with [^)]*\))? in (\S+) s, "
                  r"bundle in (\S+) s, analysis in (\S+) s: (.*)", err)
    if m:
        res["whole_details_s"], res["whole_bundle_s"], res["whole_analysis_s"] = (float(m.group(i)) for i in (2, 3, 4))
        res["whole_evidence"] = m.group(5)
    return res


def keep_log(a, name, out, err):
    """With --keep, the watch's stdout and stderr beside the bundles."""
    if not a.keep:
        return
    os.makedirs(a.keep, exist_ok=True)
    for ext, text in (("log", err), ("out", out)):
        with open(os.path.join(a.keep, "%s.%s" % (name, ext)), "w") as f:
            f.write(text)


def metric(text, name):
    """The value of an unlabelled series in Prometheus text, 0 when absent."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else 0.0


def bench_probe(a, tmp):
    res = {}
    fleet = Fleet(a.fake, a.ranks, tmp)
    port = free_port()
    try:
        w = subprocess.Popen([a.hangdx, "watch", "--workers", fleet.file, "--interval", str(a.interval),
                              "--stall-after", str(a.stall_after), "--fetch-timeout", "10", "--listen",
                              "127.0.0.1:%d" % port, "--exit-on-finding", "--format", "json", "--out",
                              os.path.join(tmp, "probe-out"), "--duration", "300"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_port(port)
        peak = PeakRss(w.pid)
        # The first round asks every worker for its handler list too, and
        # gets the whole ring (fr_trace_json): wait for two rounds.
        deadline = time.time() + 180
        while metric(get("http://127.0.0.1:%d/metrics" % port), "hangdx_poll_duration_seconds_count") < 2:
            if time.time() > deadline:
                raise RuntimeError("no probe round in 180 s")
            time.sleep(0.2)
        m0 = get("http://127.0.0.1:%d/metrics" % port)
        c0, t0 = cpu_s(w.pid), time.time()
        f0 = sum(cpu_s(p.pid) for p in fleet.procs)
        rounds = []
        for _ in range(a.rounds):
            time.sleep(a.interval)
            st = json.loads(get("http://127.0.0.1:%d/status" % port))
            rounds.append(st["last_round"])
        m1 = get("http://127.0.0.1:%d/metrics" % port)
        c1, t1 = cpu_s(w.pid), time.time()
        f1 = sum(cpu_s(p.pid) for p in fleet.procs)

        n = metric(m1, "hangdx_poll_duration_seconds_count") - metric(m0, "hangdx_poll_duration_seconds_count")
        dur = metric(m1, "hangdx_poll_duration_seconds_sum") - metric(m0, "hangdx_poll_duration_seconds_sum")
        probes = metric(m1, "hangdx_probes_total") - metric(m0, "hangdx_probes_total")
        fails = metric(m1, "hangdx_probe_failures_total") - metric(m0, "hangdx_probe_failures_total")
        res["rounds"] = int(n)
        res["round_s_mean"] = dur / n if n else None
        res["round_s_max"] = max(r["seconds"] for r in rounds)
        res["probes_per_s"] = probes / (t1 - t0)
        res["probe_failures"] = int(fails)
        res["latency_p50_s"] = sorted(r["latency_p50_s"] for r in rounds)[len(rounds) // 2]
        res["latency_p99_s"] = sorted(r["latency_p99_s"] for r in rounds)[len(rounds) // 2]
        res["watch_cpu_per_round_s"] = (c1 - c0) / n if n else None
        res["fake_workers_cpu_per_round_s"] = (f1 - f0) / n if n else None
        probe_body = urllib.request.urlopen(urllib.request.Request(
            open(fleet.file).readline().strip() + "/handler/dump_nccl_trace_json?includecollectives=false",
            method="POST"), timeout=10).read()
        res["bytes_per_probe"] = len(probe_body)
        steady_rss = rss_mb(w.pid)
        hang_at = fleet.fault("hang %d" % (a.ranks // 3))
        out, err, found_at = watch_finding(w, 300)
        exited_at = time.monotonic_ns()
        keep_log(a, "probe-watch", out, err)
        if not out:
            raise RuntimeError("the watch found nothing:\n" + err[-3000:])
        doc = first_document(out)
        res["finding"] = "%s %s" % (doc["findings"][0]["kind"], doc["findings"][0]["culprit_ranks"])
        res["hang_to_finding_s"] = (found_at - hang_at) / 1e9
        res["over_stall_after_s"] = res["hang_to_finding_s"] - a.stall_after
        res["hang_to_exit_s"] = (exited_at - hang_at) / 1e9
        res.update(investigation_times(err))
        res["watch_rss_mb_probing"] = steady_rss
        res["watch_peak_rss_mb"] = peak.peak
        bundles = os.listdir(os.path.join(tmp, "probe-out"))
        res["bundle_mb"] = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in
                               os.walk(os.path.join(tmp, "probe-out", bundles[0])) for f in fs) / 1e6
        res["replay_same_finding"] = same_replay(a, os.path.join(tmp, "probe-out", bundles[0]), doc)
    finally:
        fleet.stop()
    return res


def bench_push(a, tmp, redis_url=None):
    res = {}
    port = free_port()
    args = [a.hangdx, "watch", "--listen", "127.0.0.1:%d" % port, "--interval", str(a.interval), "--stall-after",
            str(a.stall_after), "--fetch-timeout", "3", "--exit-on-finding", "--format", "json", "--out",
            os.path.join(tmp, "push-out" + ("-redis" if redis_url else "")), "--duration", "300"]
    if redis_url:
        args += ["--redis", redis_url, "--job", "bench"]
    w = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_port(port)
    peak = PeakRss(w.pid)
    load = subprocess.Popen([a.push, "--url", "http://127.0.0.1:%d" % port, "--ranks", str(a.ranks), "--seconds",
                             str(a.push_seconds), "--connections", str(a.connections), "--hang-rank",
                             str(a.ranks // 3), "--hang-after", str(a.push_seconds - a.stall_after - 8)],
                            stdout=subprocess.PIPE, text=True)
    try:
        # The finding is out when its document is whole on stdout; the
        # watch may go on completing the bundle (every rank's stacks) first.
        out, err, found_at = watch_finding(w, a.push_seconds + 60)
        exited_at = time.monotonic_ns()
        keep_log(a, "push-watch" + ("-redis" if redis_url else ""), out, err)
        doc = first_document(out)
        found = doc["findings"][0]
        res["finding"] = "%s %s" % (found["kind"], found["culprit_ranks"])
        m = re.search(r"FINDING .* (\S+) s after the last progress", err)
        res["detection_s_after_last_progress"] = float(m.group(1)) if m else None
        res.update(investigation_times(err))
        bundle = bundle_of(err)
        res["replay_same_finding"] = bool(bundle) and same_replay(a, bundle, doc)
    except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
        w.kill()
        found_at, exited_at, res["finding"] = None, None, None
    figures = json.loads(load.communicate(timeout=a.push_seconds + 60)[0])
    res.update({k: figures[k] for k in ("reports", "accepted", "per_second", "p50_s", "p99_s")})
    if found_at and figures["hang_ns"]:
        res["hang_to_finding_s"] = (found_at - figures["hang_ns"]) / 1e9
        res["over_stall_after_s"] = res["hang_to_finding_s"] - a.stall_after
        res["hang_to_exit_s"] = (exited_at - figures["hang_ns"]) / 1e9
    res["watch_peak_rss_mb"] = peak.peak
    return res


def redis_ops(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"INFO stats\r\n")
    data = b""
    while b"total_commands_processed" not in data or not data.endswith(b"\r\n"):
        data += s.recv(65536)
    s.close()
    return int(re.search(rb"total_commands_processed:(\d+)", data).group(1))


def bench_agents(a, tmp, redis_port):
    res = {}
    fleet = Fleet(a.fake, a.ranks, tmp)
    url = "redis://127.0.0.1:%d" % redis_port
    per = a.ranks // a.agents
    procs = []
    try:
        for i in range(a.agents):
            procs.append(subprocess.Popen([a.hangdx, "watch", "--role", "agent", "--agent-name", "node%d" % i,
                                           "--workers", fleet.file, "--ranks", "%d-%d" % (i * per, (i + 1) * per - 1),
                                           "--redis", url, "--job", "agents", "--interval", str(a.interval),
                                           "--stall-after", str(a.stall_after), "--fetch-timeout", "10",
                                           "--duration", "300"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        port = free_port()
        coord = subprocess.Popen([a.hangdx, "watch", "--role", "coordinator", "--redis", url, "--job", "agents",
                                  "--interval", str(a.interval), "--stall-after", str(a.stall_after),
                                  "--fetch-timeout", "10", "--listen", "127.0.0.1:%d" % port, "--exit-on-finding",
                                  "--format", "json", "--out", os.path.join(tmp, "agents-out"), "--duration", "300"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_port(port)
        peak = PeakRss(coord.pid)
        time.sleep(a.interval * 4)
        ops0, t0 = redis_ops(redis_port), time.time()
        rounds = []
        for _ in range(a.rounds):
            time.sleep(a.interval)
            rounds.append(json.loads(get("http://127.0.0.1:%d/status" % port))["last_round"]["seconds"])
        ops1, t1 = redis_ops(redis_port), time.time()
        res["agents"] = a.agents
        res["redis_ops_per_s"] = (ops1 - ops0) / (t1 - t0)
        res["coordinator_read_s_median"] = sorted(rounds)[len(rounds) // 2]
        cli = ["redis-cli", "-p", str(redis_port)]
        res["redis_bytes_per_rank_record"] = int(subprocess.run(cli + ["HSTRLEN", "hangdx:agents:ranks", "0"],
                                                                capture_output=True, text=True).stdout or 0)
        res["redis_ranks_hash_mb"] = int(subprocess.run(cli + ["MEMORY", "USAGE", "hangdx:agents:ranks"],
                                                        capture_output=True, text=True).stdout or 0) / 1e6
        res["coordinator_rss_mb"] = rss_mb(coord.pid)
        hang_at = fleet.fault("hang %d" % (a.ranks // 3))
        out, err, found_at = watch_finding(coord, 300)
        exited_at = time.monotonic_ns()
        keep_log(a, "coordinator", out, err)
        res["hang_to_finding_s"] = (found_at - hang_at) / 1e9
        res["over_stall_after_s"] = res["hang_to_finding_s"] - a.stall_after
        res["hang_to_exit_s"] = (exited_at - hang_at) / 1e9
        doc = first_document(out)
        found = doc["findings"][0]
        res["finding"] = "%s %s" % (found["kind"], found["culprit_ranks"])
        res.update(investigation_times(err))
        bundle = bundle_of(err)
        res["replay_same_finding"] = bool(bundle) and same_replay(a, bundle, doc)
        res["coordinator_peak_rss_mb"] = peak.peak
    finally:
        for p in procs:
            p.kill()
            p.wait()
        fleet.stop()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=10000)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--stall-after", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--push-seconds", type=float, default=30.0)
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--connections", type=int, default=8, help="pushers' keep-alive connections (the service has 8 threads)")
    ap.add_argument("--only", default="probe,push,agents")
    ap.add_argument("--json")
    ap.add_argument("--keep", help="copy the evidence bundles here before the temporary folder goes")
    ap.add_argument("--smoke", action="store_true", help="a short check that the benchmark runs")
    a = ap.parse_args()
    if a.smoke:
        a.ranks, a.interval, a.stall_after, a.rounds, a.push_seconds = 100, 0.5, 3.0, 2, 12.0
        a.only = "probe,push" if shutil.which("redis-server") else "probe"
    a.hangdx = os.path.join(a.build, "bin", "hangdx")
    a.fake = os.path.join(a.build, "bin", "hangdx_fake_workers")
    a.push = os.path.join(a.build, "bin", "hangdx_push_load")
    only = a.only.split(",")
    out = {"ranks": a.ranks, "interval_s": a.interval, "stall_after_s": a.stall_after, "cores": os.cpu_count()}
    tmp = tempfile.mkdtemp(prefix="hangdx_live_bench_")
    redis = None
    try:
        if "probe" in only:
            out["probe"] = bench_probe(a, tmp)
            print("probe:", json.dumps(out["probe"]), flush=True)
        if "push" in only or "agents" in only:
            rport = free_port()
            redis = subprocess.Popen([shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(rport),
                                      "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
                                     stdout=subprocess.DEVNULL)
            wait_port(rport)
        if "push" in only:
            out["push"] = bench_push(a, tmp)
            print("push:", json.dumps(out["push"]), flush=True)
            out["push_redis"] = bench_push(a, tmp, "redis://127.0.0.1:%d" % rport)
            print("push with redis:", json.dumps(out["push_redis"]), flush=True)
        if "agents" in only:
            out["agents"] = bench_agents(a, tmp, rport)
            print("agents:", json.dumps(out["agents"]), flush=True)
    finally:
        if redis:
            redis.send_signal(signal.SIGTERM)
            redis.wait()
        if a.keep:
            for d in os.listdir(tmp):
                if d.endswith("-out") or "-out-" in d:
                    shutil.copytree(os.path.join(tmp, d), os.path.join(a.keep, d), dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    want = "missing_rank [%d]" % (a.ranks // 3)
    wrong = [k for k in ("probe", "push", "push_redis", "agents") if k in out and out[k].get("finding") != want]
    if "probe" in out and not out["probe"].get("replay_same_finding"):
        wrong.append("the probe's bundle replayed")
    if a.smoke and wrong:
        print("live_bench: no %s finding in %s" % (want, ", ".join(wrong)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
