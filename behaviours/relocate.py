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
from pydantic import Field, field_validator

from orbitree.language.keys import robot_key
from orbitree.language.quantities import Speed
from orbitree.nodes.motion import WaypointLeaf, WaypointParams
from orbitree.skills.relocate import DEFAULT_MOVES, parse_move, shifted_tcp


class RelocateParams(WaypointParams):
    moves: list[str] = Field(list(DEFAULT_MOVES), min_length=1, description="e.g. 'x+100 mm'")
    frame: Literal["base", "camera"] = "base"
    speed: Speed = Field(0.1, gt=0.0)

    @field_validator("moves")
    @classmethod
    def _readable(cls, moves: list[str]) -> list[str]:
        for move in moves:
            parse_move(move)
        return moves


class Relocate(WaypointLeaf):
    kind = "relocate"
    Params = RelocateParams
    params: RelocateParams

    @classmethod
    def reads(cls, params: RelocateParams) -> list[str]:
        return [*super().reads(params), robot_key(params.robot, "tcp_pose")]

    def plan(self) -> tuple[list[np.ndarray], int]:
        self.origin = np.array(self.read(self.robot_key("tcp_pose")))  # where the target was lost
        return [parse_move(m) for m in self.params.moves], 0

    def go(self, index: int) -> None:
        cam2tcp = self.device.cam2tcp if self.device.cam2tcp is not None else np.eye(4)
        goal = shifted_tcp(self.origin, cam2tcp, self.waypoints[index], self.params.frame)
        self.move_l(goal, self.params.speed, 0.5)
        self.feedback_message = f"move {self.params.moves[index]}"

    def seen(self) -> None:
        self.feedback_message = f"target seen again during {self.params.moves[self.index]}"

    def missed(self) -> None:
        self.feedback_message = "target not seen from any relocation pose"
