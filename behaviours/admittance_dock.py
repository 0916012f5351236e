"""``admittance_dock``: comply with the hook and guide-petal forces until the interfaces seat.

YAML::

    - admittance_dock:
        robot: arm
        target: sirom
        mass: [11.25, 11.25, 11.25, 0.5, 0.5, 0.5]     # UR's URScript example (defaults)
        damping: [12.5, 12.5, 12.5, 1.0, 1.0, 1.0]
        dead_band: {force: 3 N, torque: 0.2 Nm}
        seated: {force: 5 N, torque: 0.5 Nm, position: 1.5 mm, angle: 1 deg, hold: 300 ms}
        max_speed: 20 mm/s          # limits on the commanded twist (defaults)
        max_angular_speed: 0.2 rad/s
        timeout: 20 s

Each tick the wrist wrench (TCP frame) is rotated to the base frame and run through the
admittance law (``orbitree.skills.admittance``: ``M ẍ + D ẋ + K x = F − F_t`` with a dead band);
the resulting twist, scaled down to ``max_speed`` and ``max_angular_speed``, is sent as
``speed_l``, so the arm yields to the hooks pulling it in and the chamfers centring it. The
dock is seated when the wrench is below ``seated.force`` / ``seated.torque`` and the TCP is
within ``seated.position`` / ``seated.angle`` of its docked pose (relative to the last vision
estimate of the target, whose error at docking range is about 1 mm; the pose check catches a
tool resting calm on a guide petal, several mm off), both for ``seated.hold``. The peak contact
force is written to the run summary.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.keys import robot_key, target_key
from orbitree.language.quantities import Angle, AngularSpeed, Duration, Force, Length, Speed, Torque
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.admittance import AdmittanceParams, admittance_step
from orbitree.skills.capture import envelope_error
from orbitree.skills.pbvs import saturate_twist
from orbitree.skills.se3 import wrench_tcp_to_base

Status = py_trees.common.Status
Six = tuple[float, float, float, float, float, float]


class DeadBand(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    force: Force = Field(3.0, ge=0.0)
    torque: Torque = Field(0.2, ge=0.0)


class Seated(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    force: Force = Field(5.0, gt=0.0)
    torque: Torque = Field(0.5, gt=0.0)
    position: Length = Field(0.0015, gt=0.0)
    angle: Angle = Field(0.0175, gt=0.0)
    hold: Duration = Field(0.3, ge=0.0)


class AdmittanceDockParams(MotionParams):
    target: str
    mass: Six = (11.25, 11.25, 11.25, 0.5, 0.5, 0.5)
    damping: Six = (12.5, 12.5, 12.5, 1.0, 1.0, 1.0)
    stiffness: Six = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    dead_band: DeadBand = DeadBand()
    seated: Seated = Seated()
    max_speed: Speed = Field(0.02, gt=0.0, description="limit on the commanded TCP speed")
    max_angular_speed: AngularSpeed = Field(0.2, gt=0.0, description="limit on the commanded TCP rotation rate")
    acceleration: float = Field(2.0, gt=0.0, description="speed_l acceleration, m/s²")
    timeout: Duration = Field(20.0, gt=0.0)


class AdmittanceDock(MotionLeaf):
    kind = "admittance_dock"
    Params = AdmittanceDockParams
    params: AdmittanceDockParams

    @classmethod
    def reads(cls, params: AdmittanceDockParams) -> list[str]:
        return [robot_key(params.robot, "wrench"), robot_key(params.robot, "tcp_pose"),
                target_key(params.target, "pose_base")]

    @classmethod
    def writes(cls, params: AdmittanceDockParams) -> list[str]:
        return ["/dock/error", "/dock/wrench_base"]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        p = self.params
        self.law = AdmittanceParams(
            p.mass, p.damping, p.stiffness,
            force_dead_band=p.dead_band.force, torque_dead_band=p.dead_band.torque,
        )

    def start(self) -> Status:
        self.twist = np.zeros(6)
        self.offset = np.zeros(6)
        self.seated_since: float | None = None
        self.deadline = self.ctx.now + self.params.timeout
        self.peak_force = 0.0
        return Status.RUNNING

    def running(self) -> Status:
        tcp2base = self.read(self.robot_key("tcp_pose"))
        wrench = wrench_tcp_to_base(self.read(self.robot_key("wrench")), tcp2base)
        self.peak_force = max(self.peak_force, float(np.linalg.norm(wrench[:3])))
        self.ctx.summary["dock_peak_force_n"] = round(self.peak_force, 3)
        self.write("/dock/wrench_base", wrench)
        target = self.read(target_key(self.params.target, "pose_base")).matrix
        error = envelope_error(tcp2base, target).si()
        self.write("/dock/error", error)
        if self._seated(wrench, error):
            self.feedback_message = "seated"
            return Status.SUCCESS
        if self.ctx.now >= self.deadline:
            self.feedback_message = f"not seated after {self.params.timeout:g} s"
            return Status.FAILURE
        self.twist, self.offset = admittance_step(wrench, self.twist, self.offset, self.ctx.period, self.law)
        command = saturate_twist(self.twist, self.params.max_speed, self.params.max_angular_speed)
        self.speed_l(command, self.params.acceleration)
        self.feedback_message = f"|F| = {np.linalg.norm(wrench[:3]):.1f} N, z = {error[2] * 1e3:.2f} mm"
        return Status.RUNNING

    def _seated(self, wrench: np.ndarray, error: np.ndarray) -> bool:
        s = self.params.seated
        calm = np.linalg.norm(wrench[:3]) < s.force and np.linalg.norm(wrench[3:]) < s.torque
        placed = np.linalg.norm(error[:3]) < s.position and np.linalg.norm(error[3:]) < s.angle
        if not (calm and placed):
            self.seated_since = None
            return False
        if self.seated_since is None:
            self.seated_since = self.ctx.now
        return self.ctx.now - self.seated_since >= s.hold - 1e-9
