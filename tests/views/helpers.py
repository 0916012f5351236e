"""Helpers shared by the web view tests: HTTP requests, an SSE reader, an executive in a thread."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from orbitree.runtime.executive import Executive, RunResult


def request(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    host: str | None = None,
) -> tuple[int, bytes]:
    """One raw request: ``path`` is sent exactly as given (no normalisation of ``..``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Host": host or f"127.0.0.1:{port}"}
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers["Content-Type"] = content_type
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    out = response.status, response.read()
    conn.close()
    return out


def control(port: int, **command: Any) -> dict[str, Any]:
    status, body = request(port, "POST", "/api/control", command)
    assert status == 200, body
    return json.loads(body)


def state(port: int) -> dict[str, Any]:
    status, body = request(port, "GET", "/api/state")
    assert status == 200, body
    return json.loads(body)


class EventReader(threading.Thread):
    """Reads ``/events`` like a browser would and keeps every message."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.messages: list[dict[str, Any]] = []
        self.connected = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{self.port}"})
        response = conn.getresponse()
        self.connected.set()
        try:
            for line in response:
                if line.startswith(b"data: "):
                    self.messages.append(json.loads(line[6:]))
        except OSError:
            pass

    def trace(self) -> list[tuple[int, int, str]]:
        """(tick, node id, status) of every status change received, as ``Log.status_trace``."""
        out: list[tuple[int, int, str]] = []
        for message in self.messages:
            if message["type"] == "init":
                out = []
            out.extend((n, i, s) for n, _, i, s in message.get("changes", []))
        return out


class Script(threading.Thread):
    """Drives a view's controls from a thread while the executive runs in the main thread.

    (py_trees' setup installs a signal handler, so ``Executive.run`` needs the main thread.)
    If the script fails, the gate is released so the run ends; ``check`` re-raises the failure.
    """

    def __init__(self, view: Any, script: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.view, self.script = view, script
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.script()
        except BaseException as exc:
            self.error = exc
            self.view.gate.release()

    def check(self, timeout: float = 30.0) -> None:
        self.join(timeout)
        assert not self.is_alive(), "the script did not end"
        if self.error is not None:
            raise self.error


def run_with(executive: Executive, view: Any, script: Callable[[], None]) -> RunResult:
    driver = Script(view, script)
    driver.start()
    result = executive.run()
    driver.check()
    return result


def wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")
