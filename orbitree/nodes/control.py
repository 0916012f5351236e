"""Control nodes that py_trees does not provide as the mission language means them.

The parameters of every control node are in :mod:`orbitree.language.params`; the tree builder
maps composites and most decorators onto py_trees' own classes. ``timeout`` and ``rate_limit``
run on the executive's clock (simulated or wall), unlike py_trees' own Timeout, which reads the
wall clock and so would misbehave in a simulation that runs faster than real time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import py_trees
from py_trees.common import Status

from orbitree.language.params import ConditionParams
from orbitree.nodes.conditions import check_blackboard
from orbitree.nodes.context import Context


class ClockTimeout(py_trees.decorators.Decorator):
    """FAILURE (and the child halted) when the child is still RUNNING ``duration`` after it began."""

    def __init__(
        self, name: str, child: py_trees.behaviour.Behaviour, duration: float, ctx: Context
    ):
        super().__init__(name=name, child=child)
        self.duration = duration
        self.ctx = ctx
        self.deadline = float("inf")

    def initialise(self) -> None:
        self.deadline = self.ctx.now + self.duration

    def update(self) -> Status:
        status = self.decorated.status
        if status == Status.RUNNING and self.ctx.now >= self.deadline - 1e-9:
            self.feedback_message = f"timed out after {self.duration:g} s"
            return Status.FAILURE
        self.feedback_message = f"{max(self.deadline - self.ctx.now, 0.0):.2f} s left"
        return status


class RateLimit(py_trees.decorators.Decorator):
    """Tick the child at most ``hz`` times a second; between ticks report RUNNING unchanged."""

    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, hz: float, ctx: Context):
        super().__init__(name=name, child=child)
        self.interval = 1.0 / hz
        self.ctx = ctx
        self.next_tick = -float("inf")

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if self.status == Status.RUNNING and self.ctx.now < self.next_tick - 1e-9:
            self.feedback_message = "held by rate limit"
            yield self
            return
        self.next_tick = self.ctx.now + self.interval
        yield from super().tick()

    def update(self) -> Status:
        return self.decorated.status


def make_guard(
    name: str, child: py_trees.behaviour.Behaviour, params: ConditionParams, ctx: Context
) -> py_trees.decorators.EternalGuard:
    """py_trees' EternalGuard on a condition's tests, which says why when it stops its child
    (its feedback: ``/mission/abort = True, not False``), so a failed run can explain itself."""
    made: list[py_trees.decorators.EternalGuard] = []  # the guard, once built (the check needs it)

    def holds(blackboard: Any) -> bool:
        passed, why = check_blackboard(params, blackboard, ctx)
        guard = made[0]
        if not passed:
            guard.feedback_message = f"condition failed: {why}"
        elif guard.feedback_message:
            guard.feedback_message = ""
        return passed

    made.append(py_trees.decorators.EternalGuard(name, child, condition=holds, blackboard_keys=[params.key]))
    return made[0]
