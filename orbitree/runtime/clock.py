"""Clocks of the tick loop.

* ``SimClock``: mission time advances by exactly one period per tick, in lockstep with the
  simulated world, as fast as the CPU allows (deterministic for a seed). With ``realtime`` it
  also waits so that mission time keeps pace with the wall clock (to watch a simulation).
* ``WallClock``: mission time is elapsed wall time; each tick starts on a deadline one period
  after the previous one. A tick that ends after the next deadline is a deadline miss; the
  schedule then skips ahead rather than bursting to catch up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class SimClock:
    period: float
    realtime: bool = False
    now: float = 0.0
    ticks: int = 0
    deadline_misses: int = 0
    _start: float = field(default_factory=time.monotonic)

    def start(self) -> None:
        self._start = time.monotonic()

    def hold(self, seconds: float) -> None:
        """Time spent held between ticks (a paused view) is not mission time: move the origin."""
        self._start += seconds

    def wait_next(self) -> None:
        """End the current tick: advance mission time (and pace it, when realtime)."""
        self.ticks += 1
        self.now = self.ticks * self.period
        if self.realtime:
            lag = time.monotonic() - self._start - self.now
            if lag > self.period:
                self.deadline_misses += 1
            elif lag < 0:
                time.sleep(-lag)


@dataclass
class WallClock:
    period: float
    now: float = 0.0
    ticks: int = 0
    deadline_misses: int = 0
    _start: float = field(default_factory=time.monotonic)
    _next: float = 0.0

    def start(self) -> None:
        self._start = time.monotonic()
        self._next = self.period
        self.now = 0.0

    def hold(self, seconds: float) -> None:
        """Time spent held between ticks (a paused view) is not mission time: move the origin."""
        self._start += seconds

    def wait_next(self) -> None:
        """End the current tick: sleep to the next slot, or count a miss and start at once."""
        self.ticks += 1
        elapsed = time.monotonic() - self._start
        if elapsed > self._next:
            self.deadline_misses += 1
            self._next = (int(elapsed / self.period) + 1) * self.period  # realign, no burst
        else:
            time.sleep(self._next - elapsed)
            self._next += self.period
        self.now = time.monotonic() - self._start


Clock = SimClock | WallClock
