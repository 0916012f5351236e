"""The web view's HTTP interface under hostile requests: each is refused with a 4xx (never a
traceback, a 5xx or a hung thread), a body is refused from its Content-Length before it is read,
and a flood of requests leaves the run ticking: same ticks, same result, on time.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from orbitree.views.http import _Handler
from orbitree.views.web import MAX_BODY, MAX_CONNECTIONS, ReplayWebView, WebView
from tests.conftest import TEST_REGISTRY, write_mission
from tests.views.helpers import request, run_with, state, wait_until

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"


# One server for each kind of test (closing one takes 0.5 s): no refused request changes its state.
@pytest.fixture(scope="module")
def live():
    view = WebView(port=0, paused=True)
    view.listen()
    yield view
    view.close()


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    log = tmp_path_factory.mktemp("replay") / "demo.jsonl"
    Executive(load_mission(DEMO), log_path=str(log)).run()
    view = ReplayWebView(read_log(log), port=0, paused=True)
    view.listen()
    yield view
    view.close()


def raw(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data`` as is and read the reply until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
    return out


def post_head(port: int, length: str, content_type: str = "application/json", extra: str = "") -> bytes:
    return (f"POST /api/control HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n").encode()


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def test_a_body_claimed_to_be_a_gigabyte_is_refused_413_before_it_is_read(live):
    before = live.control_state()
    started = time.monotonic()
    reply = raw(live.port, post_head(live.port, str(10**9)) + b'{"action": "resume"')
    assert status_of(reply) == 413 and b"at most 4096 bytes" in reply
    assert time.monotonic() - started < 2.0  # the server did not wait for the gigabyte
    assert live.control_state() == before


@pytest.mark.parametrize("size", [MAX_BODY + 1, 200_000])
def test_a_body_over_the_bound_sent_whole_gets_413_not_a_reset(live, size):
    status, body = request(live.port, "POST", "/api/control", b"[" + b" " * (size - 2) + b"]")
    assert status == 413, body


@pytest.mark.parametrize(
    ("head", "body", "code"),
    [
        (("abc",), b"{}", 400),
        (("-5",), b"{}", 400),
        (("1e3",), b"{}", 400),
        (("0",), b"", 400),
        (("99999999999999999999999",), b"", 413),
        (("2", "application/json", "Transfer-Encoding: chunked\r\n"), b"{}", 411),
    ],
    ids=["letters", "negative", "float", "zero", "23-digits", "chunked"],
)
def test_a_bad_content_length_is_a_4xx(live, head, body, code):
    assert status_of(raw(live.port, post_head(live.port, *head) + body)) == code


def test_a_missing_content_length_is_411(live):
    head = f"POST /api/control HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\nContent-Type: application/json\r\n\r\n"
    assert status_of(raw(live.port, head.encode())) == 411


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{", 400),
        (b"not json", 400),
        (b"[1, 2]", 400),
        (b'"pause"', 400),
        (b'{"action": NaN}', 400),
        (b'{"action": "pause", "x": Infinity}', 400),
        (b"[" * 2000 + b"]" * 2000, 400),
        (b'{"action": "\xff"}', 400),
        (b'{"action": "format-disk"}', 400),
        (b'{"action": "break"}', 400),
        (b'{"action": "break", "node": 99999999999999999999999}', 400),
        (b'{"action": "break", "node": "0"}', 400),
        (b'{"action": "break", "node": 1e400}', 400),
        (b"{}", 400),
    ],
    ids=["unclosed", "not-json", "list", "string", "nan", "infinity", "nested-2000", "non-utf8", "unknown-action",
         "break-without-node", "node-of-23-digits", "node-a-string", "node-overflowing", "no-action"],
)
def test_a_malformed_command_is_400_and_changes_nothing(live, body, code):
    before = live.control_state()
    status, reply = request(live.port, "POST", "/api/control", body)
    assert status == code, reply
    assert live.control_state() == before


@pytest.mark.parametrize(
    ("method", "path", "code", "allow"),
    [
        ("PUT", "/api/control", 405, "POST"),
        ("DELETE", "/api/control", 405, "POST"),
        ("GET", "/api/control", 405, "POST"),
        ("POST", "/api/state", 405, "GET"),
        ("POST", "/", 405, "GET"),
        ("PATCH", "/events", 405, "GET"),
        ("OPTIONS", "/app.js", 405, "GET"),
        ("BREW", "/", 405, "GET"),
        ("PUT", "/elsewhere", 404, None),
        ("POST", "/api/controls", 404, None),
    ],
)
def test_a_wrong_method_is_405_naming_the_allowed_one(live, method, path, code, allow):
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=5)
    conn.request(method, path, body=b"{}", headers={"Host": f"127.0.0.1:{live.port}",
                                                     "Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == code
    assert response.getheader("Allow") == allow


@pytest.mark.parametrize(
    "command",
    [{"action": "seek", "index": "x"}, {"action": "seek", "t": "soon"}, {"action": "seek"},
     {"action": "speed", "value": 0}, {"action": "speed", "value": -1}, {"action": "speed", "value": "fast"},
     {"action": "break", "node": -1}, {"action": "rewind"}],
)
def test_replay_commands_out_of_range_are_400(replay, command):
    assert request(replay.port, "POST", "/api/control", command)[0] == 400


@pytest.mark.parametrize("body", [b'{"action": "seek", "index": 1e400}', b'{"action": "speed", "value": 1e400}'])
def test_replay_numbers_that_overflow_are_400(replay, body):
    before = replay.control_state()
    assert request(replay.port, "POST", "/api/control", body)[0] == 400
    assert replay.control_state() == before


def test_connections_past_the_bound_get_429_and_the_slots_come_back(live):
    idle = [socket.create_connection(("127.0.0.1", live.port), timeout=5) for _ in range(MAX_CONNECTIONS)]
    try:
        wait_until(lambda: request(live.port, "GET", "/api/state")[0] == 429, what="a 429 past the bound")
        status, body = request(live.port, "GET", "/api/state")
        assert status == 429 and body == b"too many connections\n"
    finally:
        for conn in idle:
            conn.close()
    wait_until(lambda: request(live.port, "GET", "/api/state")[0] == 200, what="slots freed")


def test_a_silent_connection_is_dropped(monkeypatch, live):
    monkeypatch.setattr(_Handler, "timeout", 0.3)
    with socket.create_connection(("127.0.0.1", live.port), timeout=5) as conn:
        started = time.monotonic()
        assert conn.recv(1024) == b""  # the server closed it
        assert time.monotonic() - started < 3.0


BAD_REQUESTS = [
    lambda port: request(port, "POST", "/api/control", b"{")[0],
    lambda port: request(port, "POST", "/api/control", {"action": "format-disk"})[0],
    lambda port: request(port, "PUT", "/api/control", {"action": "pause"})[0],
    lambda port: request(port, "GET", "/../../etc/passwd")[0],
    lambda port: request(port, "POST", "/api/state", {"action": "pause"})[0],
    lambda port: request(port, "POST", "/api/control", b"action=pause", "text/plain")[0],
    lambda port: request(port, "POST", "/api/control", b'{"action": NaN}')[0],
    lambda port: request(port, "GET", "/", host="evil.example")[0],
    lambda port: status_of(raw(port, post_head(port, str(10**9)))),
    lambda port: request(port, "POST", "/api/control", b"[" * 2000 + b"]" * 2000)[0],
]
FLOOD = 2000  # requests
FLOOD_THREADS = 16  # clients at once: under MAX_CONNECTIONS, so each gets its own answer


def test_a_flood_of_bad_requests_gets_4xx_and_the_run_keeps_its_ticks_and_its_rate(tmp_path):
    mission = load_mission(write_mission(tmp_path, "wait: 2 s", "rate_hz: 50\n"), registry=TEST_REGISTRY)
    plain = Executive(mission).run()
    view = WebView(port=0, hold=True)
    view.listen()
    statuses: list[int] = []
    during: list[bool] = []
    ended = threading.Event()

    def one(i: int) -> None:
        statuses.append(BAD_REQUESTS[i % len(BAD_REQUESTS)](view.port))
        during.append(not ended.is_set())

    def flood() -> None:
        wait_until(lambda: view.state is not None, what="the run started")
        with ThreadPoolExecutor(FLOOD_THREADS) as pool:
            list(pool.map(one, range(FLOOD)))
        wait_until(lambda: state(view.port)["done"] is not None, what="the page told the run is over")
        assert state(view.port)["done"]["status"] == "SUCCESS"

    executive = Executive(mission, views=[view], realtime=True)
    took: list[float] = []

    def run_then_mark():
        started = time.monotonic()
        result = executive.run()
        took.append(time.monotonic() - started)
        ended.set()
        return result

    try:
        result = run_with_flood(run_then_mark, view, flood)
    finally:
        view.close()
    wall = took[0]
    assert result.status == "SUCCESS"
    assert result.summary["ticks"] == plain.summary["ticks"]
    assert result.summary["sim_time_s"] == plain.summary["sim_time_s"]
    assert wall < 2.0 + 1.5, f"a 2 s mission took {wall:.1f} s"  # paced to the wall clock, not slowed down
    assert len(statuses) == FLOOD
    assert all(400 <= code < 500 for code in statuses), sorted(set(statuses))
    assert sum(during) > FLOOD // 10, "the flood did not overlap the run"
    assert view.dropped == 0


def run_with_flood(run, view, flood):
    """``run()`` in this thread (the executive needs the main thread) while ``flood`` runs in another."""
    return run_with(type("Runner", (), {"run": staticmethod(run)})(), view, flood)
