"""One tick, written down: the log record of what changed and the snapshot the views get."""

from __future__ import annotations

import fnmatch
import operator
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import compress
from json.encoder import encode_basestring_ascii as _string  # json.dumps's, in C
from operator import is_not, ne
from time import monotonic as _monotonic
from typing import Any

import py_trees

from orbitree.nodes.context import Context
from orbitree.runtime.recorder import Recorder, decimal_text, dumps
from orbitree.runtime.scene import SceneSampler
from orbitree.runtime.snapshot import Snapshot, View


class TickLog:
    """Writes one ``tick`` record per tick (only what changed) and publishes one snapshot.

    Blackboard values are logged when written and matched by the mission's ``record.keys``; views
    get those matching ``view.keys`` and the patterns the views ask for themselves.

    The per-tick cost is kept to what changed. A node's status and feedback change only while
    it ticks or is stopped (py_trees sets them in ``tick`` and ``stop``, leaves in ``update``,
    ``initialise`` and ``terminate``), so only those nodes are looked at: the executive's timer
    notes in ``touched`` the nodes it ticks whose status or feedback then differ from the logged
    ones (``seen``; a node ticked is done with its tick when py_trees yields it, and only a stop
    changes it after that), and a node's ``stop`` by another node notes it there too (in
    ``terminate``, which every py_trees ``stop`` calls; ``_note_stops``).
    The whole tree is compared on the first record, after ``rescan()`` (a tick of a tree the
    timer does not see: the recovery) and on the final record. The record is formatted around
    the JSON of the fields that changed, and the views' snapshots share the lists and the
    blackboard dict of the tick before when nothing in them changed (views read snapshots, they
    never modify them). Without a log file nothing is formatted (nor the scene sampled, without
    views either); with one, the numbers, statuses and messages of a record are formatted when
    the recorder drains (the JSON of the fields that hold objects is made in the tick), all the
    records waiting in one go.
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
        self._ids = range(len(self.behaviours))
        self.touched: list[int] = []  # ids of the nodes ticked or stopped since the last record
        self._full = True  # compare every node on the next record
        for i, node in enumerate(self.behaviours):
            _note_stops(node, i, self.touched)
        # '"3":"RUNNING"' per node and status: the status field's JSON, made once
        # a status or feedback field's JSON, made once per node (and status): its first entry
        # with the field's name, ',"status":{"3":"RUNNING"', and the next ones, ',"4":"SUCCESS"'
        self._status_first = [{name: f',"status":{{"{i}":"{name}"' for name in _STATUS_NAMES} for i in self._ids]
        self._status_next = [{name: f',"{i}":"{name}"' for name in _STATUS_NAMES} for i in self._ids]
        self._feedback_first = [f',"feedback":{{"{i}":' for i in self._ids]
        self._feedback_next = [f',"{i}":' for i in self._ids]
        self._last_status = [b.status for b in self.behaviours]
        self._last_feedback = ["" for _ in self.behaviours]
        # each node's status and feedback as last logged (by node id, changed in place only): the
        # timer notes in ``touched`` only the nodes ticked that differ from these when ticked
        self.seen = (self._last_status, self._last_feedback)
        self._record_keys: dict[str, bool] = {}
        self._view_keys: dict[str, bool] = {}
        self._view_values: dict[str, Any] = {}
        self._view_statuses = [b.status.name for b in self.behaviours]
        self._view_feedback = list(self._last_feedback)
        # tick records waiting for the recorder's next drain: (n, t, tick_ms, the bb field's
        # JSON, status changes, feedback changes, the JSON of the fields after them)
        # (the seven values of each record one after the other in one list: a tuple per record
        # kept until the drain would be one more object for the garbage collector to look at
        # in each of its passes, and a pass more every few hundred ticks)
        self._queue: list[Any] = []
        self._logging = recorder.path is not None
        self._sample_scene = scene is not None and (self._logging or bool(self.views))  # anyone to show it?
        recorder.attach(self._format_queue)

    def rescan(self) -> None:
        """Compare every node's status and feedback on the next record."""
        self._full = True

    def also_show(self, patterns: Sequence[str]) -> None:
        """Blackboard globs the views get besides their own (the mission's ``view.keys``)."""
        self._view_patterns = [*patterns, *self._view_patterns]

    def write(self, n: int, t: float, tick_ms: float, deadline_misses: int, final: bool = False) -> dict[int, str]:
        """Log tick ``n`` and publish it; return the node statuses that changed in it. The
        scene is sampled at its own rate, and always on the ``final`` record."""
        changed, fb = self._scan() if (self._full or final) else self._changes()
        ctx = self.ctx
        if ctx.dirty or ctx.commands or ctx.events:
            dirty, commands, events = ctx.take_tick_records()
        else:
            dirty, commands, events = _NO_KEYS, _NOTHING, _NOTHING
        scene = self.scene.sample(t, force=final) if self._sample_scene else None
        if self._logging:
            # bb, cmd, events and scene hold objects a leaf may change later: their JSON now; the
            # rest of the record (numbers, statuses, messages: immutable) is formatted when the
            # recorder drains the queue (``_format_queue``), all the queued records in one go
            bb_text = tail = ""
            if dirty:
                bb = _values(dirty, self._record_keys, self._record_patterns)
                if bb:
                    bb_text = ',"bb":' + dumps(bb)
            if commands:
                tail = ',"cmd":' + dumps(commands)
            if events:
                tail += ',"events":' + dumps(events)
            if scene:
                tail += ',"scene":' + dumps(scene)
            self._queue += (n, t, tick_ms, bb_text, changed, fb, tail)
            if _monotonic() >= self.recorder.due:  # the recorder's test, without its two calls
                self.recorder.queued()
        if self.views:
            if fb:  # a new list only when a message changed
                self._view_feedback = list(self._last_feedback)
            self._publish(n, t, tick_ms, deadline_misses, dirty, changed, self._view_feedback, events or [], scene)
        return changed

    def _format_queue(self) -> list[str]:
        """The queued tick records as JSON lines, exactly as ``dumps`` would write them (same
        fields, same order, same text); the queue is emptied. The status and feedback fields
        are put together from texts made once per node (``_status_first`` and the like), entry
        after entry, rather than joined from a list made for each record."""
        queue, self._queue = self._queue, []
        first_status, next_status = self._status_first, self._status_next
        first_key, next_key = self._feedback_first, self._feedback_next
        lines = []
        append = lines.append
        records = iter(queue)
        for n, t, tick_ms, bb_text, changed, fb, tail in zip(*(records,) * 7, strict=True):
            # t and tick_ms as decimal_text writes them, inlined for the usual range (a call
            # costs as much as the formatting)
            if 1e-4 <= t < 1e9 and 1e-4 <= tick_ms < 1e9:
                t_text = f"{t:.6f}".rstrip("0")
                ms_text = f"{tick_ms:.4f}".rstrip("0")
                if t_text[-1] == ".":
                    t_text += "0"
                if ms_text[-1] == ".":
                    ms_text += "0"
            else:
                t_text, ms_text = decimal_text(t, 6), decimal_text(tick_ms, 4)
            record = f'{{"type":"tick","n":{n},"t":{t_text},"tick_ms":{ms_text}{bb_text}'  # n: an int
            if changed:
                entries = None
                for i, name in changed.items():
                    if entries is None:
                        entries = first_status[i][name]  # ',"status":{"3":"RUNNING"'
                    else:
                        entries += next_status[i][name]  # ',"4":"SUCCESS"'
                record += entries + "}"
            if fb:
                try:
                    entries = None
                    for i, message in fb.items():
                        if entries is None:
                            entries = first_key[i] + _string(message)  # ',"feedback":{"3":' + '"done"'
                        else:
                            entries += next_key[i] + _string(message)  # ',"4":' + ...
                    record += entries + "}"
                except TypeError:  # a message that is not a string (read_log refuses it, as before)
                    record += ',"feedback":' + dumps(fb)
            append(record + tail + "}")
        return lines

    def _scan(self) -> tuple[dict[int, str], dict[int, str]]:
        """The statuses and messages that changed, of every node."""
        self._full = False
        self.touched.clear()
        behaviours = self.behaviours
        statuses = list(map(_STATUS, behaviours))
        last = self._last_status
        changed: dict[int, str] = {}
        if statuses != last:  # identical members compare by identity: no enum code runs
            # the indices of the nodes whose status changed, found in C (compress, map)
            changed = {i: statuses[i]._name_ for i in compress(self._ids, map(is_not, statuses, last))}
            last[:] = statuses  # in place: the timer holds these lists (``seen``)
        feedback = list(map(_FEEDBACK, behaviours))
        fb: dict[int, str] = {}
        if feedback != self._last_feedback:
            fb = {i: feedback[i] for i in compress(self._ids, map(ne, feedback, self._last_feedback))}
            self._last_feedback[:] = feedback
        return changed, fb

    def _changes(self) -> tuple[dict[int, str], dict[int, str]]:
        """The statuses and messages that changed, of the nodes touched since the last record
        (a node touched twice is looked at twice: the second look finds nothing new)."""
        touched = self.touched
        if not touched:
            return _NO_CHANGE, _NO_CHANGE
        # in node order, as a comparison of every node lists them: one sort of the ids in C
        # rather than one of each dict found
        touched.sort()
        if touched[0] < 0:  # the timer's spare slot (a node not of the tree): nothing to log
            del touched[:bisect_left(touched, 0)]
        behaviours, statuses, messages = self.behaviours, self._last_status, self._last_feedback
        changed: dict[int, str] = {}
        fb: dict[int, str] = {}
        for i in touched:
            node = behaviours[i]
            status = node.status
            if status is not statuses[i]:
                statuses[i] = status
                changed[i] = status._name_
            message = node.feedback_message
            if message != messages[i]:
                messages[i] = message
                fb[i] = message
        touched.clear()
        return changed, fb

    def _publish(self, n, t, tick_ms, deadline_misses, dirty, changed, feedback, events, scene) -> None:
        if dirty:
            values = _values(dirty, self._view_keys, self._view_patterns)
            if values:  # a new dict only when a shown key was written
                self._view_values = {**self._view_values, **values}
        if changed:  # a new list only when a status changed (naming 40 enums costs ~10 µs)
            self._view_statuses = list(self._view_statuses)
            for i, name in changed.items():
                self._view_statuses[i] = name
        snapshot = Snapshot(n, t, self._view_statuses, feedback, self._view_values, tick_ms,
                            deadline_misses, events, scene)
        for view in self.views:
            view.publish(snapshot)


_STATUS = operator.attrgetter("status")
_STATUS_NAMES = tuple(s.name for s in py_trees.common.Status)  # (iterating an Enum costs ~1 µs a member)
_FEEDBACK = operator.attrgetter("feedback_message")
_NO_KEYS: frozenset[str] = frozenset()
_NO_CHANGE: dict[int, str] = {}  # returned, never filled
_NOTHING: tuple[()] = ()


def _values(dirty: Iterable[str], cache: dict[str, bool], patterns: list[str]) -> dict[str, Any]:
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


def _note_stops(node: py_trees.behaviour.Behaviour, i: int, touched: list[int]) -> None:
    """Have each stop of ``node`` by another node note ``i`` in ``touched`` (it may change the
    node's status and, through ``terminate``, its feedback after the node's own tick).

    Every py_trees ``stop`` (a behaviour's, a composite's, a decorator's) calls the node's
    ``terminate`` before it sets the new status, so the note is taken there: a node that keeps
    py_trees' own ``terminate`` (which does nothing) gets the note in its place, a call for a call;
    one with a ``terminate`` of its own gets it wrapped (a motion leaf stopping its arm). Only a
    stop to INVALID is noted: that is how py_trees stops a node from outside it (a parent
    interrupting its children, a halt); a stop to SUCCESS or FAILURE is a node ending its own
    tick, which it then yields to the timer with that status (py_trees' ``tick`` methods:
    ``self.stop(status)``, then ``yield self``)."""
    note = touched.append
    terminate = node.terminate
    invalid = py_trees.common.Status.INVALID
    if getattr(terminate, "__func__", None) is _NOOP_TERMINATE:

        def noted(new_status: py_trees.common.Status) -> None:
            if new_status is invalid:
                note(i)

    else:

        def noted(new_status: py_trees.common.Status) -> None:
            if new_status is invalid:
                note(i)
            terminate(new_status)

    node.terminate = noted  # type: ignore[method-assign]


_NOOP_TERMINATE = py_trees.behaviour.Behaviour.terminate
