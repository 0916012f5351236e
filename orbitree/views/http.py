"""The web view's HTTP server (standard library): what it serves, what it refuses, and how.

:class:`_Server` bounds the connections (``MAX_CONNECTIONS``, a 429 past them, answered on a
thread of its own); :class:`_Handler` serves the page's files, the camera images, the events
stream and the state, and takes the control commands, refusing everything else with a 4xx before
reading a body it will not use (see :mod:`orbitree.views.web` for the endpoints). The
application behind it (the live or replay view) is ``server.app``: anything with ``files``,
``host_allowed``, ``init_bytes``, ``camera_image``, ``control``, ``subscribe`` and
``unsubscribe``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from orbitree.views.state import encode

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_JS = "text/javascript; charset=utf-8"
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", _JS),
    "/scene.js": ("scene.js", _JS),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
    # three.js 0.180.0 from the npm registry (MIT; vendor/three/LICENSE, vendor/three/VERSION)
    "/vendor/three/three.module.min.js": ("vendor/three/three.module.min.js", _JS),
    "/vendor/three/three.core.min.js": ("vendor/three/three.core.min.js", _JS),
    "/vendor/three/OrbitControls.js": ("vendor/three/OrbitControls.js", _JS),
}
CAMERA_PATH = re.compile(r"/camera/([A-Za-z0-9_.-]{1,64})\.jpg")
GET_PATHS = frozenset([*STATIC, "/events", "/api/state"])  # and CAMERA_PATH
POST_PATHS = frozenset(["/api/control"])
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CLIENT_QUEUE = 256  # messages a browser may lag behind before it is sent a fresh init instead

# Bytes of a control command's body. The largest the page sends ({"action": "break", "node": 123,
# "on": false}) is under 60 bytes; a longer body is refused with 413 from its Content-Length,
# before any of it is read, so a client claiming gigabytes costs nothing.
MAX_BODY = 4096

# Connections served at once (each holds a thread). A page uses one event stream and makes one
# short request at a time; a few tabs and scripts stay far below 32. Past it a connection is
# answered 429 at once by a single thread, so a flood costs neither threads nor the tick loop.
MAX_CONNECTIONS = 32

# Seconds a connection may stay silent (reading a request) or stalled (not reading the event
# stream) before it is dropped: a browser sends a request at once, and the stream sends a
# keep-alive every 10 s, so only a stuck or hostile client waits this long, and its thread is freed.
REQUEST_TIMEOUT_S = 15.0

# After a refused body: how long and how much of it is read and thrown away before closing, so
# that the client reads the refusal instead of a connection reset (closing a socket with unread
# data resets it). Bounded: a client that keeps sending is cut off.
LINGER_S, LINGER_BYTES = 0.5, 256 * 1024

_TOO_MANY = (b"HTTP/1.0 429 Too Many Requests\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n"
             b"Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\n")


def static_files() -> dict[str, bytes]:
    folder = resources.files("orbitree.views") / "web_static"
    return {name: folder.joinpath(*name.split("/")).read_bytes() for name, _ in set(STATIC.values())}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # connections the kernel holds until they are accepted: past the default 5, a burst of
    # connections has its SYNs dropped and retried 1 s, then 3 s later (a stalled page, a slow flood)
    request_queue_size = 128
    app: Any  # the view it serves (web._App)

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._turned_away: queue.Queue[socket.socket | None] = queue.Queue(maxsize=MAX_CONNECTIONS)
        super().__init__(address, handler)  # binds (OSError when the port is taken)
        threading.Thread(target=self._turn_away, name="web-view-429", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                self._turned_away.put_nowait(request)
            except queue.Full:  # the 429 thread is behind too: just close
                self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _turn_away(self) -> None:
        """Answer connections past ``MAX_CONNECTIONS`` with 429, one at a time."""
        while True:
            request = self._turned_away.get()
            if request is None:
                return
            with contextlib.suppress(OSError):
                request.settimeout(0.05)
                with contextlib.suppress(OSError):
                    request.recv(MAX_BODY)  # the request, so that closing does not reset the connection
                request.sendall(_TOO_MANY)
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        with contextlib.suppress(queue.Full):
            self._turned_away.put_nowait(None)  # ends the 429 thread

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a handler that failed past the checks below: one line, not a traceback over the run's output
        kind, error = sys.exc_info()[:2]
        if kind is not None and not issubclass(kind, OSError):
            print(f"orbitree: web view: {kind.__name__}: {error}", file=sys.stderr)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "orbitree"
    sys_version = ""
    timeout = REQUEST_TIMEOUT_S

    def __getattr__(self, name: str) -> Any:
        # any other method (PUT, DELETE, HEAD, OPTIONS, BREW, ...): 405, never the default 501
        if name.startswith("do_"):
            return self._method_not_allowed
        raise AttributeError(name)

    def _method_not_allowed(self) -> None:
        path = urlsplit(self.path).path
        if path not in GET_PATHS and path not in POST_PATHS and not CAMERA_PATH.fullmatch(path):
            return self._reply(HTTPStatus.NOT_FOUND, b"not found\n")
        allowed = "GET" if path in GET_PATHS else "POST"
        self._reply(HTTPStatus.METHOD_NOT_ALLOWED, f"use {allowed}\n".encode(), headers={"Allow": allowed})
        return None

    def log_message(self, format: str, *args: Any) -> None:  # the run's output stays readable
        pass

    def do_GET(self) -> None:
        app = self.server.app
        if not app.host_allowed(self.headers.get("Host", "")):
            return self._reply(HTTPStatus.FORBIDDEN, b"unexpected Host header\n")
        path = urlsplit(self.path).path
        if path in POST_PATHS:
            return self._method_not_allowed()
        if path == "/events":
            return self._events(app)
        if path == "/api/state":
            return self._reply(HTTPStatus.OK, app.init_bytes(), "application/json")
        camera = CAMERA_PATH.fullmatch(path)
        if camera is not None:
            seq = parse_qs(urlsplit(self.path).query).get("seq", [""])[-1]
            image = app.camera_image(camera[1], int(seq) if seq.isdigit() and len(seq) < 12 else None)
            if image is None:
                return self._reply(HTTPStatus.NOT_FOUND, b"no camera image\n")
            return self._reply(HTTPStatus.OK, image, "image/jpeg")
        entry = STATIC.get(path)
        if entry is None:
            return self._reply(HTTPStatus.NOT_FOUND, b"not found\n")
        name, content_type = entry
        return self._reply(HTTPStatus.OK, app.files[name], content_type)

    def do_POST(self) -> None:
        app = self.server.app
        if not app.host_allowed(self.headers.get("Host", "")):
            return self._reply(HTTPStatus.FORBIDDEN, b"unexpected Host header\n")
        path = urlsplit(self.path).path
        if path not in POST_PATHS:
            return self._method_not_allowed() if path in GET_PATHS else self._reply(HTTPStatus.NOT_FOUND,
                                                                                    b"not found\n")
        if self.headers.get_content_type() != "application/json":
            return self._refuse_body(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, b"expected application/json\n")
        if self.headers.get("Transfer-Encoding") is not None:
            return self._refuse_body(HTTPStatus.LENGTH_REQUIRED, b"send a Content-Length, not chunks\n")
        text = (self.headers.get("Content-Length") or "").strip()
        if not text:
            return self._reply(HTTPStatus.LENGTH_REQUIRED, b"a Content-Length is required\n")
        if not (text.isascii() and text.isdigit()):
            return self._refuse_body(HTTPStatus.BAD_REQUEST, b"bad Content-Length\n")
        if len(text) > 9 or int(text) > MAX_BODY:
            return self._refuse_body(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                     f"a command is at most {MAX_BODY} bytes\n".encode())
        length = int(text)
        if length == 0:
            return self._reply(HTTPStatus.BAD_REQUEST, b"empty body: expected a JSON object\n")
        try:
            command = json.loads(self.rfile.read(length), parse_constant=_no_constant)
            if not isinstance(command, dict):
                raise ValueError("expected a JSON object")
            result = app.control(command)
        except (ValueError, KeyError, TypeError, OverflowError) as exc:  # UnicodeDecodeError, bad JSON
            return self._reply(HTTPStatus.BAD_REQUEST, f"{_short(exc)}\n".encode())
        except RecursionError:
            return self._reply(HTTPStatus.BAD_REQUEST, b"JSON nested too deep\n")
        return self._reply(HTTPStatus.OK, encode(result), "application/json")

    def _refuse_body(self, code: HTTPStatus, message: bytes) -> None:
        """Refuse a request without reading its body: reply, then read and drop what follows for
        at most ``LINGER_S`` and ``LINGER_BYTES``, and close."""
        self._reply(code, message, headers={"Connection": "close"})
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            connection = self.connection
            connection.shutdown(socket.SHUT_WR)
            deadline, left = time.monotonic() + LINGER_S, LINGER_BYTES
            while left > 0 and (wait := deadline - time.monotonic()) > 0:
                connection.settimeout(wait)
                chunk = connection.recv(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)

    def _reply(
        self,
        code: HTTPStatus,
        body: bytes,
        content_type: str = "text/plain",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _events(self, app: Any) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        inbox = app.subscribe()
        try:
            while True:
                try:
                    message = inbox.get(timeout=10.0)
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    continue
                if message is None:
                    break
                self.wfile.write(b"data: " + message + b"\n\n")
                self.wfile.flush()
        except OSError:  # the browser went away
            pass
        finally:
            app.unsubscribe(inbox)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _short(error: BaseException) -> str:
    text = str(error)
    return text if len(text) <= 200 else text[:200] + "..."


