"""``retract``: back the tool away from the target along its own axis.

YAML::

    - retract: {robot: arm, distance: 100 mm, speed: 50 mm/s}

A straight ``move_l`` of ``distance`` along the TCP's −z (out of the passive interface), from
the pose the arm has when the leaf starts; SUCCESS when the move is done, FAILURE if the arm
is in a protective stop or ends more than 2 mm from its goal (a move lost on a dropped link).
Halting it stops the arm. For recovery branches: open the hooks
first (``latch: {action: open}``), or the arm pulls on a captured target.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import Field

from orbitree.language.keys import robot_key
from orbitree.language.quantities import Length, Speed
from orbitree.nodes.motion import MotionLeaf, MotionParams

Status = py_trees.common.Status
REACHED_M = 0.002  # the move counts as done within this distance of its goal


class RetractParams(MotionParams):
    distance: Length = Field(0.1, gt=0.0)
    speed: Speed = Field(0.05, gt=0.0)
    acceleration: float = Field(0.5, gt=0.0, description="m/s²")


class Retract(MotionLeaf):
    kind = "retract"
    Params = RetractParams
    params: RetractParams

    @classmethod
    def reads(cls, params: RetractParams) -> list[str]:
        return [robot_key(params.robot, "tcp_pose"), robot_key(params.robot, "protective_stop")]

    def start(self) -> Status:
        if self._protective_stop():
            return Status.FAILURE
        goal = np.array(self.read(self.robot_key("tcp_pose")), dtype=float)
        goal[:3, 3] -= goal[:3, 2] * self.params.distance
        self.goal = goal
        self.move_l(goal, self.params.speed, self.params.acceleration)
        self.feedback_message = f"retracting {self.params.distance * 1e3:.0f} mm"
        return Status.RUNNING

    def running(self) -> Status:
        if self._protective_stop():
            return Status.FAILURE
        if not self.arrived():
            return Status.RUNNING
        reached = np.array(self.read(self.robot_key("tcp_pose")), dtype=float)
        miss = float(np.linalg.norm(reached[:3, 3] - self.goal[:3, 3]))
        if miss > REACHED_M:  # the move was lost (a dropped link) or cut short
            self.feedback_message = f"stopped {miss * 1e3:.1f} mm short"
            return Status.FAILURE
        self.feedback_message = "retracted"
        return Status.SUCCESS

    def _protective_stop(self) -> bool:
        stopped = bool(self.read(self.robot_key("protective_stop")))
        if stopped:
            self.feedback_message = "protective stop: not retracting"
        return stopped
