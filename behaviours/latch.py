"""``latch``: open or close the docking hooks and wait until they get there.

YAML::

    - latch: {robot: arm, action: open}                 # release the passive interface
    - latch: {robot: arm, action: close, timeout: 3 s}

SUCCESS when the latch reports OPEN (CLOSED), FAILURE when it reports FAULT or ``timeout``
passes first. Unlike ``capture`` it checks no envelope: it is the plain actuator, for recovery
branches (release before retracting) and bench check-outs.
"""

from __future__ import annotations

from typing import Literal

import py_trees
from pydantic import Field

from orbitree.drivers.interfaces import LatchState
from orbitree.language.params import NodeParams
from orbitree.language.quantities import Duration
from orbitree.nodes.leaf import Leaf

Status = py_trees.common.Status


class LatchParams(NodeParams):
    robot: str = Field(description="the arm whose hooks move")
    action: Literal["open", "close"]
    timeout: Duration = Field(3.0, gt=0.0)


class Latch(Leaf):
    kind = "latch"
    Params = LatchParams
    params: LatchParams

    def setup(self, **kwargs: object) -> None:
        device = self.ctx.drivers[self.params.robot]
        if device.latch is None:
            raise RuntimeError(f"robot {self.params.robot!r} has no latch")
        self.latch = device.latch

    def initialise(self) -> None:
        self.ctx.command(self.params.robot, f"latch_{self.params.action}")
        getattr(self.latch, self.params.action)()
        self.deadline = self.ctx.now + self.params.timeout

    def update(self) -> Status:
        state = self.latch.state()
        wanted = LatchState.OPEN if self.params.action == "open" else LatchState.CLOSED
        if state == wanted:
            self.feedback_message = f"hooks {state.name.lower()}"
            return Status.SUCCESS
        if state == LatchState.FAULT or self.ctx.now >= self.deadline:
            self.feedback_message = f"hooks did not {self.params.action} ({state.name.lower()})"
            return Status.FAILURE
        self.feedback_message = f"hooks {state.name.lower()}"
        return Status.RUNNING
