"""One tick, written down: the log record of what changed and the snapshot the views get."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import py_trees

from orbitree.nodes.context import Context
from orbitree.runtime.recorder import Recorder
from orbitree.runtime.scene import SceneSampler
from orbitree.runtime.snapshot import Snapshot, View


class TickLog:
    """Writes one ``tick`` record per tick (only what changed) and publishes one snapshot.

    Blackboard values are logged when written and matched by the mission's ``record.keys``; views
    get those matching ``view.keys`` and the patterns the views ask for themselves.
    """

    def __init__(
        self,
        recorder: Recorder,
        behaviours: Sequence[py_trees.behaviour.Behaviour],
        ctx: Context,
        record_patterns: Sequence[str],
        views: Sequence[View] = (),
        scene: SceneSampler | None = None,
    ) -> None:
        self.recorder = recorder
        self.behaviours = list(behaviours)
        self.ctx = ctx
        self.views = list(views)
        self.scene = scene
        self._record_patterns = list(record_patterns)
        self._view_patterns = [p for v in self.views for p in getattr(v, "blackboard_keys", ())]
        self._last_status = [b.status for b in self.behaviours]
        self._last_feedback = ["" for _ in self.behaviours]
        self._record_keys: dict[str, bool] = {}
        self._view_keys: dict[str, bool] = {}
        self._view_values: dict[str, Any] = {}
        self._view_statuses = [b.status.name for b in self.behaviours]

    def also_show(self, patterns: Sequence[str]) -> None:
        """Blackboard globs the views get besides their own (the mission's ``view.keys``)."""
        self._view_patterns = [*patterns, *self._view_patterns]

    def write(self, n: int, t: float, tick_ms: float, deadline_misses: int, final: bool = False) -> dict[int, str]:
        """Log tick ``n`` and publish it; return the node statuses that changed in it. The
        scene is sampled at its own rate, and always on the ``final`` record."""
        statuses = [b.status for b in self.behaviours]
        feedback = [b.feedback_message for b in self.behaviours]
        last = self._last_status
        changed = {i: st.name for i, (st, old) in enumerate(zip(statuses, last, strict=True)) if st is not old}
        fb = {i: f for i, (f, old) in enumerate(zip(feedback, self._last_feedback, strict=True)) if f != old}
        self._last_status[:], self._last_feedback[:] = statuses, feedback
        dirty, commands, events = self.ctx.take_tick_records()
        record: dict[str, Any] = {"type": "tick", "n": n, "t": round(t, 6), "tick_ms": round(tick_ms, 4)}
        if dirty:
            bb = _values(dirty, self._record_keys, self._record_patterns)
            if bb:
                record["bb"] = bb
        scene = self.scene.sample(t, force=final) if self.scene is not None else None
        for name, value in (("status", changed), ("feedback", fb), ("cmd", commands), ("events", events),
                            ("scene", scene)):
            if value:
                record[name] = value
        self.recorder.write(record)
        if self.views:
            self._publish(n, t, tick_ms, deadline_misses, dirty, changed, feedback, events, scene)
        return changed

    def _publish(self, n, t, tick_ms, deadline_misses, dirty, changed, feedback, events, scene) -> None:
        if dirty:
            self._view_values.update(_values(dirty, self._view_keys, self._view_patterns))
        if changed:  # a new list only when a status changed (naming 40 enums costs ~10 µs)
            self._view_statuses = list(self._view_statuses)
            for i, name in changed.items():
                self._view_statuses[i] = name
        snapshot = Snapshot(n, t, self._view_statuses, feedback, dict(self._view_values), tick_ms,
                            deadline_misses, events, scene)
        for view in self.views:
            view.publish(snapshot)


def _values(dirty: set[str], cache: dict[str, bool], patterns: list[str]) -> dict[str, Any]:
    """The values of the written keys that match ``patterns`` (matches cached per key)."""
    out = {}
    storage = py_trees.blackboard.Blackboard.storage  # read only: the log sees what leaves see
    for key in dirty:
        wanted = cache.get(key)
        if wanted is None:
            wanted = cache[key] = any(fnmatch.fnmatchcase(key, p) for p in patterns)
        if wanted:
            out[key] = storage.get(key)
    return out
