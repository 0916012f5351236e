"""One fault of a run's schedule and where it is in its life: pending, active, done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EPS = 1e-9  # s: times this close count as equal (ticks land on float multiples of the period)


@dataclass
class ScheduledFault:
    index: int
    spec: Any  # one of orbitree.language.fault_spec's fault models
    robot: str | None
    target: str | None
    trigger_nodes: list[int]
    start: float | None  # when it starts: 'at', or the tick after its 'when' event
    end: float | None = None
    state: str = "pending"  # pending -> active -> done
    record: dict[str, Any] = field(default_factory=dict)

    def due(self, now: float) -> bool:
        """Pending, and its start time has come."""
        return self.state == "pending" and self.start is not None and now >= self.start - EPS

    def expired(self, now: float) -> bool:
        """Active, and its end time has come."""
        return self.state == "active" and self.end is not None and now >= self.end - EPS
