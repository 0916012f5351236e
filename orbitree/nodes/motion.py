"""Base class of leaves that move an arm.

It owns the plumbing every motion skill needs, so each leaf only fills in its hooks:
the arm is looked up in ``setup()`` (never in ``__init__``), motion commands go through the
device's recording proxy (so they reach the mission log), and when the leaf is halted while
running (``terminate(INVALID)``) the arm is stopped within that tick.
"""

from __future__ import annotations

from typing import Any

import py_trees
from pydantic import Field

from orbitree.language.keys import robot_key
from orbitree.language.params import NodeParams
from orbitree.nodes.leaf import Leaf


class MotionParams(NodeParams):
    robot: str = Field(description="the arm this leaf moves")


class MotionLeaf(Leaf):
    params: MotionParams

    def setup(self, **kwargs: Any) -> None:
        self.device = self.ctx.drivers[self.params.robot]
        self.robot = self.device.robot
        self.moving = False

    def robot_key(self, name: str) -> str:
        return robot_key(self.params.robot, name)

    def terminate(self, new_status: py_trees.common.Status) -> None:
        if self.moving:
            self.robot.stop()
            self.moving = False
            if new_status == py_trees.common.Status.INVALID:
                self.feedback_message = "halted: arm stopped"
