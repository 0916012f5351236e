"""``orbitree replay LOG --view terminal``: a mission log played back in the terminal view.

The log holds only what changed each tick; playing it folds the changes back into the full
snapshots a live run hands its views, and publishes them paced to ``speed`` times mission time.
(The web replay, with its slider, lives in ``orbitree.views.replay_web``.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from orbitree.runtime.recorder import Log
from orbitree.runtime.snapshot import Snapshot


def snapshots(log: Log) -> Iterator[Snapshot]:
    """The live views' snapshots, rebuilt from a log's tick records."""
    count = len(log.header.get("nodes", []))
    statuses, feedback = ["INVALID"] * count, [""] * count
    blackboard: dict[str, Any] = {}
    for record in log.ticks:
        for key, value in record.get("status", {}).items():
            statuses[int(key)] = value
        for key, value in record.get("feedback", {}).items():
            feedback[int(key)] = value
        blackboard.update(record.get("bb", {}))
        yield Snapshot(
            tick=record["n"],
            t=record["t"],
            statuses=list(statuses),
            feedback=list(feedback),
            blackboard=dict(blackboard),
            tick_ms=record.get("tick_ms", 0.0),
            deadline_misses=0,
            events=record.get("events", []),
        )


def replay_terminal(log: Log, speed: float = 1.0, view: Any = None) -> None:
    """Play ``log`` in a terminal view (a new ``TerminalView`` unless one is given)."""
    if view is None:
        from orbitree.views.terminal import TerminalView

        view = TerminalView()
    view.start(log.header)
    started = time.monotonic()
    summary = (log.footer or {}).get("summary") or {
        "status": "TRUNCATED" if log.truncated else "INCOMPLETE",
        "reason": "the log has no footer",
    }
    try:
        for snap in snapshots(log):
            wait = snap.t / speed - (time.monotonic() - started)
            if wait > 0:
                time.sleep(wait)
            view.publish(snap)
    except KeyboardInterrupt:
        summary = {"status": "STOPPED", "reason": "replay stopped (Ctrl-C)"}
    view.finish(summary)
