"""``wait``: stay RUNNING for a duration of mission time, then succeed.

YAML::

    - wait: 500 ms
    - wait: {duration: 2 s, name: settle}

Time is the executive's clock, so a wait lasts the same number of ticks in simulation (as fast
as the CPU allows) and on hardware (paced by the wall clock).
"""

from __future__ import annotations

from typing import ClassVar

import py_trees
from pydantic import Field

from orbitree.language.params import NodeParams
from orbitree.language.quantities import Duration
from orbitree.nodes.leaf import Leaf


class WaitParams(NodeParams):
    duration: Duration = Field(ge=0.0, description="how long to wait")


class Wait(Leaf):
    kind = "wait"
    Params = WaitParams
    shorthand: ClassVar[str | None] = "duration"
    params: WaitParams

    def initialise(self) -> None:
        self.until = self.ctx.now + self.params.duration

    def update(self) -> py_trees.common.Status:
        remaining = self.until - self.ctx.now
        if remaining <= 1e-9:
            self.feedback_message = "done"
            return py_trees.common.Status.SUCCESS
        self.feedback_message = f"{remaining:.2f} s left"
        return py_trees.common.Status.RUNNING
