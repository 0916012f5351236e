"""The mission log: JSON lines, flushed as it goes.

Format ``orbitree-log/1`` (one JSON object per line, each with a ``type``):

* ``header`` — ``mission``, ``file``, ``seed``, ``rate_hz``, ``start_time`` (ISO 8601, UTC),
  ``clock`` (``sim`` or ``wall``), ``nodes`` (the tree: ``id``, ``name``, ``kind``, ``parent``,
  ``where``, ``params``), ``recorded_keys`` (glob patterns);
* ``tick`` — ``n`` (tick number), ``t`` (mission time, s), ``tick_ms`` (time spent ticking the
  tree), ``status`` (node id -> new status, only nodes whose status changed), ``feedback``
  (node id -> new feedback message, only changes), ``bb`` (recorded keys written this tick ->
  value), ``cmd`` (commands sent to drivers), ``events`` (log messages, faults, violations);
  empty fields are left out;
* ``footer`` — ``summary`` (the object ``--summary`` writes) and ``node_tick_us`` (per node:
  mean and max time spent in that node itself, microseconds).

Every line is flushed when written, so a run cut off by a crash or ``kill -9`` leaves a log that
parses up to its last complete line; ``read_log`` does exactly that.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from pathlib import Path
from typing import Any, TextIO

import numpy as np

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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, default=to_jsonable, separators=(",", ":"))


class Recorder:
    """Appends records to a JSON-lines file (or nowhere, when ``path`` is None)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._file: TextIO | None = None

    def open(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
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


def read_log(path: str | Path) -> Log:
    """Parse a mission log, tolerating a final line cut off by a crash."""
    header: dict[str, Any] = {}
    ticks: list[dict[str, Any]] = []
    footer = None
    truncated = False
    with Path(path).open(encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # the unterminated last line of an interrupted run
                truncated = True
                break
            raise ValueError(f"{path}:{i + 1}: not a JSON record") from None
        kind = record.get("type")
        if kind == "header":
            header = record
        elif kind == "tick":
            ticks.append(record)
        elif kind == "footer":
            footer = record
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: not an orbitree log (format {header.get('format')!r})")
    return Log(header, ticks, footer, truncated)


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
