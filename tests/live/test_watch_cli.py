"""`hangdx watch` end to end, without PyTorch: fake torch workers
(hangdx_fake_workers), pushed reports, Redis, agents, hooks."""
import http.server as httpserver
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import free_port, http, sigkill, wait_for, wait_listening

FAST = ["--interval", "0.2", "--stall-after", "1", "--fetch-timeout", "1"]


def bundle_of(stderr):
    for line in stderr.splitlines():
        if "FINDING" in line and "evidence: " in line:
            return line.split("evidence: ")[1].split(";")[0]
    return None


def test_missing_rank_is_found_and_the_bundle_replays(hangdx_bin, fleet, procs, tmp_path):
    f = fleet(6)
    w = procs.start([hangdx_bin, "watch", "--workers", f.file, *FAST, "--exit-on-finding", "--format", "json",
                     "--duration", "30", "--out", str(tmp_path / "out")], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.time()
    assert f.send("hang 4") == "ok"
    out, err = w.communicate(timeout=30)
    elapsed = time.time() - t0
    assert w.returncode == 1, err
    doc = json.loads(out)
    assert doc["findings"][0]["kind"] == "missing_rank"
    assert doc["findings"][0]["culprit_ranks"] == [4]
    assert elapsed < 1 + 2 * 0.2 + 3, err  # stall-after + 2 intervals + slack
    bundle = bundle_of(err)
    assert bundle and os.path.isdir(os.path.join(bundle, "fr")), err
    assert sorted(os.listdir(os.path.join(bundle, "fr"))) == ["rank_%d.json" % r for r in range(6)]
    assert os.path.getsize(os.path.join(bundle, ".watch", "probes.jsonl")) > 0
    replay = subprocess.run([hangdx_bin, "analyze", bundle, "--format", "json"],
                            capture_output=True, text=True)
    assert replay.returncode == 1
    assert json.loads(replay.stdout) == doc  # the same analysis, the same document


def test_a_large_stall_is_reported_from_a_first_look_then_the_bundle_completed(hangdx_bin, fleet, procs, tmp_path):
    # 100 NCCL-shaped ranks (over the 64 fetched at once): the finding from
    # rank 37 and 4 others in full, the rest by their counters; then every
    # rank's records in the bundle, which replays to the same finding.
    f = fleet(100, backend="nccl")
    w = procs.start([hangdx_bin, "watch", "--workers", f.file, *FAST, "--exit-on-finding", "--format", "json",
                     "--duration", "40", "--out", str(tmp_path / "out")], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert f.send("hang 37") == "ok"
    out, err = w.communicate(timeout=40)
    assert w.returncode == 1, err
    doc = json.loads(out)
    assert [(x["kind"], x["culprit_ranks"]) for x in doc["findings"] if x["severity"] == "error"] == \
        [("missing_rank", [37])], err
    assert "fetching details from 5 of its 100 ranks first" in err, err
    assert "the same finding (missing_rank pg 0 seq" in err, err
    bundle = bundle_of(err)
    assert sorted(os.listdir(os.path.join(bundle, "fr"))) == sorted("rank_%d.json" % r for r in range(100))
    assert "progress" not in open(os.path.join(bundle, "wait_state.json")).read()
    replay = subprocess.run([hangdx_bin, "analyze", bundle, "--format", "json"], capture_output=True, text=True)
    assert replay.returncode == 1
    first = doc["findings"][0]
    again = json.loads(replay.stdout)["findings"][0]
    assert [again[k] for k in ("kind", "culprit_ranks", "pg", "seq")] == \
        [first[k] for k in ("kind", "culprit_ranks", "pg", "seq")]
    assert json.loads(replay.stdout) == json.load(open(os.path.join(bundle, ".watch", "report.json")))


def test_push_service_refuses_hostile_requests_and_counts_them(hangdx_bin, procs, tmp_path):
    port = free_port()
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    w = procs.start([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--token-file", str(token),
                     "--max-report-bytes", "65536", *FAST, "--duration", "60"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    url = "http://127.0.0.1:%d" % port
    beat = {"hangdx_report": 1, "rank": 0, "pid": 1, "seq": 0}
    assert http("POST", url + "/v1/report", beat)[0] == 401
    assert http("POST", url + "/v1/report", beat, token="wrong")[0] == 401
    assert http("POST", url + "/v1/report", b"x" * 100000, token="t0ken")[0] == 413
    assert http("POST", url + "/v1/report", b"{\"hangdx_report\": 1, ", token="t0ken")[0] == 400
    assert http("POST", url + "/v1/report", {"hangdx_report": 1, "rank": "zero"}, token="t0ken")[0] == 400
    # A slowloris client and a huge chunked upload, while a normal report goes through.
    slow = socket.create_connection(("127.0.0.1", port))
    slow.send(b"POST /v1/report HTTP/1.1\r\nHost: x\r\n")
    big = socket.create_connection(("127.0.0.1", port))
    big.send(b"POST /v1/report HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nTransfer-Encoding: chunked\r\n\r\n")
    try:
        for _ in range(200):
            big.send(b"1000\r\n" + b"a" * 4096 + b"\r\n")
    except OSError:
        pass  # cut off once past the limit
    t0 = time.time()
    assert http("POST", url + "/v1/report", beat, token="t0ken")[0] == 200
    assert time.time() - t0 < 2
    status, metrics = http("GET", url + "/metrics", token="t0ken")
    assert status == 200
    assert 'hangdx_reports_rejected_total{reason="unauthorized"} 2' in metrics
    assert 'hangdx_reports_rejected_total{reason="too_large"} 2' in metrics
    assert 'hangdx_reports_rejected_total{reason="malformed"} 2' in metrics
    assert "hangdx_reports_total 1" in metrics
    assert 'rank="' not in metrics
    assert http("GET", url + "/status")[0] == 401
    status = json.loads(http("GET", url + "/status", token="t0ken")[1])
    assert status["ranks"] == 1
    slow.close()
    big.close()
    w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0


def _report(rank, seq, enq, comp, entries):
    def entry(s, retired):
        return {"record_id": s - 1, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": s,
                "p2p_seq_id": 0, "op_id": s, "profiling_name": "gloo:all_reduce",
                "time_created_ns": 1700000000000000000 + s, "input_sizes": [[4]], "input_dtypes": ["Float"],
                "output_sizes": [[4]], "output_dtypes": ["Float"], "state": "scheduled", "retired": retired,
                "timeout_ms": 600000, "is_p2p": False, "thread_id": "1", "thread_name": "main"}
    fr = {"version": "2.10", "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1, 2]"}},
          "pg_status": {"0": {"last_enqueued_collective": str(enq), "last_started_collective": "-1",
                              "last_completed_collective": str(comp)}},
          "entries": [entry(s, r) for s, r in entries]}
    return {"hangdx_report": 1, "rank": rank, "pid": 1000 + rank, "seq": seq, "world_size": 3, "fr": fr}


class Pusher:
    """Three ranks pushing: all finish seq 1-3, ranks 0 and 2 enter seq 4,
    rank 1 never does; then heartbeats. Answers to "want stacks"."""

    def __init__(self, url):
        self.url, self.seq, self.stop = url, 0, False
        self.thread = threading.Thread(target=self.beat, daemon=True)

    def post(self, body):
        try:
            return http("POST", self.url + "/v1/report", body, token="k", timeout=2)
        except OSError:
            return 0, ""

    def history(self):
        for rank in range(3):
            self.seq += 1
            assert self.post(_report(rank, self.seq, 3, 3, [(1, True), (2, True), (3, True)]))[0] == 200
        for rank in (0, 2):
            self.seq += 1
            assert self.post(_report(rank, self.seq, 4, 3, [(4, False)]))[0] == 200

    def beat(self):
        while not self.stop:
            for rank in range(3):
                self.seq += 1
                enq = 3 if rank == 1 else 4
                status, body = self.post(_report(rank, self.seq, enq, 3, []))
                if "stacks" in body:
                    self.seq += 1
                    self.post({"hangdx_report": 1, "rank": rank, "pid": 1000 + rank, "seq": self.seq,
                               "stacks": "Thread 0x00000000000000%02d (most recent call first):\n"
                                         "  File \"train.py\", line 9 in step\n" % rank})
            time.sleep(0.2)


def test_redis_resume_after_sigkill_loses_no_report_and_repeats_no_finding(hangdx_bin, procs, tmp_path, redis_url):
    port = free_port()
    (tmp_path / "token").write_text("k")
    args = [hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--token-file", str(tmp_path / "token"),
            "--redis", redis_url, "--job", "resume", "--interval", "0.2", "--stall-after", "3",
            "--fetch-timeout", "1", "--out", str(tmp_path / "out"), "--format", "json", "--duration", "60"]
    first = procs.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    pusher = Pusher("http://127.0.0.1:%d" % port)
    pusher.history()  # acknowledged by the first watch only
    time.sleep(0.5)
    sigkill(first)  # before the stall is due
    second = procs.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    pusher.thread.start()
    # The second watch finds the hang from reports only the first one received.
    found = wait_for(lambda: json.loads(http("GET", "http://127.0.0.1:%d/findings" % port, token="k")[1])["findings"],
                     20)
    assert found, "no finding after the restart"
    assert found[0]["finding"]["kind"] == "missing_rank"
    assert found[0]["finding"]["culprit_ranks"] == [1]
    fr0 = json.load(open(os.path.join(found[0]["bundle"], "fr", "rank_0.json")))
    assert [e["collective_seq_id"] for e in fr0["entries"]] == [1, 2, 3, 4]
    time.sleep(0.5)
    sigkill(second)
    out2 = second.stdout.read()
    assert json.loads(out2)["findings"][0]["culprit_ranks"] == [1]
    # A third watch, same stall: resumes, and says nothing new.
    third = procs.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    time.sleep(5)
    status = json.loads(http("GET", "http://127.0.0.1:%d/status" % port, token="k")[1])
    assert status["findings"] == 1
    pusher.stop = True
    third.send_signal(signal.SIGTERM)
    out3, err3 = third.communicate(timeout=10)
    assert out3 == "", out3
    assert "resumed from redis" in err3
    assert "FINDING" not in err3, err3


def test_agents_and_coordinator_share_redis(hangdx_bin, fleet, procs, tmp_path, redis_url):
    f = fleet(8)
    common = ["--redis", redis_url, "--job", "scale", *FAST, "--duration", "40"]
    for name, ranks in (("node0", "0-3"), ("node1", "4-7")):
        procs.start([hangdx_bin, "watch", "--role", "agent", "--agent-name", name, "--workers", f.file,
                     "--ranks", ranks, *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    coord = procs.start([hangdx_bin, "watch", "--role", "coordinator", *common, "--exit-on-finding", "--format",
                         "json", "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
    time.sleep(1.5)
    f.send("hang 6")
    out, err = coord.communicate(timeout=40)
    assert coord.returncode == 1, err
    doc = json.loads(out)
    assert doc["findings"][0]["kind"] == "missing_rank"
    assert doc["findings"][0]["culprit_ranks"] == [6]


def test_webhook_gets_an_alertmanager_alert(hangdx_bin, fleet, procs, tmp_path):
    got = []

    class Receiver(httpserver.BaseHTTPRequestHandler):
        def do_POST(self):
            got.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    server = httpserver.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    f = fleet(4)
    w = procs.start([hangdx_bin, "watch", "--workers", f.file, *FAST, "--duration", "5", "--out",
                     str(tmp_path / "out"), "--webhook", "http://127.0.0.1:%d/alerts" % server.server_port,
                     "--hook-command", "cat > %s" % (tmp_path / "record.json")],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    f.send("kill 2")
    out, err = w.communicate(timeout=30)
    assert w.returncode == 0, err
    assert "crashed_rank" in out
    assert wait_for(lambda: got, 5), err
    path, alert = got[0]
    assert path == "/alerts"
    assert alert["version"] == "4" and alert["status"] == "firing"
    a = alert["alerts"][0]
    assert a["labels"]["alertname"] == "HangdxHang"
    assert a["labels"]["kind"] == "crashed_rank"
    assert a["annotations"]["culprit_ranks"] == "2"
    record = json.load(open(tmp_path / "record.json"))
    assert record["finding"]["culprit_ranks"] == [2]
    server.shutdown()


def test_discovery_from_torchs_tcpstore_never_writes_it(hangdx_bin, fleet, procs, tmp_path):
    dist = pytest.importorskip("torch.distributed")
    import datetime
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=30))
    f = fleet(4)
    prefixed = dist.PrefixStore("debug_server", store)
    for r in range(3):  # rank 3 has not registered yet
        prefixed.set("rank%d" % r, f.urls[r])
    keys_before = sorted(store.list_keys())
    ls = subprocess.run([hangdx_bin, "watch", "--store", "127.0.0.1:%d" % store.port, "--world-size", "4",
                         "--list-workers"], capture_output=True, text=True, timeout=30)
    assert ls.returncode == 0, ls.stderr
    assert ls.stdout.splitlines() == ["%d %s" % (r, f.urls[r]) for r in range(3)]
    assert "1 ranks have not registered" in ls.stderr
    w = procs.start([hangdx_bin, "watch", "--store", "127.0.0.1:%d" % store.port, "--world-size", "4", *FAST,
                     "--exit-on-finding", "--format", "json", "--duration", "30", "--out", str(tmp_path / "out")],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)
    prefixed.set("rank3", f.urls[3])  # registers late: found on a later read
    keys_before = sorted(store.list_keys())
    time.sleep(1.5)
    f.send("hang 3")
    out, err = w.communicate(timeout=30)
    assert w.returncode == 1, err
    assert json.loads(out)["findings"][0]["culprit_ranks"] == [3]
    assert "1 more workers registered" in err
    keys = sorted(store.list_keys())
    assert keys == keys_before
    assert not any("exception_dump" in k for k in keys)


def _load_hook():
    """python/hangdx/torch.py from the source tree (it needs only the standard library here)."""
    import importlib.util
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("hangdx_torch_hook_test",
                                                  os.path.join(root, "python", "hangdx", "torch.py"))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_push_hook_with_a_token_file_mounted_late_never_raises(hangdx_bin, procs, tmp_path):
    port = free_port()
    token = tmp_path / "token"
    token.write_text("late\n")
    w = procs.start([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--token-file", str(token),
                     *FAST, "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    hook = _load_hook()
    mounted = tmp_path / "mounted" / "token"
    r = hook.watch("http://127.0.0.1:%d" % port, interval_s=0.1, token_file=str(mounted), rank=0)
    try:
        assert wait_for(lambda: r.last_error, 5)
        assert "No such file" in r.last_error and r.reports == 0
        mounted.parent.mkdir()
        # Created before it is written (what write_text does, and what CI
        # once caught mid-way): an empty token is not kept.
        mounted.touch()
        assert wait_for(lambda: r.last_error and "is empty" in r.last_error, 5), r.last_error
        assert r.reports == 0
        mounted.write_text("late\n")
        assert wait_for(lambda: r.reports > 0, 5), r.last_error
    finally:
        r.stop()
    w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0


def test_push_mode_silence_does_not_end_the_service(hangdx_bin, procs, tmp_path):
    # One stray heartbeat, then silence for 3 x --stall-after: the service
    # stays up (docs/live.md, section 3) and says once what it sees.
    port = free_port()
    w = procs.start([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, *FAST, "--duration", "4.5"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_listening(port)
    url = "http://127.0.0.1:%d" % port
    assert http("POST", url + "/v1/report", {"hangdx_report": 1, "rank": 0, "pid": 1, "seq": 0})[0] == 200
    time.sleep(3.0)
    assert w.poll() is None
    assert http("GET", url + "/healthz") == (200, "ok\n")
    status = json.loads(http("GET", url + "/status")[1])
    assert status["ranks_silent"] == [0]
    out, err = w.communicate(timeout=10)
    assert w.returncode == 0, err
    assert "the job has ended" not in err
    assert err.count("every pushing rank has been silent") == 1, err


def test_404_lists_every_endpoint(hangdx_bin, procs):
    port = free_port()
    w = procs.start([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--duration", "20"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port)
    status, body = http("GET", "http://127.0.0.1:%d/nope" % port)
    assert status == 404
    assert json.loads(body)["endpoints"] == ["POST /v1/report", "GET /findings", "GET /status", "GET /metrics",
                                             "GET /healthz"]
    w.kill()


def test_a_second_watch_on_the_same_listen_address_exits_2_naming_it(hangdx_bin, procs):
    port = free_port()
    first = procs.start([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--duration", "20"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port)
    r = subprocess.run([hangdx_bin, "watch", "--listen", "127.0.0.1:%d" % port, "--duration", "5"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, r.stderr
    assert "127.0.0.1:%d is in use" % port in r.stderr, r.stderr
    assert first.poll() is None  # the first one goes on serving
    status, _ = http("GET", "http://127.0.0.1:%d/healthz" % port)
    assert status == 200
    first.kill()


@pytest.mark.parametrize("args, message", [
    (["--workers", "99999999999 http://127.0.0.1:2"], "rank 99999999999 is outside 0..16777215"),
    (["--workers", "-1 http://127.0.0.1:2"], "rank -1 is outside 0..16777215"),
    (["--workers", "http://127.0.0.1:2", "--webhook", "ht!tp://\\x00"], "--webhook"),
    (["--workers", "http://127.0.0.1:2", "--webhook", "ftp://a/b"], "--webhook"),
])
def test_bad_arguments_are_refused(hangdx_bin, tmp_path, args, message):
    files = []
    for i, a in enumerate(args):
        if a.startswith(("99999", "-1 ")):  # a --workers FILE line
            p = tmp_path / ("workers%d.txt" % i)
            p.write_text(a + "\n")
            files.append(str(p))
        else:
            files.append(a)
    r = subprocess.run([hangdx_bin, "watch", *files, "--duration", "1"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr


@pytest.mark.parametrize("args, message", [
    (["--store", "127.0.0.1:%(port)d", "--world-size", "2"], "the TCPStore 127.0.0.1:%(port)d never answered"),
    (["--workers", "http://127.0.0.1:%(port)d"], "rank 0 (http://127.0.0.1:%(port)d) does not answer: connection refused"),
    (["--listen", "127.0.0.1:%(listen)d"], "no rank pushed a report to 127.0.0.1:%(listen)d"),
])
def test_a_watch_that_never_saw_the_job_says_so_and_exits_2(hangdx_bin, args, message):
    ports = {"port": free_port(), "listen": free_port()}  # nothing listens on "port"
    t0 = time.time()
    r = subprocess.run([hangdx_bin, "watch", *[a % ports for a in args], *FAST, "--duration", "2"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert message % ports in r.stderr, r.stderr
    assert "the job was never seen" in r.stderr, r.stderr
    assert time.time() - t0 < 5


def test_a_push_watch_on_port_0_names_the_port_it_bound(hangdx_bin):
    """The fresh-user tester's --listen 127.0.0.1:0: the end said "no rank
    pushed a report to 127.0.0.1:0" after "listening on 127.0.0.1:39083"."""
    r = subprocess.run([hangdx_bin, "watch", "--listen", "127.0.0.1:0", *FAST, "--duration", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    bound = r.stderr.split("listening on ", 1)[1].split()[0]
    assert bound != "127.0.0.1:0" and "no rank pushed a report to " + bound + ";" in r.stderr, r.stderr
