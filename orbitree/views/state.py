"""What the web page shows, folded tick by tick from live snapshots or from a mission log.

``ViewState`` is plain data with no threads: the live view feeds it the executive's snapshots,
the replay feeds it the log's tick records, and both then send the page the same messages:

* ``init`` — everything: the header (tree structure with parameters), the current statuses,
  feedback and blackboard, the whole history of status changes (the page's timeline and the
  "last status change" of each node come from it), the plotted time series and the events;
* ``update`` — what changed since the previous message: status changes (every one, never
  coalesced, so the page's status trace equals the log's), the current statuses and feedback,
  blackboard keys written, new plot samples and new events.

Blackboard values are kept as the executive wrote them and turned into JSON only when a message
is built (in a server thread, never in the tick thread).
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from orbitree.language.keys import (
    ORBIT_RELATIVE_GLOB,
    ROBOT_WRENCH_GLOB,
    SERVO_ERROR,
    SERVO_GAIN,
    robot_of_wrench_key,
)
from orbitree.nodes.structure import phase_ids
from orbitree.runtime.recorder import to_jsonable
from orbitree.runtime.scene import lvlh_position
from orbitree.views.format import unit_text

PLOT_KEYS = (SERVO_ERROR, SERVO_GAIN, ROBOT_WRENCH_GLOB, ORBIT_RELATIVE_GLOB)  # what the page plots
PLOT_MIN_DT = 0.02  # s of mission time between two plotted samples of one series (50 Hz)
LVLH_MIN_DT = 0.5  # s between two points of a relative trajectory (orbits last hours)
MAX_SAMPLES = 15_000  # per series: 300 s at 50 Hz, 2 h of LVLH trajectory
MAX_CHANGES = 200_000  # status changes kept for late viewers and the timeline
MAX_EVENTS = 5_000
MISSING = object()


def encode(message: Mapping[str, Any]) -> bytes:
    """Compact JSON (one line, as server-sent events need); NaN and infinities become strings."""
    try:
        text = json.dumps(message, default=to_jsonable, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(message), separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, str | int | bool) or value is None:
        return value
    return _finite(to_jsonable(value))


class ViewState:
    """The page's model of one run, at one tick."""

    def __init__(self, header: dict[str, Any], mode: str) -> None:
        self.header = {k: v for k, v in header.items() if k != "type"}
        self.mode = mode  # "live" or "replay"
        nodes = self.header.get("nodes", [])
        self.phases = phase_ids(nodes, self.header.get("phases"))  # the mission's phases:, as phase_s
        self.n, self.t, self.tick_ms, self.deadline_misses = -1, 0.0, 0.0, 0
        self.statuses = ["INVALID"] * len(nodes)
        self.feedback = [""] * len(nodes)
        self.bb: dict[str, Any] = {}
        self.bb_t: dict[str, float] = {}  # mission time each key was last written
        self.series: dict[str, deque[list[float]]] = {}
        self.events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self.changes: deque[list[Any]] = deque(maxlen=MAX_CHANGES)  # [n, t, id, status]
        self.changes_seen = 0
        self.node_us: dict[str, Any] = {}
        self.done: dict[str, Any] | None = None
        # the 3-D scene: its latest dynamic state (field -> name -> value), folded from the
        # ticks' scene samples; the latest camera frame of each arm (live only, never sent)
        self.scene: dict[str, dict[str, Any]] = {}
        self.frames: dict[str, Any] = {}
        self.camera: dict[str, dict[str, Any]] = {}  # per arm: the annotated image's description
        self._new_scene: dict[str, dict[str, Any]] = {}
        self._new_camera = False
        # what the next update carries
        self._new_changes: list[list[Any]] = []
        self._new_bb: set[str] = set()
        self._new_samples: dict[str, list[list[float]]] = {}
        self._new_events: list[dict[str, Any]] = []
        self._dirty = False
        self._node_us_dirty = False
        # live plots: when the next sample is due, which keys are plotted, what was plotted last
        self._next_sample = -1.0
        self._plot_keys_for = -1
        self._plot_keys: list[str] = []
        self._plotted: dict[str, Any] = {}

    # folding -----------------------------------------------------------------------------
    def apply(
        self,
        n: int,
        t: float,
        tick_ms: float,
        status: Mapping[int | str, str] | None = None,
        feedback: Mapping[int | str, str] | None = None,
        bb: Mapping[str, Any] | None = None,
        events: list[dict[str, Any]] | None = None,
        deadline_misses: int | None = None,
        scene: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[tuple[int, str]]:
        """Fold one tick; return the (node id, new status) changes it made."""
        self.n, self.t, self.tick_ms = n, t, tick_ms
        if deadline_misses is not None:
            self.deadline_misses = deadline_misses
        self._dirty = True
        changed: list[tuple[int, str]] = []
        for key, value in (status or {}).items():
            i = int(key)
            self.statuses[i] = value
            row = [n, t, i, value]
            self.changes.append(row)
            self._new_changes.append(row)
            changed.append((i, value))
        self.changes_seen += len(changed)
        for key, text in (feedback or {}).items():
            self.feedback[int(key)] = text
        for key, value in (bb or {}).items():
            self.bb[key] = value
            self.bb_t[key] = t
            self._new_bb.add(key)
            self._sample(key, t, value)
        if events:
            self.events.extend(events)
            self._new_events.extend(events)
        if scene:
            self._fold_scene(t, scene)
        return changed

    def _fold_scene(self, t: float, scene: Mapping[str, Mapping[str, Any]]) -> None:
        for field, values in scene.items():
            self.scene.setdefault(field, {}).update(values)
            self._new_scene.setdefault(field, {}).update(values)
        for target, position in (scene.get("rel") or {}).items():
            self._add(f"lvlh:{target}", round(t, 6), list(position), LVLH_MIN_DT)
        self._dirty = True

    def set_camera(self, robot: str, info: dict[str, Any]) -> None:
        """A new annotated image of ``robot``'s camera is being served (``info``: its description)."""
        self.camera[robot] = info
        self._new_camera = True

    def apply_snapshots(self, snaps: list[Any]) -> None:
        """Fold a batch of live ``Snapshot``s (full statuses and blackboard), oldest first.

        Every status change and event is kept, in order. The plotted keys are sampled at most
        every ``PLOT_MIN_DT`` of mission time. Feedback and the blackboard table are taken from
        the newest snapshot only: a key's "written" time is the newest snapshot in which its
        value was seen to change, so it can be late by up to one batch (1/``max_hz``).
        """
        if not snaps:
            return
        statuses, changes = self.statuses, []
        for snap in snaps:
            now = snap.statuses
            if now is not statuses and now != statuses:
                n, t = snap.tick, round(snap.t, 6)
                changes.extend(
                    [n, t, i, new] for i, (new, old) in enumerate(zip(now, statuses, strict=True)) if new != old
                )
                statuses = now
            if snap.events:
                self.events.extend(snap.events)
                self._new_events.extend(snap.events)
            if snap.scene:
                self._fold_scene(snap.t, snap.scene)
            if snap.t >= self._next_sample:
                self._next_sample = snap.t + PLOT_MIN_DT - 1e-9
                self._sample_plots(snap.t, snap.blackboard)
        self.statuses = list(statuses)
        self.changes.extend(changes)
        self._new_changes.extend(changes)
        self.changes_seen += len(changes)
        last = snaps[-1]
        self.n, self.t, self.tick_ms = last.tick, last.t, last.tick_ms
        self.deadline_misses = last.deadline_misses
        self.feedback = list(last.feedback)
        bb = self.bb
        for key, value in last.blackboard.items():
            if key.endswith("/image") and key.startswith("/robot/"):  # for the camera panel, not the table
                self.frames[key[7:-6]] = value
                continue
            if bb.get(key, MISSING) is not value:
                bb[key] = value
                self.bb_t[key] = last.t
                self._new_bb.add(key)
        self._dirty = True

    def _sample_plots(self, t: float, bb: Mapping[str, Any]) -> None:
        if len(bb) != self._plot_keys_for:  # the set of keys grew: look for wrenches again
            self._plot_keys_for = len(bb)
            self._plot_keys = [k for k in bb if k in (SERVO_ERROR, SERVO_GAIN) or robot_of_wrench_key(k)
                               or k.startswith("/orbit/relative/")]
        last = self._plotted
        for key in self._plot_keys:
            value = bb[key]
            if last.get(key) is not value:  # plot what was written, not the same value again
                last[key] = value
                self._sample(key, t, value)

    def set_node_us(self, node_us: Mapping[Any, Any]) -> None:
        self.node_us = {str(k): v for k, v in node_us.items()}
        self._node_us_dirty = True

    def finish(self, summary: dict[str, Any] | None) -> None:
        self.done = summary
        self._dirty = True

    def _sample(self, key: str, t: float, value: Any) -> None:
        t = round(t, 6)
        if key == SERVO_ERROR:
            row = _vector(value, 6)
            if row is not None:
                self._add("servo_t", t, row[:3])
                self._add("servo_r", t, row[3:])
        elif key == SERVO_GAIN:
            row = _vector(value, 1)
            if row is not None:
                self._add("gain", t, row)
        elif key.startswith("/orbit/relative/"):
            position = lvlh_position(value)
            if position is not None:
                self._add(f"lvlh:{key.rsplit('/', 1)[1]}", t, position, LVLH_MIN_DT)
        else:
            robot = robot_of_wrench_key(key)
            if robot is not None:
                row = _vector(value, 6)
                if row is not None:
                    self._add(f"force:{robot}", t, row[:3])
                    self._add(f"torque:{robot}", t, row[3:])

    def _add(self, name: str, t: float, values: list[float | None], min_dt: float = PLOT_MIN_DT) -> None:
        series = self.series.get(name)
        if series is None:
            series = self.series[name] = deque(maxlen=MAX_SAMPLES)
        elif t - series[-1][0] < min_dt - 1e-9:
            return
        values.insert(0, t)
        series.append(values)
        pending = self._new_samples.get(name)
        if pending is None:
            self._new_samples[name] = [values]
        else:
            pending.append(values)

    # messages ----------------------------------------------------------------------------
    def tick_info(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "t": round(self.t, 6),
            "tick_ms": self.tick_ms,
            "deadline_misses": self.deadline_misses,
        }

    def init_message(self, control: dict[str, Any]) -> dict[str, Any]:
        self._clear_pending()
        return {
            "type": "init",
            "mode": self.mode,
            "header": self.header,
            "phases": self.phases,
            "tick": self.tick_info(),
            "statuses": self.statuses,
            "feedback": self.feedback,
            "bb": self.bb,
            "bb_t": self.bb_t,
            "bb_text": self._texts(self.bb),
            "series": {name: list(rows) for name, rows in self.series.items()},
            "events": list(self.events),
            "changes": list(self.changes),
            "changes_complete": self.changes_seen == len(self.changes),
            "node_us": self.node_us,
            "control": control,
            "done": self.done,
            "scene": self.scene,
            "camera": self.camera,
        }

    @staticmethod
    def _texts(values: Mapping[str, Any]) -> dict[str, str]:
        """Readings with units for the values that have them (the page shows the rest as they are)."""
        return {k: text for k, v in values.items() if (text := unit_text(k, v)) is not None}

    def update_message(self, control: dict[str, Any] | None) -> dict[str, Any] | None:
        """What changed since the last message, or None when nothing did."""
        if not (self._dirty or self._node_us_dirty or self._new_camera or control is not None):
            return None
        message: dict[str, Any] = {"type": "update", "tick": self.tick_info()}
        if self._dirty:
            message.update(statuses=self.statuses, feedback=self.feedback, done=self.done)
        if self._new_changes:
            message["changes"] = self._new_changes
        if self._new_bb:
            message["bb"] = {k: self.bb[k] for k in self._new_bb}
            message["bb_t"] = {k: self.bb_t[k] for k in self._new_bb}
            message["bb_text"] = self._texts({k: self.bb[k] for k in self._new_bb})
        if self._new_samples:
            message["series"] = self._new_samples
        if self._new_events:
            message["events"] = self._new_events
        if self._node_us_dirty:
            message["node_us"] = self.node_us
        if self._new_scene:
            message["scene"] = self._new_scene
        if self._new_camera:
            message["camera"] = self.camera
        if control is not None:
            message["control"] = control
        self._clear_pending()
        return message

    def _clear_pending(self) -> None:
        self._new_changes, self._new_bb, self._new_samples, self._new_events = [], set(), {}, []
        self._new_scene = {}
        self._dirty = self._node_us_dirty = self._new_camera = False


def _vector(value: Any, size: int) -> list[float | None] | None:
    """``value`` as a list of ``size`` floats (None where not finite), or None if it is not one."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        row = value.ravel().tolist()
    else:
        try:
            row = np.asarray(value, dtype=float).ravel().tolist()
        except (TypeError, ValueError):
            return None
    if len(row) != size:
        return None
    if not math.isfinite(sum(row)):  # rare: only then look at each value
        row = [x if math.isfinite(x) else None for x in row]
    return row
