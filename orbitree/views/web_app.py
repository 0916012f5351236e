"""The web views' server, state and connected browsers (:class:`_App`), shared by the live view
(:class:`orbitree.views.web.WebView`) and the replay (:class:`orbitree.views.replay_web.ReplayWebView`);
:mod:`orbitree.views.web` describes the endpoints and the threads."""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from orbitree.views.http import (
    CLIENT_QUEUE,
    DEFAULT_HOST,
    LOOPBACK_NAMES,
    _Handler,
    _Server,
    static_files,
)
from orbitree.views.state import ViewState, encode


class _App:
    """The server, the state and the connected browsers, shared by the live and replay views."""

    mode = "live"

    def __init__(self, host: str | None, port: int, max_hz: float) -> None:
        self.host = host or DEFAULT_HOST
        self.check_host = host is None or host in ("127.0.0.1", "localhost")
        self.port = port
        self.interval = 1.0 / max_hz
        self.files = static_files()
        self.state: ViewState | None = None
        self._lock = threading.RLock()  # the state and the client list
        self._clients: list[queue.Queue[bytes | None]] = []
        self.connections = 0  # pages that ever subscribed (a run may end before the first)
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.url = ""

    # serving -----------------------------------------------------------------------------
    def listen(self) -> str:
        """Bind and start serving (raises OSError when the port is taken); return the URL."""
        server = _Server((self.host, self.port), _Handler)
        server.app = self
        self._server = server
        host, port = server.server_address[:2]
        self.port = int(port)
        shown = f"[{host}]" if ":" in str(host) else host
        self.url = f"http://{shown}:{self.port}/"
        self._spawn(server.serve_forever, "web-view-http")
        return self.url

    @property
    def bound_address(self) -> tuple[str, int]:
        assert self._server is not None
        host, port = self._server.socket.getsockname()[:2]
        return host, port

    def host_allowed(self, host_header: str) -> bool:
        if not self.check_host:
            return True
        return host_header in {f"{name}:{self.port}" for name in LOOPBACK_NAMES}

    def close(self, linger: float = 0.0) -> None:
        """Stop serving; first give browsers up to ``linger`` seconds to receive what is queued."""
        deadline = time.monotonic() + linger
        while time.monotonic() < deadline and any(not q.empty() for q in self._snapshot_clients()):
            time.sleep(0.02)
        self._stop.set()
        for client in self._snapshot_clients():
            with contextlib.suppress(queue.Full):
                client.put_nowait(None)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=2.0)

    def serve_until_interrupted(self) -> None:
        """Keep serving until Ctrl-C or SIGTERM."""
        stop = threading.Event()
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
        try:
            while not stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    @property
    def viewers(self) -> int:
        return len(self._clients)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # clients -----------------------------------------------------------------------------
    def subscribe(self) -> queue.Queue[bytes | None]:
        inbox: queue.Queue[bytes | None] = queue.Queue(maxsize=CLIENT_QUEUE)
        with self._lock:
            inbox.put_nowait(self.init_bytes())
            self._clients.append(inbox)
            self.connections += 1
        self.on_subscribe()
        return inbox

    def unsubscribe(self, inbox: queue.Queue[bytes | None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._clients.remove(inbox)

    def on_subscribe(self) -> None:
        pass

    def _snapshot_clients(self) -> list[queue.Queue[bytes | None]]:
        with self._lock:
            return list(self._clients)

    def init_bytes(self) -> bytes:
        with self._lock:
            if self.state is None:
                return encode({"type": "waiting", "mode": self.mode})
            return encode(self.state.init_message(self.control_state()))

    def broadcast(self, message: dict[str, Any] | None) -> None:
        """Send one message to every browser (call with the lock held)."""
        if message is None or not self._clients:
            return
        data = encode(message)
        for client in self._clients:
            try:
                client.put_nowait(data)
            except queue.Full:  # a browser that stopped reading: start it afresh when it resumes
                with contextlib.suppress(queue.Empty):
                    while True:
                        client.get_nowait()
                assert self.state is not None
                client.put_nowait(encode(self.state.init_message(self.control_state())))

    def reset(self, state: ViewState) -> None:
        """Replace the state and send every browser a fresh init."""
        with self._lock:
            self.state = state
            data = encode(state.init_message(self.control_state()))
            for client in self._clients:
                with contextlib.suppress(queue.Empty):
                    while True:
                        client.get_nowait()
                client.put_nowait(data)

    def camera_image(self, robot: str, seq: int | None = None) -> bytes | None:
        """The annotated camera image ``seq`` of ``robot`` (JPEG), or its latest (``seq`` None or
        no longer kept), if any."""
        return None

    # subclasses --------------------------------------------------------------------------
    def control_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


def print_url(url: str, what: str) -> None:
    print(f"orbitree: {what} on {url}  (Ctrl-C to stop)", file=sys.stdout, flush=True)
