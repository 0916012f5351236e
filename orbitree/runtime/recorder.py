"""The mission log: JSON lines, flushed as it goes.

Format ``orbitree-log/1`` (one JSON object per line, each with a ``type``):

* ``header`` — ``mission``, ``file``, ``seed``, ``rate_hz``, ``start_time`` (ISO 8601, UTC),
  ``clock`` (``sim`` or ``wall``), ``nodes`` (the tree: ``id``, ``name``, ``kind``, ``parent``,
  ``where``, ``params``), ``recorded_keys`` (glob patterns), ``scene`` (missions with robots:
  the static 3-D scene, ``orbitree.runtime.scene``);
* ``tick`` — ``n`` (tick number), ``t`` (mission time, s), ``tick_ms`` (time spent ticking the
  tree), ``status`` (node id -> new status, only nodes whose status changed), ``feedback``
  (node id -> new feedback message, only changes), ``bb`` (recorded keys written this tick ->
  value), ``cmd`` (commands sent to drivers), ``events`` (log messages, faults, violations),
  ``scene`` (what the 3-D scene needs that changed, at most 25 times a second: joint angles,
  body poses, estimates, contact forces); empty fields are left out;
* ``footer`` — ``summary`` (the object ``--summary`` writes) and ``node_tick_us`` (per node:
  mean and max time spent in that node itself, microseconds).

The header and the footer are flushed when written, tick records at least every
``FLUSH_INTERVAL_S`` of wall time (a write to the operating system per tick would cost more than
the rest of the record), so a run cut off by a crash or ``kill -9`` leaves a log that parses up
to its last complete line, at most that long before the cut; ``read_log`` does exactly that.
The tick log queues its records and has them formatted at each flush (``Recorder.attach``), so
the formatting too runs once per flush rather than in every tick.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from orbitree.drivers.lazy_frame import LazyFrame

FORMAT = "orbitree-log/1"


MAX_LOGGED_ARRAY = 64  # larger arrays (images) are logged as their shape, not their values


def to_jsonable(value: Any) -> Any:
    """``json.dumps`` fallback for numpy, enums, dataclasses and sets.

    Images and other large arrays are summarised (shape and dtype); a driver's ``Frame`` is
    logged as its stamp and shape.
    """
    if isinstance(value, np.ndarray):
        if value.size > MAX_LOGGED_ARRAY:
            return {"array": list(value.shape), "dtype": str(value.dtype)}
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, LazyFrame):  # logged as any frame, without rendering its image for it
        return {"image": {"array": list(value.shape), "dtype": "uint8"}, "stamp": value.stamp, "meta": value.meta}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


_ENCODER = json.JSONEncoder(default=to_jsonable, separators=(",", ":"))  # json.dumps's, made once
_THREAD = threading.local()  # each thread's C encoder (``_c_encoder``)


def dumps(record: dict[str, Any]) -> str:
    """``json.dumps(record, default=to_jsonable, separators=(",", ":"))``.

    ``JSONEncoder.encode`` makes a C encoder (``json.encoder.c_make_encoder``) for each object it
    encodes, with these very arguments, and joins what it returns; here each thread keeps its
    one (~1 µs less per record's object: the tick log encodes a few per tick on a mission with
    arms). The same C code writes the same text.
    """
    try:
        encode, markers = _THREAD.encoder
    except AttributeError:
        encode, markers = _THREAD.encoder = _c_encoder()
    if encode is None:  # no C accelerator in this Python
        return _ENCODER.encode(record)
    try:
        return "".join(encode(record, 0))
    except BaseException:
        markers.clear()  # the containers being encoded when it raised (circular references' check)
        raise


def _c_encoder() -> tuple[Any, dict[int, Any]]:
    """A C encoder made as ``_ENCODER.iterencode(o, _one_shot=True)`` makes it, and its dict of
    the containers being encoded (empty between two calls)."""
    markers: dict[int, Any] = {}
    make = json.encoder.c_make_encoder
    if make is None or _ENCODER.indent is not None or not _ENCODER.check_circular or not _ENCODER.ensure_ascii:
        return None, markers
    return make(markers, _ENCODER.default, json.encoder.encode_basestring_ascii, _ENCODER.indent,
                _ENCODER.key_separator, _ENCODER.item_separator, _ENCODER.sort_keys, _ENCODER.skipkeys,
                _ENCODER.allow_nan), markers


def decimal_text(x: float, digits: int) -> str:
    """``dumps(round(x, digits))`` for a float, faster: the same text for every ``x``.

    Between 1e-4 and 1e9 (and for 0) ``repr`` of the rounded value is the fixed-point text of
    ``x`` to ``digits`` places without trailing zeros: both come from the same correctly rounded
    decimal, and with at most 15 significant digits that decimal is also the shortest that reads
    back as the same double (``digits`` <= 6). Elsewhere (and for NaN, infinities) it is computed
    as ``dumps`` does.
    """
    if 1e-4 <= x < 1e9 or x == 0.0:
        text = f"{x:.{digits}f}"
        text = text.rstrip("0")
        return text + "0" if text[-1] == "." else text
    return _ENCODER.encode(round(float(x), digits))


FLUSH_INTERVAL_S = 0.05
"""Wall time a written tick record may wait in the file's buffer (s)."""


class Recorder:
    """Appends records to a JSON-lines file (or nowhere, when ``path`` is None)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._file: TextIO | None = None
        self._lines: list[str] = []  # tick lines not yet handed to the file
        self._flushed = 0.0  # time.monotonic() of the last flush
        self.due = FLUSH_INTERVAL_S  # time.monotonic() from which a tick record written is flushed
        self._queued: Callable[[], list[str]] | None = None  # the tick records queued elsewhere

    def attach(self, queued: Callable[[], list[str]]) -> None:
        """Tick records are queued elsewhere (the tick log): ``queued()`` formats the records
        waiting and empties the queue; the recorder calls it when it drains, before anything it
        writes after them (the footer)."""
        self._queued = queued

    def open(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        """Write one record and flush it (the header, the footer)."""
        if self._file is None:
            return
        self._drain()
        self._file.write(dumps(record) + "\n")
        self._file.flush()
        self._flushed = time.monotonic()
        self.due = self._flushed + FLUSH_INTERVAL_S

    def write_line(self, line: str) -> None:
        """Write one record already encoded (a tick); flushed within ``FLUSH_INTERVAL_S``."""
        if self._file is None:
            return
        self._lines.append(line)
        self._flush_if_due()

    def queued(self) -> None:
        """A tick record was queued (``attach``): flushed within ``FLUSH_INTERVAL_S``. (The tick
        log calls this only once ``time.monotonic()`` reaches ``due``: a tick costs no call.)"""
        if self._file is not None:
            self._flush_if_due()

    def _flush_if_due(self) -> None:
        now = time.monotonic()
        if now - self._flushed >= FLUSH_INTERVAL_S:
            self._drain()
            self._file.flush()
            self._flushed = now
            self.due = now + FLUSH_INTERVAL_S

    def _drain(self) -> None:
        """Hand the waiting tick lines to the file, in one write."""
        if self._queued is not None:
            self._lines += self._queued()
        if self._lines and self._file is not None:
            self._lines.append("")
            self._file.write("\n".join(self._lines))
            self._lines.clear()

    def close(self) -> None:
        if self._file is not None:
            self._drain()
            self._file.close()
            self._file = None


@dataclasses.dataclass
class Log:
    header: dict[str, Any]
    ticks: list[dict[str, Any]]
    footer: dict[str, Any] | None
    truncated: bool  # the last line was cut off mid-write

    def status_trace(self) -> list[tuple[int, int, str]]:
        """(tick, node id, status) for every recorded status change, in order."""
        return [(t["n"], int(k), v) for t in self.ticks for k, v in t.get("status", {}).items()]


# The longest line orbitree writes is the header (the tree with every node's parameters: ~20 kB
# for the flagship mission); tick records are small, images are logged as their shape. A line of
# 4 MiB is already not one of ours, and reading lines no longer than that bounds the memory a
# hostile or corrupted file (one line of gigabytes) costs.
MAX_LOG_LINE_BYTES = 4 * 1024 * 1024

# Integer digits a log may hold: every integer orbitree logs fits in 64 bits (19 digits). JSON
# itself has no bound, and Python refuses only past 4,300 digits (with a ValueError from deep in
# a report's numpy call), so longer integers are refused at their line.
MAX_INT_DIGITS = 20

# Mission time in a tick record, s (31 years): no run is longer, and a replay that waited for a
# hand-edited t = 1e300 would wait forever (or fail inside time.sleep).
MAX_LOG_TIME_S = 1e9

STATUSES = ("INVALID", "RUNNING", "SUCCESS", "FAILURE")


class LogError(ValueError):
    """A mission log that cannot be read: ``file:line: message`` (``file: message`` for the whole file)."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (a log holds 64-bit integers)")
    return int(text)


def read_log(path: str | Path) -> Log:
    """Parse a mission log, tolerating a final line cut off by a crash.

    Every record is checked against the format above, so that replays, views and reports can
    rely on it: a line that is not JSON, a record of the wrong shape (a field of the wrong type, a
    node id or a status out of range, time going backwards) raises ``LogError`` naming its line.
    Only the last line may be cut off (it then sets ``truncated``); a line must end in a newline
    to count as written.
    """
    path = Path(path)
    header: dict[str, Any] | None = None
    ticks: list[dict[str, Any]] = []
    footer = None
    truncated = False
    last: tuple[int, float] = (0, 0.0)
    with path.open("rb") as fh:
        number = 0
        while raw := fh.readline(MAX_LOG_LINE_BYTES + 1):
            number += 1
            complete = raw.endswith(b"\n")
            if len(raw) > MAX_LOG_LINE_BYTES:
                raise LogError(path, number, f"a line longer than {MAX_LOG_LINE_BYTES // (1024 * 1024)} MiB: "
                                             "not one orbitree writes")
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"), parse_int=_bounded_int)
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError too
                if not complete:  # the unterminated last line of an interrupted run
                    truncated = True
                    break
                reason = str(exc) if len(str(exc)) < 120 else str(exc)[:120] + "..."
                if isinstance(exc, RecursionError):
                    reason = "nested too deep"
                raise LogError(path, number, f"not a JSON record ({reason})") from None
            if not isinstance(record, dict):
                raise LogError(path, number, f"expected a JSON object, got {_json_type(record)}")
            kind = record.get("type")
            if header is None:
                if kind != "header":
                    raise LogError(path, number, f"not an orbitree log: its first record is {_shown(kind)}, "
                                                 "not a header")
                if record.get("format") != FORMAT:
                    raise LogError(path, number, f"not an orbitree log (format {_shown(record.get('format'))}; "
                                                 f"expected {FORMAT!r})")
                _check(path, number, _header_problem(record))
                header = record
            elif footer is not None:
                raise LogError(path, number, f"a {_shown(kind)} record after the footer")
            elif kind == "tick":
                _check(path, number, _tick_problem(record, len(header["nodes"]), last))
                last = (record["n"], record["t"])
                ticks.append(record)
            elif kind == "footer":
                _check(path, number, _footer_problem(record))
                footer = record
            else:
                raise LogError(path, number, f"unknown record type {_shown(kind)} (expected tick or footer)")
    if header is None:
        raise LogError(path, None, "not an orbitree log: it holds no header record")
    return Log(header, ticks, footer, truncated)


def _check(path: Path, number: int, problem: str | None) -> None:
    if problem is not None:
        raise LogError(path, number, problem)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    return names.get(type(value), "null")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _header_problem(record: dict[str, Any]) -> str | None:
    nodes = record.get("nodes")
    if not isinstance(nodes, list):
        return f"header: 'nodes' must be a list of tree nodes, got {_json_type(nodes)}"
    for i, node in enumerate(nodes):
        where = f"header: nodes[{i}]"
        if not isinstance(node, dict):
            return f"{where} must be an object, got {_json_type(node)}"
        if node.get("id") != i or not _is_int(node.get("id")):
            return f"{where}: 'id' must be {i} (ids are the nodes' positions), got {_shown(node.get('id'))}"
        for name in ("name", "kind"):
            if not isinstance(node.get(name), str):
                return f"{where}: {name!r} must be a string, got {_shown(node.get(name))}"
        parent = node.get("parent")
        if parent is not None and not (_is_int(parent) and 0 <= parent < i):
            return f"{where}: 'parent' must be null or the id of an earlier node, got {_shown(parent)}"
        if not isinstance(node.get("params", {}), dict):
            return f"{where}: 'params' must be an object, got {_json_type(node.get('params'))}"
    if not isinstance(record.get("mission", ""), str):
        return f"header: 'mission' must be a string, got {_shown(record.get('mission'))}"
    phases = record.get("phases")
    if phases is not None and not (isinstance(phases, list) and all(isinstance(p, str) for p in phases)):
        return f"header: 'phases' must be null or a list of node names, got {_shown(phases)}"
    return None


def _tick_problem(record: dict[str, Any], count: int, last: tuple[int, float]) -> str | None:
    n, t = record.get("n"), record.get("t")
    if not (_is_int(n) and n >= 0):
        return f"tick: 'n' must be a tick number (an integer >= 0), got {_shown(n)}"
    if not (_is_number(t) and 0.0 <= t <= MAX_LOG_TIME_S):
        return f"tick {n}: 't' must be a mission time in s (from 0 to {MAX_LOG_TIME_S:g}), got {_shown(t)}"
    if n < last[0] or t < last[1]:
        return (f"tick {n} at t = {t}: tick numbers and times never go back, but the record before was "
                f"tick {last[0]} at t = {last[1]}")
    if not (_is_number(record.get("tick_ms", 0.0)) and math.isfinite(record.get("tick_ms", 0.0))):
        return f"tick {n}: 'tick_ms' must be a finite number, got {_shown(record.get('tick_ms'))}"
    for field, wanted in (("status", STATUSES), ("feedback", None)):
        changes = record.get(field, {})
        if not isinstance(changes, dict):
            return f"tick {n}: {field!r} must be an object of node id -> value, got {_json_type(changes)}"
        for key, value in changes.items():
            if not (key.isascii() and key.isdigit() and len(key) < 10 and int(key) < count):
                return (f"tick {n}: {field}: {_shown(key)} is not a node id (the header has {count} nodes, "
                        f"0 to {count - 1})")
            if wanted is not None and value not in wanted:
                return f"tick {n}: status of node {key}: {_shown(value)} is not one of {', '.join(wanted)}"
            if wanted is None and not isinstance(value, str):
                return f"tick {n}: feedback of node {key} must be a string, got {_shown(value)}"
    if not isinstance(record.get("bb", {}), dict):
        return f"tick {n}: 'bb' must be an object of key -> value, got {_json_type(record.get('bb'))}"
    if not isinstance(record.get("cmd", []), list):
        return f"tick {n}: 'cmd' must be a list, got {_json_type(record.get('cmd'))}"
    events = record.get("events", [])
    if not (isinstance(events, list) and all(isinstance(e, dict) for e in events)):
        return f"tick {n}: 'events' must be a list of objects, got {_shown(events)}"
    scene = record.get("scene", {})
    if not (isinstance(scene, dict) and all(isinstance(v, dict) for v in scene.values())):
        return f"tick {n}: 'scene' must be an object of field -> (name -> value), got {_shown(scene)}"
    return None


def _footer_problem(record: dict[str, Any]) -> str | None:
    summary = record.get("summary")
    if summary is not None:
        if not isinstance(summary, dict):
            return f"footer: 'summary' must be an object, got {_json_type(summary)}"
        for name in ("status", "reason"):
            if not isinstance(summary.get(name), str):
                return f"footer: summary: {name!r} must be a string, got {_shown(summary.get(name))}"
    node_us = record.get("node_tick_us")
    timings = isinstance(node_us, dict) and all(isinstance(v, dict) for v in node_us.values())
    if node_us is not None and not timings:
        return f"footer: 'node_tick_us' must be an object of node id -> timings, got {_shown(node_us)}"
    return None


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
