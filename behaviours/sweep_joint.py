"""``sweep_joint``: turn one joint alone through its stops, a laser-tracker reading at each.

YAML::

    - sweep_joint: {robot: arm, joint: 2, swept: 80 deg, points: 20, settle: 200 ms}

The circle-point measurement of one joint ([CirclePoint]): from where the arm is, joint
``joint`` turns alone through ``swept`` in ``points`` evenly spaced stops (both ends included;
``move_j``), rests ``settle`` at each, and the arm's laser tracker reads the reflector on the
link after it (``robots.<arm>.laser_tracker``; in simulation the reflector is on the arm as built,
not on the controller's model). The joint stays at its last stop, as the identification expects
(sweep the joints in order 1 to 6). Writes ``/calibration/<arm>/joint<j>``: ``{"q": the joint
readings (rad), "points": (points, 3) tracker frame (m)}``. SUCCESS after the last reading;
FAILURE on a protective stop or a stop outside the joint's range. Halting it stops the arm.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import Field

from orbitree.language.keys import circle_points_key, robot_key
from orbitree.language.quantities import Angle, AngularSpeed, Duration
from orbitree.nodes.motion import MotionLeaf, MotionParams

Status = py_trees.common.Status


class SweepJointParams(MotionParams):
    joint: int = Field(ge=1, le=6, description="the joint to turn, 1 (base) to 6 (wrist 3)")
    swept: Angle = Field(description="angle turned from where the joint is (sign: direction)")
    points: int = Field(15, ge=3, le=500, description="stops, both ends included")
    settle: Duration = Field(0.2, ge=0.0, description="rest at each stop before the reading")
    speed: AngularSpeed = Field(0.5, gt=0.0, description="joint speed between stops")


class SweepJoint(MotionLeaf):
    kind = "sweep_joint"
    Params = SweepJointParams
    params: SweepJointParams

    @classmethod
    def reads(cls, params: SweepJointParams) -> list[str]:
        return [robot_key(params.robot, "q"), robot_key(params.robot, "protective_stop")]

    @classmethod
    def writes(cls, params: SweepJointParams) -> list[str]:
        return [circle_points_key(params.robot, params.joint)]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        if self.device.tracker is None:
            raise RuntimeError(f"sweep_joint: robot {self.params.robot!r} has no laser_tracker")
        self.tracker = self.device.tracker

    def start(self) -> Status:
        q0 = np.array(self.read(self.robot_key("q")), dtype=float)
        j = self.params.joint - 1
        self.stops = q0[j] + np.linspace(0.0, self.params.swept, self.params.points)
        if np.abs(self.stops).max() > 2 * np.pi:
            self.feedback_message = "a stop is outside the joint's range (+-360 deg)"
            return Status.FAILURE
        self.q = q0
        self.readings: list[np.ndarray] = []
        self.index = 0
        self._go()
        return Status.RUNNING

    def _go(self) -> None:
        self.q = self.q.copy()
        self.q[self.params.joint - 1] = self.stops[self.index]
        self.rest_until: float | None = None
        self.move_j(self.q, self.params.speed, 1.0)
        self.feedback_message = f"joint {self.params.joint}: stop {self.index + 1} of {len(self.stops)}"

    def running(self) -> Status:
        if self.read(self.robot_key("protective_stop")):
            self.feedback_message = "protective stop"
            return Status.FAILURE
        if not self.arrived():
            return Status.RUNNING
        if self.rest_until is None:
            self.rest_until = self.ctx.now + self.params.settle
        if self.ctx.now < self.rest_until - 1e-9:
            return Status.RUNNING
        self.readings.append(self.tracker.measure(self.params.joint))
        self.index += 1
        if self.index < len(self.stops):
            self._go()
            return Status.RUNNING
        self.write(circle_points_key(self.params.robot, self.params.joint),
                   {"q": self.stops.tolist(), "points": np.array(self.readings)})
        self.feedback_message = f"joint {self.params.joint}: {len(self.readings)} readings"
        return Status.SUCCESS
