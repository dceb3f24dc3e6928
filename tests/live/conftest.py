"""Fixtures of the `hangdx watch` tests (docs/live.md, "Tests"): the
binaries, free ports, a Redis server of our own on loopback, fake torch
workers, and processes that are always stopped, by pid, at the test's end."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _binary(env, name):
    path = os.environ.get(env)
    if not path:
        for cand in (os.path.join(ROOT, "build", "bin", name), shutil.which(name) or ""):
            if cand and os.access(cand, os.X_OK):
                path = cand
                break
    if not path or not os.access(path, os.X_OK):
        pytest.skip("%s not built (set %s)" % (name, env))
    return path


@pytest.fixture(scope="session")
def hangdx_bin():
    return _binary("HANGDX_BIN", "hangdx")


@pytest.fixture(scope="session")
def fake_workers_bin(hangdx_bin):
    os.environ.setdefault("HANGDX_FAKE_WORKERS", os.path.join(os.path.dirname(hangdx_bin), "hangdx_fake_workers"))
    return _binary("HANGDX_FAKE_WORKERS", "hangdx_fake_workers")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Procs:
    """Processes a test started, each in a session of its own; at the test's
    end every process of those sessions is killed: a rank's children too
    (torch's debug-server frontend forks one on rank 0, which outlived a
    kill of the rank's pid: five torch_job.py processes were left running
    after scripts/test.sh)."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        kw.setdefault("start_new_session", True)
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the session's group, also after its leader exited
            except (ProcessLookupError, PermissionError):
                pass
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.stop_all()


class Fleet:
    """hangdx_fake_workers: N fake torch workers, faults sent on stdin."""

    def __init__(self, procs, binary, tmp, ranks, backend="gloo", step=0.05):
        self.file = str(tmp / "workers.txt")
        self.proc = procs.start([binary, "--ranks", str(ranks), "--out", self.file, "--backend", backend,
                                 "--step", str(step)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), line
        self.urls = [u.strip() for u in open(self.file)]

    def send(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()


@pytest.fixture
def fleet(procs, fake_workers_bin, tmp_path):
    return lambda ranks, **kw: Fleet(procs, fake_workers_bin, tmp_path, ranks, **kw)


@pytest.fixture
def redis_url(procs, tmp_path):
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(exe, os.X_OK):
        pytest.skip("redis-server not installed (Debian: redis-server)")
    port = free_port()
    procs.start([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(tmp_path), "--loglevel", "warning"], stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return "redis://127.0.0.1:%d" % port
        except OSError:
            time.sleep(0.05)
    pytest.fail("redis-server did not start")


def http(method, url, body=None, token=None, timeout=5):
    """(status, body) of one request; never raises on an HTTP error status."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_for(pred, timeout, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def wait_listening(port, timeout=10):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            return False
    assert wait_for(up, timeout), "nothing listens on %d" % port


def sigkill(p):
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
