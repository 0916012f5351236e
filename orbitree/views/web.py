"""``--view web``: the tree, blackboard, plots and timeline of a run in a browser, live or replayed.

The page (``web_static/``: plain HTML, JS and SVG/canvas written for orbitree; the 3-D scene
drawn with three.js, vendored in ``web_static/vendor/three/`` with its licence; nothing fetched
from the internet) is served by a standard-library HTTP server:

* ``GET /`` (``/index.html``, ``/app.js``, ``/scene.js``, ``/style.css``, the vendored
  ``/vendor/three/*.js``): the page. Only these files are served; any other path, ``..``
  included, is a 404.
* ``GET /camera/<robot>.jpg?seq=N``: the live view's annotated camera image ``N`` of that arm
  (``orbitree.views.camera``; the page is told each one's ``seq`` with its markers), made
  ``CAMERA_HZ`` times a second while a browser watches; the latest one when ``N`` is missing or
  no longer among the last ``CAMERA_KEPT``; 404 when there is none (no camera, nothing seen
  yet, a replay).
* ``GET /events``: server-sent events, one JSON message per line (``orbitree.views.state``):
  an ``init`` with everything, then ``update`` messages at most ``max_hz`` times a second.
* ``GET /api/state``: the ``init`` message as plain JSON.
* ``POST /api/control`` with a JSON body ``{"action": ...}``: ``pause``, ``resume``, ``step``,
  ``break`` (``node``, ``on``), and for replays ``seek`` (``index`` or ``t``) and ``speed``
  (``value``). Only ``application/json`` bodies are accepted, which a page on another origin
  cannot send without a CORS preflight that this server never answers.

Anything else is refused with a 4xx and never costs the tick loop: an unknown path is a 404, a
known one with another method a 405; a command body longer than ``MAX_BODY`` is a 413 from its
``Content-Length`` alone (nothing of it is read), a missing length a 411, a body that is not one
JSON object (or holds NaN) or an unknown action a 400; connections past ``MAX_CONNECTIONS`` get a
429 at once, and a silent connection is dropped after ``REQUEST_TIMEOUT_S``.

The server binds 127.0.0.1 unless a host is given explicitly; on loopback it also refuses
requests whose ``Host`` header is not a loopback name (so a DNS-rebinding page cannot reach it).

Live (``WebView``): the tick thread's ``publish`` appends the snapshot to a bounded deque and
checks breakpoints; a pump thread folds the snapshots into a ``ViewState`` and broadcasts the
encoded messages; each browser connection has its own thread and queue. So a slow or absent
browser costs the tick loop one deque append per tick. Pause, step, resume and breakpoints go
through a ``TickGate`` that the executive consults between ticks (``before_tick``).

Replay (``ReplayWebView``): a player thread feeds the log's tick records to the same
``ViewState`` at a chosen speed; the page gets the same messages plus a time slider.
"""

from __future__ import annotations

import contextlib
import math
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from orbitree.language.keys import ROBOT_IMAGE_GLOB, TARGET_POSE_CAM_GLOB, target_key
from orbitree.runtime.recorder import Log
from orbitree.views.camera import CAMERA_HZ, CameraSetup, annotate
from orbitree.views.control import TickGate
from orbitree.views.http import (  # noqa: F401  (MAX_BODY, MAX_CONNECTIONS: the limits, named here too)
    CLIENT_QUEUE,
    DEFAULT_HOST,
    DEFAULT_PORT,
    LOOPBACK_NAMES,
    MAX_BODY,
    MAX_CONNECTIONS,
    _Handler,
    _Server,
    static_files,
)
from orbitree.views.state import PLOT_KEYS, ViewState, encode

CAMERA_KEPT = 8  # annotated images kept per arm, so that a page fetches the one it was told of


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


class WebView(_App):
    """The live web view: a ``View`` for the executive that also gates its ticks.

    ``listen()`` first (the CLI does, so that a taken port is reported before anything runs),
    then hand it to the executive. With ``hold`` the server keeps serving after the run until
    ``close()``; otherwise ``finish`` closes it once browsers have the final state.
    """

    mode = "live"
    # plotted even when the mission's view.keys leave them out; and the camera panel's frames
    # and estimates
    blackboard_keys = (*PLOT_KEYS, ROBOT_IMAGE_GLOB, TARGET_POSE_CAM_GLOB)

    def __init__(
        self,
        host: str | None = None,
        port: int = DEFAULT_PORT,
        *,
        paused: bool = False,
        hold: bool = False,
        max_hz: float = 20.0,
        inbox: int = 20_000,
    ) -> None:
        super().__init__(host, port, max_hz)
        self.hold = hold
        self.gate = TickGate(paused=paused, on_change=self._gate_changed)
        self._inbox: deque[Any] = deque(maxlen=inbox)
        self.dropped = 0  # snapshots lost because the pump fell behind (never seen in practice)
        self._gate_dirty = threading.Event()
        self._node_times: Callable[[], dict[int, dict[str, float]]] | None = None
        self._last_times = 0.0
        self._bp_seen: dict[int, str] = {}
        self._bp_set: frozenset[int] = frozenset()
        self._previous: list[str] | None = None  # statuses of the last snapshot
        self._on_hold: Callable[[], None] | None = None
        self._finished = threading.Event()
        self.camera_interval = 1.0 / CAMERA_HZ
        self._cameras: dict[str, CameraSetup] = {}
        self._images: dict[str, dict[int, bytes]] = {}  # robot -> seq -> JPEG, the newest last
        self.camera_s = 0.0  # time spent annotating images (camera thread)
        self.camera_images = 0

    # View protocol (tick thread) ---------------------------------------------------------
    def start(self, header: dict[str, Any]) -> None:
        if self._server is None:
            self.listen()
        self._finished.clear()
        self.reset(ViewState(header, self.mode))
        self._spawn(self._pump, "web-view-pump")
        self._cameras = CameraSetup.from_header(header)
        if self._cameras:
            self._spawn(self._camera_loop, "web-view-camera")

    def publish(self, snapshot: Any) -> None:
        inbox = self._inbox
        if len(inbox) == inbox.maxlen:
            self.dropped += 1
        inbox.append(snapshot)
        points = self.gate.breakpoints
        if points:
            self._check_breakpoints(snapshot, points)
        self._previous = snapshot.statuses

    def finish(self, summary: dict[str, Any]) -> None:
        self._finished.set()
        self.gate.release()
        for thread in self._threads:
            if thread.name == "web-view-pump":
                thread.join(timeout=5.0)
        with self._lock:
            if self.state is not None:
                self.state.finish(summary)
                self.broadcast(self.state.update_message(self.control_state()))
        if not self.hold:
            self.close(linger=1.0)

    # gate protocol (tick thread) ---------------------------------------------------------
    def attach(
        self,
        node_times: Callable[[], dict[int, dict[str, float]]] | None = None,
        on_hold: Callable[[], None] | None = None,
    ) -> None:
        """The executive hands over per-node timing and what to do when a hold begins."""
        self._node_times = node_times
        self._on_hold = on_hold

    def before_tick(self, n: int) -> float:
        return self.gate.before_tick(n, self._on_hold)

    def _check_breakpoints(self, snapshot: Any, points: frozenset[int]) -> None:
        if points is not self._bp_set:  # breakpoints changed: watch from the previous tick on
            previous = self._previous
            self._bp_set = points
            self._bp_seen = {i: previous[i] if previous else "INVALID" for i in points}
        seen = self._bp_seen
        for i in points:
            status = snapshot.statuses[i]
            if status == "RUNNING" and seen.get(i) != "RUNNING":
                self.gate.pause(f"breakpoint {self._name(i)!r}")
            seen[i] = status

    # pump thread -------------------------------------------------------------------------
    def _pump(self) -> None:
        while True:
            finished = self._finished.wait(self.interval) or self._stop.is_set()
            self._flush()
            if finished:
                return

    def _flush(self) -> None:
        inbox = self._inbox
        with self._lock:
            state = self.state
            if state is None:
                return
            batch = []
            while inbox:
                batch.append(inbox.popleft())
                if len(batch) == 64:  # fold in slices, letting the tick thread in between
                    state.apply_snapshots(batch)
                    batch = []
                    time.sleep(0)
            state.apply_snapshots(batch)
            now = time.monotonic()
            if self._node_times is not None and now - self._last_times > 0.5:
                self._last_times = now
                with contextlib.suppress(Exception):  # read while the tick thread writes
                    state.set_node_us(self._node_times())
            control = None
            if self._gate_dirty.is_set():
                self._gate_dirty.clear()
                control = self.control_state()
            self.broadcast(state.update_message(control))

    def _gate_changed(self) -> None:
        self._gate_dirty.set()

    # camera thread -----------------------------------------------------------------------
    def _camera_loop(self) -> None:
        """Annotate each arm's newest frame ``CAMERA_HZ`` times a second while a browser
        watches (the frames are references the pump already holds: nothing is copied in the
        tick thread)."""
        done: dict[str, Any] = {}
        while not (self._stop.wait(self.camera_interval) or self._finished.is_set()):
            if not self._clients:
                continue
            for robot, setup in self._cameras.items():
                with self._lock:
                    state = self.state
                    frame = state.frames.get(robot) if state is not None else None
                    estimate = None
                    if setup.target is not None and state is not None:
                        estimate = state.bb.get(target_key(setup.target, "pose_cam"))
                if frame is None or frame is done.get(robot) or getattr(frame, "image", None) is None:
                    continue
                done[robot] = frame
                # the estimate drawn only if it comes from this frame
                board2cam = None
                if estimate is not None and getattr(estimate, "stamp", None) == frame.stamp:
                    board2cam = estimate.matrix
                started = time.perf_counter()
                try:
                    jpeg, info = annotate(frame.image, setup, board2cam)
                except Exception as exc:  # a frame it cannot draw: say so once per frame, go on
                    print(f"orbitree: web view: camera {robot}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                self.camera_s += time.perf_counter() - started
                self.keep_camera_image(robot, jpeg, {**info, "stamp": round(float(frame.stamp), 6)})

    def keep_camera_image(self, robot: str, jpeg: bytes, info: dict[str, Any]) -> int:
        """Number ``jpeg`` (the next ``seq``), keep it among ``robot``'s last ``CAMERA_KEPT`` and
        announce it with its description ``info`` to the pages; returns its seq."""
        with self._lock:
            self.camera_images += 1
            seq = self.camera_images
            images = self._images.setdefault(robot, {})
            images[seq] = jpeg
            while len(images) > CAMERA_KEPT:
                del images[next(iter(images))]
            if self.state is not None:
                self.state.set_camera(robot, {**info, "seq": seq})
        return seq

    def camera_image(self, robot: str, seq: int | None = None) -> bytes | None:
        with self._lock:
            images = self._images.get(robot)
            if not images:
                return None
            # the image the page was told of, whose markers it shows beside it, while it is kept
            return images.get(seq) or images[next(reversed(images))]

    # controls (server threads) -----------------------------------------------------------
    def control_state(self) -> dict[str, Any]:
        state = asdict(self.gate.state())
        state["finished"] = self._finished.is_set()
        state["dropped"] = self.dropped
        return state

    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        action = command.get("action")
        if action == "pause":
            self.gate.pause()
        elif action == "resume":
            self.gate.resume()
        elif action == "step":
            self.gate.step()
        elif action == "break":
            self.gate.set_breakpoint(self._node_id(command["node"]), bool(command.get("on", True)))
        else:
            raise ValueError(f"unknown action {action!r} (pause, resume, step, break)")
        return self.control_state()

    def _node_id(self, value: Any) -> int:
        count = len(self.state.statuses) if self.state is not None else 0
        if not isinstance(value, int) or not 0 <= value < count:
            raise ValueError(f"no node {value!r}")
        return value

    def _name(self, i: int) -> str:
        state = self.state
        return state.header["nodes"][i]["name"] if state is not None else str(i)


class ReplayWebView(_App):
    """A mission log on the same page, with a time slider, play/pause, step and speed.

    Starts playing when the first browser connects (unless ``paused``). Breakpoints stop
    playback at the record in which the node became RUNNING.
    """

    mode = "replay"

    def __init__(
        self,
        log: Log,
        host: str | None = None,
        port: int = DEFAULT_PORT,
        *,
        speed: float = 1.0,
        paused: bool = False,
        max_hz: float = 20.0,
    ) -> None:
        super().__init__(host, port, max_hz)
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed:g}")
        self.log = log
        self.records = log.ticks
        self.speed = speed
        self.playing = False
        self.autoplay = not paused
        self.position = -1  # index of the last record applied
        self.cursor = 0.0  # mission time played up to
        self.breakpoints: set[int] = set()
        self.reason = ""
        self.state = self._fresh()

    def listen(self) -> str:
        url = super().listen()
        self._spawn(self._play, "web-view-player")
        return url

    def on_subscribe(self) -> None:
        with self._lock:
            if self.autoplay:
                self.autoplay = False
                self.playing = bool(self.records)
                self.broadcast(self._update(control=True))

    def _fresh(self) -> ViewState:
        state = ViewState(self.log.header, self.mode)
        node_us = (self.log.footer or {}).get("node_tick_us")
        if node_us:
            state.set_node_us(node_us)
        return state

    # playback ----------------------------------------------------------------------------
    def _play(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            with self._lock:
                if self.playing:
                    self.cursor += (now - last) * self.speed
                    self._advance_to(self.cursor)
                    self.broadcast(self._update(control=True))
            last = now

    def _advance_to(self, t: float) -> None:
        """Apply the records up to mission time ``t`` (stopping at a breakpoint or the end)."""
        while self.position + 1 < len(self.records) and self.records[self.position + 1]["t"] <= t:
            if self._step_one():
                return

    def _step_one(self) -> bool:
        """Apply the next record; True when playback stopped (breakpoint or end of log)."""
        assert self.state is not None
        self.position += 1
        record = self.records[self.position]
        changes = _apply_record(self.state, record)
        hit = [i for i, status in changes if status == "RUNNING" and i in self.breakpoints]
        if self.position == len(self.records) - 1:
            self.state.finish((self.log.footer or {}).get("summary") or {"status": "TRUNCATED"})
            self.playing = False
            return True
        if hit and self.playing:
            self.playing = False
            self.reason = f"breakpoint {self.state.header['nodes'][hit[0]]['name']!r}"
            return True
        return False

    def _seek(self, index: int) -> None:
        index = max(-1, min(index, len(self.records) - 1))
        state = self._fresh()
        records, self.state, self.position = self.records, state, -1
        for k in range(index + 1):
            _apply_record(state, records[k])
        self.position = index
        if index == len(records) - 1:
            state.finish((self.log.footer or {}).get("summary") or {"status": "TRUNCATED"})
        self.cursor = records[index]["t"] if index >= 0 else 0.0
        self.reset(state)

    def _update(self, control: bool) -> dict[str, Any] | None:
        assert self.state is not None
        return self.state.update_message(self.control_state() if control else None)

    # controls ----------------------------------------------------------------------------
    def control_state(self) -> dict[str, Any]:
        records = self.records
        return {
            "paused": not self.playing,
            "held": not self.playing,
            "held_at": None,
            "reason": self.reason,
            "breakpoints": sorted(self.breakpoints),
            "finished": self.position == len(records) - 1,
            "playing": self.playing,
            "speed": self.speed,
            "position": self.position,
            "count": len(records),
            "t_end": records[-1]["t"] if records else 0.0,
            "truncated": self.log.truncated,
        }

    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        action = command.get("action")
        with self._lock:
            self.autoplay = False
            if action == "pause":
                self.playing = False
            elif action == "resume":
                if self.position >= len(self.records) - 1:
                    self._seek(-1)  # play again from the start
                self.playing, self.reason = bool(self.records), ""
                self.cursor = self.records[self.position]["t"] if self.position >= 0 else 0.0
            elif action == "step":
                self.playing, self.reason = False, ""
                if self.position + 1 < len(self.records):
                    self._step_one()
                    self.cursor = self.records[self.position]["t"]
            elif action == "seek":
                self.playing = False
                self._seek(self._index(command))
            elif action == "speed":
                value = float(command["value"])
                if not (value > 0 and math.isfinite(value)):
                    raise ValueError("speed must be a finite number > 0")
                self.speed = value
            elif action == "break":
                node = command["node"]
                if not isinstance(node, int) or not 0 <= node < len(self.log.header["nodes"]):
                    raise ValueError(f"no node {node!r}")
                (self.breakpoints.add if command.get("on", True) else self.breakpoints.discard)(node)
            else:
                raise ValueError(f"unknown action {action!r} (pause, resume, step, seek, speed, break)")
            self.broadcast(self._update(control=True))
            return self.control_state()

    def _index(self, command: dict[str, Any]) -> int:
        if "index" in command:
            return int(command["index"])
        t = float(command["t"])
        index = -1
        for k, record in enumerate(self.records):  # the last record at or before t
            if record["t"] > t:
                break
            index = k
        return index


def _apply_record(state: ViewState, record: dict[str, Any]) -> list[tuple[int, str]]:
    return state.apply(
        record["n"],
        record["t"],
        record.get("tick_ms", 0.0),
        record.get("status"),
        record.get("feedback"),
        record.get("bb"),
        record.get("events"),
        scene=record.get("scene"),
    )


def print_url(url: str, what: str) -> None:
    print(f"orbitree: {what} on {url}  (Ctrl-C to stop)", file=sys.stdout, flush=True)
