"""``admittance_dock``: comply with the hook and guide-petal forces until the interfaces seat.

YAML::

    - admittance_dock:
        robot: arm
        target: sirom
        mass: [11.25, 11.25, 11.25, 0.5, 0.5, 0.5]     # UR's URScript example (defaults)
        damping: [12.5, 12.5, 12.5, 1.0, 1.0, 1.0]
        dead_band: {force: 3 N, torque: 0.2 Nm}
        filter: 24 ms               # moving median of the wrist readings (default)
        seated: {force: 5 N, torque: 0.5 Nm, position: 1.5 mm, angle: 1 deg, hold: 300 ms}
        max_speed: 20 mm/s          # limits on the commanded twist (defaults)
        max_angular_speed: 0.2 rad/s
        max_force: 80 N             # stop and fail at two readings in a row above it (default)
        progress: {distance: 0.2 mm, within: 3 s}   # fail when stuck (default)
        timeout: 20 s

Each tick the wrist wrench (TCP frame) is rotated to the base frame, filtered over ``filter``
and run through the admittance law (``orbitree.nodes.compliance``, ``orbitree.skills.admittance``:
``M ẍ + D ẋ + K x = F − F_t`` with a dead band); the resulting twist, held to ``max_speed`` and
``max_angular_speed``, is sent as ``speed_l``, so the arm yields to the hooks pulling it in and
the chamfers centring it. The dock is seated when the TCP has stayed within ``seated.position``
/ ``seated.angle`` of its docked pose for ``seated.hold`` (relative to the last vision estimate
of the target, whose error at docking range is about 1 mm; the pose check catches a tool resting
calm on a guide petal, several mm off) and the mean of the wrist readings over that hold is
below ``seated.force`` / ``seated.torque`` (one reading of the UR10e's sensor scatters by ±5 N;
the mean of the 37 readings of 300 ms at 125 Hz by ±0.8 N).

It stops the arm and fails, saying why, when two wrist readings in a row exceed ``max_force`` (the
loop is not holding the contact: on a stiff contact an admittance loop with too little damping for
its delay oscillates, ``orbitree.skills.admittance.sampled_delay_margin``), or when the TCP has
not come ``progress.distance`` closer to its docked pose within ``progress.within`` while not
placed (jammed or wedged: friction holds the tool off its seat). The peak filtered contact force
is written to the run summary (``dock_peak_force_n``); a stop is a ``dock_stopped`` event and the
summary's ``dock_stopped`` (the reason).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.keys import robot_key, target_key
from orbitree.language.quantities import Angle, AngularSpeed, Duration, Force, Length, Speed, Torque
from orbitree.nodes.compliance import AdmittanceLoop, DeadBand
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.admittance import AdmittanceParams
from orbitree.skills.capture import envelope_error
from orbitree.skills.se3 import vector_norm

Status = py_trees.common.Status
Six = tuple[float, float, float, float, float, float]
__all__ = ["AdmittanceDock", "AdmittanceDockParams", "DeadBand", "Progress", "Seated"]


class Seated(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    force: Force = Field(5.0, gt=0.0)
    torque: Torque = Field(0.5, gt=0.0)
    position: Length = Field(0.0015, gt=0.0)
    angle: Angle = Field(0.0175, gt=0.0)
    hold: Duration = Field(0.3, ge=0.0)


class Progress(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    distance: Length = Field(0.0002, gt=0.0, description="the TCP must come this much closer to its docked pose")
    within: Duration = Field(3.0, gt=0.0, description="in this long, or the dock is stuck")


class AdmittanceDockParams(MotionParams):
    target: str
    mass: Six = (11.25, 11.25, 11.25, 0.5, 0.5, 0.5)
    damping: Six = (12.5, 12.5, 12.5, 1.0, 1.0, 1.0)
    stiffness: Six = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    dead_band: DeadBand = DeadBand()
    filter: Duration = Field(0.024, ge=0.0, description="moving median of the wrist readings over this long")
    seated: Seated = Seated()
    max_speed: Speed = Field(0.02, gt=0.0, description="limit on the commanded TCP speed")
    max_angular_speed: AngularSpeed = Field(0.2, gt=0.0, description="limit on the commanded TCP rotation rate")
    acceleration: float = Field(2.0, gt=0.0, description="speed_l acceleration, m/s²")
    max_force: Force = Field(80.0, gt=0.0, description="stop and fail at two readings in a row above this")
    progress: Progress = Progress()
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
        law = AdmittanceParams(p.mass, p.damping, p.stiffness, force_dead_band=p.dead_band.force,
                               torque_dead_band=p.dead_band.torque)
        self.loop = AdmittanceLoop(law, self.ctx.period, p.filter, p.max_speed, p.max_angular_speed)

    def start(self) -> Status:
        self.loop.reset()
        self.seated_since: float | None = None
        self.held: deque[np.ndarray] = deque()  # the readings since seated_since, base frame
        self.deadline = self.ctx.now + self.params.timeout
        self.best = (np.inf, self.ctx.now)  # closest distance to the docked pose so far, and when
        self.peak_force = 0.0
        return Status.RUNNING

    def running(self) -> Status:
        key = self.robot_key("wrench")
        tcp2base = self.read(self.robot_key("tcp_pose"))
        fresh = self.ctx.age(key) == 0.0
        wrench = self.loop.sense(self.read(key), tcp2base, fresh)
        force = vector_norm(wrench[:3])
        if self.loop.ready:  # until the window is full, one spike could be all it holds
            self.peak_force = max(self.peak_force, force)
        self.ctx.summary["dock_peak_force_n"] = round(self.peak_force, 3)
        self.write("/dock/wrench_base", wrench)
        target = self.read(target_key(self.params.target, "pose_base")).matrix
        error = envelope_error(tcp2base, target).si()
        self.write("/dock/error", error)
        if self._seated(self.loop.readings[-1], error, fresh):
            self.feedback_message = "seated"
            return Status.SUCCESS
        stop = self._stopped(force, error, fresh)
        if stop is not None:
            self.feedback_message = stop
            self.ctx.event("dock_stopped", node=self.name, reason=stop)
            self.ctx.summary["dock_stopped"] = stop
            return Status.FAILURE
        if self.ctx.now >= self.deadline:
            self.feedback_message = f"not seated after {self.params.timeout:g} s"
            return Status.FAILURE
        self.speed_l(self.loop.step(), self.params.acceleration)
        self.feedback_message = f"|F| = {force:.1f} N, z = {error[2] * 1e3:.2f} mm"
        return Status.RUNNING

    def _stopped(self, force: float, error: np.ndarray, fresh: bool) -> str | None:
        """Why the dock must stop now, or None."""
        p = self.params
        if self.loop.overloaded(p.max_force, fresh):
            return (f"contact force {self.loop.raw_force:.0f} N over {p.max_force:g} N: the admittance loop does "
                    "not hold this contact (too little damping for its stiffness and delay?); stopped")
        distance = vector_norm(error[:3])
        if distance < self.best[0] - p.progress.distance:
            self.best = (distance, self.ctx.now)
        elif self.ctx.now - self.best[1] >= p.progress.within - 1e-9 and self.seated_since is None:
            return (f"no progress: {distance * 1e3:.1f} mm from the docked pose for {p.progress.within:g} s "
                    f"with |F| = {force:.0f} N (jammed or wedged); stopped")
        return None

    def _seated(self, reading: np.ndarray, error: np.ndarray, fresh: bool) -> bool:
        s = self.params.seated
        placed = vector_norm(error[:3]) < s.position and vector_norm(error[3:]) < s.angle
        if not placed:
            self.seated_since = None
            self.held.clear()
            return False
        if self.seated_since is None:
            self.seated_since = self.ctx.now
        if fresh or not self.held:
            self.held.append(reading)
        if self.ctx.now - self.seated_since < s.hold - 1e-9:
            return False
        mean = np.mean(self.held, axis=0)
        calm = vector_norm(mean[:3]) < s.force and vector_norm(mean[3:]) < s.torque
        if not calm:  # start the hold again from here
            self.seated_since, self.held = self.ctx.now, deque([reading])
        return calm
