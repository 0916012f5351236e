"""Simulated docking latch: the hooks of the active interface, closing and opening over time.

``close()`` and ``open()`` return at once; the hooks travel for ``travel_time`` seconds of
simulated time (stepped by the sim world) and ``state()`` reports OPENING / CLOSING until they
arrive. ``closure`` (0 open .. 1 closed) is what the sim world's hook-force model reads: hooks
only grip when the passive interface is inside their reach. ``jammed`` (fault injection) makes
the hooks stop where they are and report FAULT.
"""

from __future__ import annotations

from orbitree.drivers.interfaces import LatchState


class SimLatch:
    def __init__(self, name: str = "latch", travel_time: float = 1.0) -> None:
        if travel_time <= 0:
            raise ValueError(f"travel_time must be > 0 s, got {travel_time}")
        self.name = name
        self.travel_time = travel_time
        self.closure = 0.0
        self._direction = 0  # +1 closing, -1 opening, 0 still
        self.jammed = False

    def setup(self) -> None:
        pass

    def shutdown(self) -> None:
        self._direction = 0

    def close(self) -> None:
        if not self.jammed:
            self._direction = 1

    def open(self) -> None:
        if not self.jammed:
            self._direction = -1

    def state(self) -> LatchState:
        if self.jammed:
            return LatchState.FAULT
        if self._direction > 0:
            return LatchState.CLOSING
        if self._direction < 0:
            return LatchState.OPENING
        return LatchState.CLOSED if self.closure >= 1.0 else LatchState.OPEN

    def step(self, dt: float) -> None:
        if self.jammed or self._direction == 0:
            return
        self.closure = min(1.0, max(0.0, self.closure + self._direction * dt / self.travel_time))
        if self.closure in (0.0, 1.0):
            self._direction = 0
