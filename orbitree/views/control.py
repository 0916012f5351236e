"""Pause, step, resume and breakpoints: a gate the executive passes between two ticks.

The web view's buttons never touch the tree. They set flags on a ``TickGate``; the executive
calls ``before_tick`` at the top of its loop, before the drivers are read, and the gate holds it
there while paused. So a pause always falls between two complete ticks, and a step runs exactly
one whole tick (drivers read, tree ticked, safety, record, views) before holding again.

Breakpoints are node ids: after a tick in which a breakpoint node *became* RUNNING the gate
pauses, so the page shows that node RUNNING and nothing ticks until the user steps or resumes.

Holding waits in short slices, so Ctrl-C (``KeyboardInterrupt``) and SIGTERM (whose handler
raises in the main thread) still end a paused run at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class GateState:
    """What the page shows about the gate."""

    paused: bool  # a pause was asked for (it takes effect before the next tick)
    held: bool  # the loop is waiting in ``before_tick`` right now
    held_at: int | None  # the tick number the loop is waiting to run
    reason: str  # why it paused: "pause", "breakpoint 'hold'", "start"
    breakpoints: tuple[int, ...]


class TickGate:
    """Thread-safe pause/step/resume/breakpoint flags, consulted by the tick loop."""

    SLICE_S = 0.1  # the longest a held loop waits before looking at signals again

    def __init__(self, paused: bool = False, on_change: Callable[[], None] | None = None) -> None:
        self._cond = threading.Condition()
        self._paused = paused
        self._steps = 0
        self._held_at: int | None = None
        self._reason = "start" if paused else ""
        self._released = False
        self.breakpoints: frozenset[int] = frozenset()  # swapped whole, read without the lock
        self._on_change = on_change or (lambda: None)

    # called from the server threads -------------------------------------------------------
    def pause(self, reason: str = "pause") -> None:
        with self._cond:
            if not self._paused:
                self._paused, self._reason = True, reason
            self._cond.notify_all()
        self._on_change()

    def resume(self) -> None:
        with self._cond:
            self._paused, self._steps, self._reason = False, 0, ""
            self._cond.notify_all()
        self._on_change()

    def step(self) -> None:
        """Run exactly one more tick, then hold again. While running, this only pauses."""
        with self._cond:
            if self._paused:
                self._steps += 1
            else:
                self._paused, self._reason = True, "pause"
            self._cond.notify_all()
        self._on_change()

    def set_breakpoint(self, node: int, on: bool) -> None:
        with self._cond:
            points = set(self.breakpoints)
            (points.add if on else points.discard)(node)
            self.breakpoints = frozenset(points)
        self._on_change()

    def release(self) -> None:
        """Let the loop run freely from now on (the view is closing)."""
        with self._cond:
            self._released, self._paused, self._steps = True, False, 0
            self._cond.notify_all()

    def state(self) -> GateState:
        with self._cond:
            return GateState(
                paused=self._paused,
                held=self._held_at is not None,
                held_at=self._held_at,
                reason=self._reason,
                breakpoints=tuple(sorted(self.breakpoints)),
            )

    # called from the tick thread ----------------------------------------------------------
    def before_tick(self, n: int, on_hold: Callable[[], None] | None = None) -> float:
        """Hold while paused; return the wall time held (s), 0.0 when not held.

        ``on_hold`` runs once when a hold begins (the executive stops hardware drivers there).
        """
        if not self._paused:  # the common case: no lock, no wait
            return 0.0
        with self._cond:
            if self._released or not self._paused:
                return 0.0
            if self._steps:
                self._steps -= 1
                return 0.0
            self._held_at = n
        self._on_change()
        started = time.monotonic()
        try:
            if on_hold is not None:
                on_hold()
            with self._cond:
                while self._paused and not self._steps and not self._released:
                    self._cond.wait(self.SLICE_S)
                if self._steps:
                    self._steps -= 1
        finally:
            with self._cond:
                self._held_at = None
            self._on_change()
        return time.monotonic() - started
