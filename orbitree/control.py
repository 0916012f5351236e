"""Control nodes of the mission language: composites and decorators, and their parameters.

Composites: ``sequence`` and ``fallback`` (each with memory by default, ``reactive: true`` to
re-tick earlier children every tick), ``parallel`` (py_trees' success-on-all / one / selected
policies). Decorators: ``retry``, ``repeat``, ``timeout``, ``inverter``, ``one_shot``,
``rate_limit`` and ``guard``.

Why memory by default: most leaves in this project start a motion in ``initialise()``. A
reactive sequence would re-tick, and so restart, every motion that already finished each time
it is ticked; with memory a finished step stays finished. Reactivity is something an author asks
for where it is meant (``reactive: true``), or expresses with a ``guard``.

``timeout`` and ``rate_limit`` run on the executive's clock (simulated or wall), unlike
py_trees' own Timeout, which reads the wall clock and so would misbehave in a simulation that
runs faster than real time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

import py_trees
from py_trees.common import Status
from pydantic import Field, WithJsonSchema, field_validator

from orbitree.behaviours.condition import ConditionParams, check_blackboard
from orbitree.context import Context
from orbitree.leaf import NodeParams
from orbitree.quantities import Duration, Frequency

# A child node; the schema generator replaces this marker by a reference to the TreeNode union.
TREE_NODE_MARKER = "x-orbitree-tree-node"
TreeRef = Annotated[Any, WithJsonSchema({TREE_NODE_MARKER: True})]


class CompositeParams(NodeParams):
    reactive: bool = Field(False, description="re-tick earlier children every tick (no memory)")
    children: list[TreeRef] = Field(min_length=1)


class ParallelParams(NodeParams):
    policy: Literal["all", "one", "selected"] = Field(
        "all", description="succeed when all, any one, or the selected children succeed"
    )
    synchronise: bool = Field(True, description="do not re-tick children that already succeeded")
    selected: list[str] = Field([], description="child names for policy 'selected'")
    children: list[TreeRef] = Field(min_length=1)


class RetryParams(NodeParams):
    attempts: int = Field(ge=1, description="total attempts before failing")
    child: TreeRef


class RepeatParams(NodeParams):
    count: int = Field(ge=-1, description="successes needed; -1 repeats forever")
    child: TreeRef

    @field_validator("count")
    @classmethod
    def _nonzero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("count must be -1 (forever) or at least 1, got 0")
        return value


class TimeoutParams(NodeParams):
    duration: Duration = Field(gt=0.0)
    child: TreeRef


class InverterParams(NodeParams):
    child: TreeRef


class OneShotParams(NodeParams):
    on: Literal["success", "completion"] = Field(
        "success", description="latch after the first success, or after any completion"
    )
    child: TreeRef


class RateLimitParams(NodeParams):
    hz: Frequency = Field(gt=0.0, description="maximum rate at which the child is ticked")
    child: TreeRef


class GuardParams(NodeParams):
    condition: ConditionParams
    child: TreeRef


class SubtreeParams(NodeParams):
    ref: str = Field(description="name of an entry of 'subtrees'")


class IncludeParams(NodeParams):
    file: str = Field(description="YAML file holding 'tree' (and optionally 'subtrees')")


CONTROL_PARAMS: dict[str, type[NodeParams]] = {
    "sequence": CompositeParams,
    "fallback": CompositeParams,
    "parallel": ParallelParams,
    "retry": RetryParams,
    "repeat": RepeatParams,
    "timeout": TimeoutParams,
    "inverter": InverterParams,
    "one_shot": OneShotParams,
    "rate_limit": RateLimitParams,
    "guard": GuardParams,
    "subtree": SubtreeParams,
    "include": IncludeParams,
}
SHORTHAND: dict[str, str] = {
    "sequence": "children",
    "fallback": "children",
    "parallel": "children",
    "subtree": "ref",
    "include": "file",
}
CONTROL_DOCS: dict[str, str] = {
    "sequence": "tick children in order; fail at the first failure (memory unless reactive)",
    "fallback": "tick children in order; succeed at the first success (memory unless reactive)",
    "parallel": "tick all children every tick; succeed by policy all / one / selected",
    "retry": "re-run the child after a failure, up to 'attempts' tries in all",
    "repeat": "re-run the child after each success until 'count' successes (-1: forever)",
    "timeout": "fail and halt the child if it is still running after 'duration'",
    "inverter": "swap the child's SUCCESS and FAILURE",
    "one_shot": "run the child to completion once; afterwards return its final status",
    "rate_limit": "tick the child at most 'hz' times a second",
    "guard": "tick the child while 'condition' holds; halt it and fail when it stops holding",
    "subtree": "insert the named entry of 'subtrees'",
    "include": "insert the 'tree' of another YAML file (path relative to this file)",
}
COMPOSITES = ("sequence", "fallback", "parallel")
DECORATORS = ("retry", "repeat", "timeout", "inverter", "one_shot", "rate_limit", "guard")


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


def guard_condition(params: ConditionParams, ctx: Context):
    """The callable py_trees' EternalGuard evaluates before every tick of the child."""

    def holds(blackboard: Any) -> bool:
        passed, _ = check_blackboard(params, blackboard, ctx)
        return passed

    return holds
