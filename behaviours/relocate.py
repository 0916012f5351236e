"""``relocate``: short camera moves that bring a lost target back into view.

YAML::

    - relocate: {robot: arm, target: sirom}                      # the seed's moves
    - relocate: {robot: arm, target: sirom, moves: [z+100 mm, x+50 mm], speed: 0.1 m/s}

From the pose where the target was lost, the camera is translated by each move in turn
(``orbitree.skills.relocate``; base-frame axes unless ``frame: camera``), pausing ``dwell`` at
the end of each. The leaf succeeds as soon as ``/target/<target>/visible`` turns true (the arm
stops there), and fails when every move was tried in vain.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import py_trees
from pydantic import Field, field_validator

from orbitree.language.quantities import Duration, Speed
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.relocate import DEFAULT_MOVES, parse_move, shifted_tcp

Status = py_trees.common.Status


class RelocateParams(MotionParams):
    target: str
    moves: list[str] = Field(list(DEFAULT_MOVES), min_length=1, description="e.g. 'x+100 mm'")
    frame: Literal["base", "camera"] = "base"
    speed: Speed = Field(0.1, gt=0.0)
    dwell: Duration = Field(0.3, ge=0.0)

    @field_validator("moves")
    @classmethod
    def _readable(cls, moves: list[str]) -> list[str]:
        for move in moves:
            parse_move(move)
        return moves


class Relocate(MotionLeaf):
    kind = "relocate"
    Params = RelocateParams
    params: RelocateParams

    @classmethod
    def reads(cls, params: RelocateParams) -> list[str]:
        return [f"/target/{params.target}/visible", f"/robot/{params.robot}/tcp_pose"]

    def initialise(self) -> None:
        self.origin = np.array(self.read(self.robot_key("tcp_pose")))
        self.shifts = [parse_move(m) for m in self.params.moves]
        self.index = 0
        self.dwell_until: float | None = None
        self._go()

    def _go(self) -> None:
        cam2tcp = self.device.cam2tcp if self.device.cam2tcp is not None else np.eye(4)
        goal = shifted_tcp(self.origin, cam2tcp, self.shifts[self.index], self.params.frame)
        self.robot.move_l(goal, self.params.speed, 0.5)
        self.moving = True
        self.feedback_message = f"move {self.params.moves[self.index]}"

    def update(self) -> Status:
        if self.read(f"/target/{self.params.target}/visible"):
            self.robot.stop()
            self.moving = False
            self.feedback_message = f"target seen again during {self.params.moves[self.index]}"
            return Status.SUCCESS
        if not self.robot.motion_done():
            return Status.RUNNING
        if self.dwell_until is None:
            self.dwell_until = self.ctx.now + self.params.dwell
        if self.ctx.now < self.dwell_until - 1e-9:
            return Status.RUNNING
        self.dwell_until = None
        self.index += 1
        if self.index >= len(self.shifts):
            self.moving = False
            self.feedback_message = "target not seen from any relocation pose"
            return Status.FAILURE
        self._go()
        return Status.RUNNING
