"""The run context shared by the executive and the behaviours of one mission run.

It holds what is per run rather than per node: the clock, the time each blackboard key was
last written (for staleness checks), the commands and events of the current tick (for the
recorder), the drivers by name, and the run's random generator. There is no module-level
state: two runs in one process each get their own context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Context:
    now: float = 0.0  # s, the executive's clock at the start of the current tick
    period: float = 0.008  # s, the tick period
    seed: int = 0
    stamps: dict[str, float] = field(default_factory=dict)
    # keys written this tick, in the order first written (a dict: its order, unlike a set's, does not
    # depend on the interpreter's string hashing, so the log's bb fields are the same in every process)
    dirty: dict[str, None] = field(default_factory=dict)
    commands: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    drivers: dict[str, Any] = field(default_factory=dict)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    summary: dict[str, Any] = field(default_factory=dict)  # fields leaves add to the run summary
    targets: dict[str, Any] = field(default_factory=dict)  # the mission's target specs
    world: Any = None  # the simulated world (ground truth: reports and tests only), or None
    workspace: tuple[np.ndarray, np.ndarray] | None = None  # the TCP's box (safety.workspace), base frame
    # the loop is paced by the wall clock (--realtime, hardware): long work (perception) runs in
    # threads beside the tick; on the simulated clock it is modelled (orbitree.nodes.offload)
    concurrent: bool = False

    def touched(self, key: str) -> None:
        """Note that ``key`` was written now."""
        self.stamps[key] = self.now
        self.dirty[key] = None

    def age(self, key: str) -> float | None:
        """Seconds since ``key`` was last written, or None if it never was."""
        stamp = self.stamps.get(key)
        return None if stamp is None else self.now - stamp

    def command(self, device: str, name: str, **args: Any) -> None:
        """Record a command sent to a driver this tick (the recorder logs it)."""
        self.commands.append({"device": device, "cmd": name, **args})

    def event(self, kind: str, **data: Any) -> None:
        """Record something worth a line in the log (a log leaf, a fault, a violation)."""
        self.events.append({"kind": kind, "t": self.now, **data})

    def take_tick_records(self) -> tuple[dict[str, None], list[dict[str, Any]], list[dict[str, Any]]]:
        """Hand over and reset what the current tick wrote, commanded and reported."""
        dirty, commands, events = self.dirty, self.commands, self.events
        self.dirty, self.commands, self.events = {}, [], []
        return dirty, commands, events
