"""What live views get after every tick, and what a view is to the executive.

Views see snapshots and the log header, never the tree itself, so the same view draws a live
run and a replayed log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Snapshot:
    tick: int
    t: float
    statuses: list[str]
    feedback: list[str]
    blackboard: dict[str, Any]
    tick_ms: float
    deadline_misses: int
    events: list[dict[str, Any]]
    scene: dict[str, Any] | None = None  # what the 3-D scene needs that changed (orbitree.runtime.scene)


class View(Protocol):
    def start(self, header: dict[str, Any]) -> None: ...

    def publish(self, snapshot: Snapshot) -> None: ...

    def finish(self, summary: dict[str, Any]) -> None: ...


class GatingView(View, Protocol):
    """A view that may hold the loop between ticks (the web view's pause, step, breakpoints).

    A view may also list ``blackboard_keys``: glob patterns it needs in its snapshots beyond the
    mission's ``view.keys`` (the web view plots ``/servo/error``, ``/servo/gain`` and wrenches).
    """

    def attach(self, node_times: Callable[[], dict], on_hold: Callable[[], None] | None) -> None: ...

    def before_tick(self, n: int) -> float: ...  # blocks while held; returns the seconds held
