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
through a ``TickGate`` that the executive consults between ticks (``before_tick``). The server,
state and browser connections both views share are ``_App`` (:mod:`orbitree.views.web_app`).

Replay (``ReplayWebView``, :mod:`orbitree.views.replay_web`): a player thread feeds the log's
tick records to the same ``ViewState`` at a chosen speed; the page gets the same messages plus a
time slider.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from orbitree.language.keys import ROBOT_IMAGE_GLOB, TARGET_POSE_CAM_GLOB, target_key
from orbitree.views.camera import CAMERA_HZ, CameraSetup, annotate
from orbitree.views.control import TickGate
from orbitree.views.http import DEFAULT_PORT, MAX_BODY, MAX_CONNECTIONS
from orbitree.views.replay_web import ReplayWebView, _apply_record
from orbitree.views.state import PLOT_KEYS, ViewState
from orbitree.views.web_app import _App, print_url

__all__ = ["CAMERA_KEPT", "MAX_BODY", "MAX_CONNECTIONS", "ReplayWebView", "WebView", "_apply_record", "print_url"]

CAMERA_KEPT = 8  # annotated images kept per arm, so that a page fetches the one it was told of


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
