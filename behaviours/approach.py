"""``approach``: position-based visual servoing of the active interface onto the target.

YAML::

    - approach:
        robot: arm
        target: sirom
        gain: {lambda0: 1.5, lambda_inf: 0.4, slope0: 30}   # adaptive gain (ViSP's UR example)
        max_speed: 100 mm/s
        max_angular_speed: 20 deg/s
        tolerance: 0.001          # stop when the error norm ‖e‖ is below this (m and rad mixed)
        back_off: 0 mm            # aim this much further out along the target's z (a pre-dock pose)
        lost_after: 500 ms        # FAILURE when the target has not been seen for this long
        blind_within: 0 mm        # ... unless the tool is this close to its goal (see below)
        blind_for: 5 s            # and for at most this long
        contact_guard: {force: 25 N, torque: 3 Nm, readings: 3}   # optional, see below

PBVS (``orbitree.skills.pbvs``): the error between the board pose the camera sees and the pose
it would see with the TCP at the envelope's aim point (docked, backed off by the standoff),
``v_c = −λ(‖e‖) L_e⁺ e``, turned into a TCP twist in the base frame and sent as ``speed_l`` every
tick. Between camera frames the board pose in the camera is predicted from the last estimate in
the base frame (the target is fixed) and the arm's current pose, so the loop runs at the tick
rate. The approach continues until ``‖e‖ < tolerance``, even after entering the capture range,
as in the SIROM paper [SIROM]. Before moving it checks its goal, the TCP pose where the camera
sees the board as wanted: outside the mission's ``safety.workspace`` box, or without a joint
solution near the arm's joints, it fails at once and writes ``/servo/failure: unreachable`` (the
mission can then abandon instead of driving the arm into the monitor's limit).
With ``back_off`` the aim is moved out along the target's z: a first approach to a pre-dock
pose a few centimetres out keeps the guide petals clear of the receptacle while the lateral
error is still large (PBVS shrinks every axis at the same rate, so a target far off to
the side would otherwise be met edge-on), and a second one with no back-off goes in.
With ``blind_within`` the approach finishes blind: an eye-in-hand camera beside the tool cannot
see the target's face in the last millimetres (the tool is in the way), so when the target has
been out of sight for ``lost_after`` while the TCP is within ``blind_within`` of its goal, the
approach keeps servoing on the last estimate, carried by the arm's motion (the estimate is in the
base frame: the target is taken to be fixed), for at most ``blind_for``. Its feedback says so
(``blind: estimate carried 0.4 s``) and a ``blind_approach`` event is logged when it goes blind.
Farther out, or blind for longer, it fails ("target lost").
With ``contact_guard`` the approach also watches the wrist: PBVS moves in free space (the
final approach stops short of the receptacle by the envelope's standoff), so a force or torque
above the guard's on ``readings`` consecutive fresh wrist readings is an unexpected contact — a
target knocked into the tool's path, the petals caught on a moved receptacle's rim. The arm
stops, an ``unexpected_contact`` event is logged and the approach fails (the mission backs out
and approaches again); the safety monitor's limits stay the last line. A repeated (stale)
reading is not counted: the monitor judges a dropped-out sensor.
Writes ``/servo/error`` (6,), ``/servo/error_norm``, ``/servo/gain`` and ``/servo/failure``.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.keys import SERVO_ERROR, SERVO_ERROR_NORM, SERVO_FAILURE, SERVO_GAIN, robot_key, target_key
from orbitree.language.params import EnvelopeName
from orbitree.language.quantities import AngularSpeed, Duration, Force, Length, Speed, Torque
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills import kinematics as kin
from orbitree.skills.capture import ENVELOPES, aim_tcp2target
from orbitree.skills.gain import AdaptiveGain
from orbitree.skills.pbvs import camera_velocity, saturate_twist
from orbitree.skills.pose_solve import solve_poses
from orbitree.skills.se3 import adjoint, rotate_screw, vector_norm

Status = py_trees.common.Status


class GainParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    lambda0: float = Field(1.5, gt=0.0, description="gain near zero error")
    lambda_inf: float = Field(0.4, gt=0.0, description="gain for large errors")
    slope0: float = Field(30.0, gt=0.0, description="slope of the gain at zero error")


class ContactGuard(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    force: Force = Field(gt=0.0, description="wrist force that means unexpected contact")
    torque: Torque = Field(gt=0.0, description="wrist torque that means unexpected contact")
    readings: int = Field(3, ge=1, description="consecutive fresh readings above either limit")


class ApproachParams(MotionParams):
    target: str
    envelope: EnvelopeName = Field("sirom", description="capture envelope (docked pose and standoff)")
    gain: GainParams = GainParams()
    max_speed: Speed = Field(0.1, gt=0.0)
    max_angular_speed: AngularSpeed = Field(0.35, gt=0.0)
    acceleration: float = Field(0.5, gt=0.0, description="speed_l acceleration, m/s²")
    tolerance: float = Field(0.001, gt=0.0, description="‖e‖ at which the approach ends")
    lost_after: Duration = Field(0.5, gt=0.0)
    blind_within: Length = Field(
        0.0, ge=0.0, description="out of sight this close to the goal: go on on the carried estimate"
    )
    blind_for: Duration = Field(5.0, gt=0.0, description="the longest an estimate is carried blind")
    back_off: Length = Field(0.0, ge=0.0, description="extra distance out along the target's z")
    contact_guard: ContactGuard | None = Field(
        None, description="stop and fail on an unexpected contact (wrist force or torque)"
    )


class Approach(MotionLeaf):
    kind = "approach"
    Params = ApproachParams
    params: ApproachParams

    @classmethod
    def reads(cls, params: ApproachParams) -> list[str]:
        keys = [target_key(params.target, "pose_base"), target_key(params.target, "last_seen"),
                robot_key(params.robot, "tcp_pose"), robot_key(params.robot, "q")]
        return keys + ([robot_key(params.robot, "wrench")] if params.contact_guard is not None else [])

    @classmethod
    def writes(cls, params: ApproachParams) -> list[str]:
        return [SERVO_ERROR, SERVO_ERROR_NORM, SERVO_GAIN, SERVO_FAILURE]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        if self.device.cam2tcp is None:
            raise RuntimeError(f"approach needs a camera on robot {self.params.robot!r}")
        self.cam2tcp = self.device.cam2tcp
        g = self.params.gain
        self.gain = AdaptiveGain(g.lambda0, min(g.lambda_inf, g.lambda0), g.slope0)
        aim = aim_tcp2target(ENVELOPES[self.params.envelope])
        aim[2, 3] += self.params.back_off
        self.aim = aim  # the TCP's goal pose in the target frame
        self.desired = np.linalg.inv(aim @ self.cam2tcp)  # the board as the camera sees it there
        self.cam_adjoint = adjoint(self.cam2tcp)  # camera twists to TCP twists (camera_to_tcp_twist)

    def start(self) -> Status:
        self.over = 0  # consecutive fresh wrist readings above the contact guard
        self.blind_since: float | None = None  # last sighting, once the approach went blind
        self.started = self.ctx.now
        problem = self._goal_problem()
        self.write(SERVO_FAILURE, "unreachable" if problem else "")
        if problem:  # refused before moving: the arm would only drive into a limit
            self.feedback_message = problem
            self.ctx.event("goal_unreachable", node=self.name, robot=self.params.robot, reason=problem)
            return Status.FAILURE
        return Status.RUNNING

    def _goal_problem(self) -> str | None:
        """Why the pose this approach ends at cannot be reached, or None: outside the mission's
        workspace box, or no joint solution near the arm's joints (where the target was last seen)."""
        seen = self.read(target_key(self.params.target, "pose_base"))
        if seen is None:
            return None  # not seen yet: running() says 'target lost'
        goal = seen.matrix @ self.aim  # the TCP where the camera sees the board as desired
        if self.ctx.workspace is not None:
            low, high = self.ctx.workspace
            xyz = goal[:3, 3]
            outside = [f"{axis} {v * 1e3:.0f} mm {'<' if v < lo else '>'} {(lo if v < lo else hi) * 1e3:.0f} mm"
                       for axis, v, lo, hi in zip("xyz", xyz, low, high, strict=True) if not lo <= v <= hi]
            if outside:
                return f"goal outside the workspace: TCP {', '.join(outside)}"
        q = self.read(self.robot_key("q"))
        if q is not None:
            joints, ok = kin.inverse_kinematics(kin.UR10E, goal, np.asarray(q), self.device.spec.tool.matrix(),
                                                 tolerance=1e-6, max_iterations=200)
            if not ok or np.abs(joints).max() > 2 * np.pi:
                return "goal out of reach: no joint solution near the current configuration"
        return None

    def running(self) -> Status:
        contact = self._contact()
        if contact is not None:
            return self._unexpected(*contact)
        last_seen = self.read(target_key(self.params.target, "last_seen"))
        if last_seen is None:  # not seen yet: the camera's first frame may still be on its way
            if self.ctx.now - self.started > self.params.lost_after:
                self.feedback_message = "target lost (never seen)"
                return Status.FAILURE
            self.feedback_message = "waiting for a first sighting"
            return Status.RUNNING
        tcp2base = self.read(self.robot_key("tcp_pose"))
        board2base = self.read(target_key(self.params.target, "pose_base")).matrix
        unseen = self.ctx.now - last_seen
        blind = unseen > self.params.lost_after
        if blind and not self._may_go_blind(tcp2base, board2base, unseen, last_seen):
            return Status.FAILURE
        cam2base = tcp2base @ self.cam2tcp
        board2cam = solve_poses(cam2base, board2base)
        command = camera_velocity(board2cam, self.desired, self.gain)
        self.write(SERVO_ERROR, command.error)
        self.write(SERVO_ERROR_NORM, command.error_norm)
        self.write(SERVO_GAIN, command.gain)
        if command.error_norm < self.params.tolerance:
            self.feedback_message = f"converged: ‖e‖ = {command.error_norm:.5f}"
            return Status.SUCCESS
        # camera_to_tcp_twist(command.twist, self.cam2tcp, tcp2base), the hand-eye adjoint made once
        twist = rotate_screw(tcp2base[:3, :3], self.cam_adjoint @ command.twist)
        twist = saturate_twist(twist, self.params.max_speed, self.params.max_angular_speed)
        self.speed_l(twist, self.params.acceleration)
        self.feedback_message = f"‖e‖ = {command.error_norm:.4f}, λ = {command.gain:.2f}"
        if blind:
            self.feedback_message = f"blind: estimate carried {unseen:.1f} s, " + self.feedback_message
        return Status.RUNNING

    def _may_go_blind(self, tcp2base: np.ndarray, board2base: np.ndarray, unseen: float, last_seen: float) -> bool:
        """Out of sight for longer than ``lost_after``: may the approach go on blind (close to
        its goal, not blind for too long)? Sets the feedback when it may not."""
        distance = vector_norm((board2base @ self.aim)[:3, 3] - tcp2base[:3, 3])
        if self.params.blind_within <= 0.0 or distance > self.params.blind_within:
            self.feedback_message = f"target lost ({unseen:.1f} s unseen, {distance * 1e3:.0f} mm from the goal)"
            return False
        if unseen > self.params.blind_for:
            self.feedback_message = f"target lost: blind for {unseen:.1f} s"
            return False
        if self.blind_since != last_seen:
            self.blind_since = last_seen
            self.ctx.event("blind_approach", node=self.name, robot=self.params.robot, unseen_s=round(unseen, 3),
                           distance_mm=round(distance * 1e3, 2))
        return True

    def _contact(self) -> tuple[float, float] | None:
        """(|F|, |T|) when the contact guard trips this tick (``readings`` fresh readings over it)."""
        guard = self.params.contact_guard
        if guard is None:
            return None
        key = self.robot_key("wrench")
        wrench, age = self.read(key), self.ctx.age(key)
        if wrench is None or age is None or age > 0.0:
            return None  # nothing new this tick
        force, torque = vector_norm(wrench[:3]), vector_norm(wrench[3:])
        self.over = self.over + 1 if force > guard.force or torque > guard.torque else 0
        return (force, torque) if self.over >= guard.readings else None

    def _unexpected(self, force: float, torque: float) -> Status:
        """The guard tripped: stop (the leaf ends) and fail."""
        guard = self.params.contact_guard
        assert guard is not None
        self.feedback_message = (
            f"unexpected contact: |F| = {force:.1f} N (guard {guard.force:g} N), "
            f"|T| = {torque:.2f} Nm (guard {guard.torque:g} Nm)"
        )
        self.ctx.event("unexpected_contact", node=self.name, robot=self.params.robot,
                       force_n=round(force, 3), torque_nm=round(torque, 4))
        return Status.FAILURE
