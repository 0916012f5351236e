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
from orbitree.language.quantities import Duration
from orbitree.nodes.motion import MotionLeaf, MotionParams

Status = py_trees.common.Status


class LatchParams(MotionParams):
    robot: str = Field(description="the arm whose hooks move")
    action: Literal["open", "close"]
    timeout: Duration = Field(3.0, gt=0.0)


class Latch(MotionLeaf):
    kind = "latch"
    Params = LatchParams
    params: LatchParams

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.latch = self.require_latch()
        self.wanted = LatchState.OPEN if self.params.action == "open" else LatchState.CLOSED

    def start(self) -> Status:
        getattr(self.latch, self.params.action)()  # left to finish if the leaf is halted
        self.deadline = self.ctx.now + self.params.timeout
        return Status.RUNNING

    def running(self) -> Status:
        state = self.latch.state()
        if state == self.wanted:
            self.feedback_message = f"hooks {state.name.lower()}"
            return Status.SUCCESS
        if state == LatchState.FAULT or self.ctx.now >= self.deadline:
            self.feedback_message = f"hooks did not {self.params.action} ({state.name.lower()})"
            return Status.FAILURE
        self.feedback_message = f"hooks {state.name.lower()}"
        return Status.RUNNING
