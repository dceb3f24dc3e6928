"""hangdx.torch: push this rank's Flight Recorder to ``hangdx watch``.

For jobs that do not run torch's debug server (or whose workers the watch
cannot reach), each rank pushes instead. Two lines in the training script,
after ``init_process_group``::

    import hangdx.torch
    hangdx.torch.watch("http://watch-host:9300", interval_s=2.0, token_file="/run/hangdx/token")

and on the watch host::

    hangdx watch --listen 0.0.0.0:9300 --token-file /run/hangdx/token --stall-after 30

A daemon thread then POSTs to ``<url>/v1/report`` every ``interval_s``
seconds: the Flight Recorder entries that are new or changed since the last
report that was acknowledged (``torch._C._distributed_c10d._dump_fr_trace_json()``,
the recorder every backend writes, gloo included), with ``pg_status`` and
``pg_config``. When the watch has detected a stall it answers
``{"want": ["stacks"]}`` and the next report carries the stacks of every
thread (``faulthandler`` text). The thread runs while the main thread is
blocked in a collective (which releases the GIL). It never raises into the
training code: a report that fails is sent again with the next one, and
errors are logged once (``logging`` logger ``hangdx.torch``).

The report format is documented in docs/live.md. Only the standard library
and torch are used; this module does not need hangdx's C++ extension.
"""
from __future__ import annotations

import faulthandler
import json
import logging
import os
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Dict, Optional

__all__ = ["watch", "Reporter"]

logger = logging.getLogger("hangdx.torch")


def _dump_fr() -> Optional[dict]:
    """This process's Flight Recorder as a dict, or None when torch has none."""
    try:
        import torch  # noqa: F401 (imported lazily: `import hangdx` must not need torch)
        raw = torch._C._distributed_c10d._dump_fr_trace_json()
    except Exception:  # no torch, or a build without the generic recorder
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _stacks() -> str:
    """Every thread's stack as faulthandler prints it (what hangdx reads)."""
    with tempfile.TemporaryFile(mode="w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=True)
        f.seek(0)
        return f.read()


def _entry_state(e: dict) -> tuple:
    # What changes in an entry after it is recorded: its completion.
    return (e.get("retired"), e.get("state"), e.get("time_discovered_completed_ns"))


class Reporter:
    """The reporting thread of one rank (what :func:`watch` returns).

    ``stop()`` ends it; ``reports`` counts the reports acknowledged and
    ``last_error`` holds the last failure (None after a success).
    """

    def __init__(self, url: str, interval_s: float, token: Optional[str], rank: int,
                 world_size: Optional[int], timeout_s: float, token_file: Optional[str] = None):
        self.url = url.rstrip("/") + "/v1/report"
        self.interval_s = float(interval_s)
        self.token = token
        # Read on the reporting thread before every report: a file that is
        # missing, unreadable or still empty (a secret mounted, or written,
        # a little after the job starts) is a logged failure of that report,
        # never an exception in the training script; a rotated secret is
        # picked up at the next report.
        self.token_file = token_file if token is None else None
        self.rank = int(rank)
        self.world_size = world_size
        self.timeout_s = float(timeout_s)
        self.reports = 0
        self.last_error: Optional[str] = None
        self._seq = 0
        self._sent: Dict[int, tuple] = {}  # record_id -> state acknowledged
        self._config_sent = None
        self._want_stacks = False
        self._logged_error = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hangdx-reporter", daemon=True)

    def start(self) -> "Reporter":
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _report(self) -> dict:
        body = {"hangdx_report": 1, "rank": self.rank, "pid": os.getpid(), "seq": self._seq,
                "host": socket.gethostname(), "time_ns": time.time_ns()}
        if self.world_size is not None:
            body["world_size"] = self.world_size
        fr = _dump_fr()
        if fr is not None:
            entries = [e for e in fr.get("entries", [])
                       if isinstance(e, dict) and isinstance(e.get("record_id"), int)
                       and self._sent.get(e["record_id"]) != _entry_state(e)]
            part = {"version": fr.get("version", ""), "pg_status": fr.get("pg_status", {}), "entries": entries}
            if fr.get("pg_config") != self._config_sent:
                part["pg_config"] = fr.get("pg_config", {})
            body["fr"] = part
        if self._want_stacks:
            body["stacks"] = _stacks()
        return body

    def _post(self, body: dict) -> dict:
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
            return json.loads(resp.read() or b"{}")

    def _acknowledged(self, body: dict, answer: dict) -> None:
        self._seq += 1
        self.reports += 1
        self.last_error = None
        fr = body.get("fr")
        if fr is not None:
            for e in fr["entries"]:
                self._sent[e["record_id"]] = _entry_state(e)
            if "pg_config" in fr:
                self._config_sent = fr["pg_config"]
            if len(self._sent) > 8192:  # older than any ring: forget
                for rid in sorted(self._sent)[:-4096]:
                    del self._sent[rid]
        if "stacks" in body:
            self._want_stacks = False
        self._want_stacks = self._want_stacks or "stacks" in (answer.get("want") or [])

    def _read_token(self) -> None:
        """Reads ``token_file`` into ``token``.

        Raises OSError while the file cannot be read and ValueError while it
        is empty (created but not yet written: reading it then and keeping
        the empty token would get 401 for ever).
        """
        if self.token_file is None:
            return
        with open(self.token_file) as f:
            token = f.read().strip()
        if not token:
            raise ValueError("token file %s is empty" % self.token_file)
        self.token = token

    def once(self) -> bool:
        """Sends one report now; True when the watch acknowledged it."""
        try:
            self._read_token()
            body = self._report()
            answer = self._post(body)
        except (urllib.error.URLError, OSError, ValueError) as e:
            # Kept for the next report: what was not acknowledged is resent.
            self.last_error = str(e)
            if not self._logged_error:
                logger.warning("hangdx: cannot report to %s: %s (will keep trying)", self.url, e)
                self._logged_error = True
            return False
        self._acknowledged(body, answer)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ok = self.once()
            except Exception as e:  # never into the training process
                self.last_error = repr(e)
                ok = False
            # Asked for stacks: answer at once rather than an interval later.
            wait = 0.05 if ok and self._want_stacks else self.interval_s
            self._stop.wait(wait)


def _rank_and_world() -> tuple:
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    rank = os.environ.get("RANK")
    world = os.environ.get("WORLD_SIZE")
    return (int(rank) if rank is not None else None), (int(world) if world is not None else None)


def watch(url: str, interval_s: float = 2.0, *, token: Optional[str] = None, token_file: Optional[str] = None,
          rank: Optional[int] = None, timeout_s: float = 5.0) -> Reporter:
    """Starts pushing this rank's progress to the ``hangdx watch --listen`` at ``url``.

    ``url`` is ``http://HOST:PORT`` of the watch; ``interval_s`` the seconds
    between reports (each one is also a heartbeat); ``token`` or
    ``token_file`` the token the watch was given with ``--token-file``;
    ``rank`` defaults to ``torch.distributed.get_rank()`` (or ``$RANK``).
    ``token_file`` is read by the reporting thread, not here: a file that is
    missing at the call (mounted late) is logged and read again before each
    report until it can be. Returns the :class:`Reporter`, already running.
    Raises ``ValueError`` only when no rank is known (a call before
    ``init_process_group`` without ``rank=``); never raises later.
    """
    r, world = _rank_and_world()
    if rank is None:
        rank = r
    if rank is None:
        raise ValueError("hangdx.torch.watch: no rank (call it after init_process_group, or pass rank=)")
    return Reporter(url, interval_s, token, rank, world, timeout_s, token_file=token_file).start()
