"""``despin``: two arms holding a spinning satellite's pads bring it to rest with bounded forces.

YAML::

    - despin:
        robots: [left, right]
        target: mockup
        fixtures: [pad_left, pad_right]
        max_force: 15 N          # per arm, what the despin torque may ask of it
        jerk: 60 N*m/s           # how fast the torque rises and falls (the Velcro loads gradually)
        until: 0.1 rpm           # SUCCESS once a state measured after the plan's end says less
        settle: 2 s              # how long after the plan's end to wait for that
        window: 0.5 s            # no state since the plan's end: judge the spin by the held pads this long
        stale: 1 s               # ... once the latest state is older than this
        abort_force: 60 N        # stop and fail when an arm reads more, twice in a row

"The software decelerates the mockup according to a trajectory which is generated based on the
initial velocity at the moment of contact" [JPL]: at the start, the angular momentum ``L0`` comes
from the last state estimate carried to now with the target's inertia, the largest torque whose
internal-free split keeps each arm under ``max_force`` from the grasp of the two pads
(``orbitree.skills.despin.max_despin_torque``; a gimbal's pivot takes the net force), and the
plan is the jerk-limited trapezoid against ``L0`` (``plan_despin``). Every tick the reference body
is carried forward under the plan's torque (Euler's equations), each tool follows its pad on it
through its COMPLY transform, the plan's force for that arm is fed forward as the stretch of the
pad's tether (``f/k``), and the COMPLY integrators null the internal force only (the arms must not
squeeze the body or load the pivot). FAILURE, both arms stopped: a force over ``abort_force``, an
arm in a protective stop, or the spin not under ``until`` within ``settle`` of the plan's end.
Without a state measured after the plan's end and none for ``stale`` (a vision dropout), the
arms' own kinematics judge the spin once ``window`` has passed since the plan's end: the held pads' positions (each
tool less its tether's stretch ``f/k``) over the last ``window`` give the body's angular velocity
across the line between them, ``ω⊥ = d × (v₂ − v₁) / |d|²`` (all of a gimbal's spin, whose
bearing is across that line); under ``until`` is SUCCESS (summary ``grapple.despun_by``:
``kinematics``; otherwise ``state``). On a free body the spin judged is what the grasp can remove:
the rate of the momentum across the line through the pads (two point grips make no torque about
that line; what is left about it, ``grapple.residual_line_rpm``, only twists the pads).
Writes ``/grapple/<robot>/force`` (N, world, on the body), ``/grapple/internal_force`` (N) and
``/grapple/despin_torque`` (N·m, the plan's now).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import py_trees
from pydantic import Field
from scipy.spatial.transform import Rotation

from orbitree.language.quantities import AngularSpeed, Duration, Force
from orbitree.nodes.grappling import RPM, DualArmLeaf, DualArmParams
from orbitree.skills import despin as ds
from orbitree.skills import grasp as gp
from orbitree.skills import rigid_body as rb

Status = py_trees.common.Status


class DespinParams(DualArmParams):
    max_force: Force = Field(15.0, gt=0.0, description="per arm: the largest force the despin torque asks")
    jerk: float = Field(60.0, gt=0.0, description="N·m/s: how fast the despin torque rises and falls")
    until: AngularSpeed = Field(0.1 * 2 * np.pi / 60, gt=0.0, description="success below this spin")
    settle: Duration = Field(2.0, gt=0.0, description="after the plan's end, wait this long for the spin to drop")
    replans: int = Field(2, ge=0, description="new plans from the spin measured after a plan's end, over 'until'")
    window: Duration = Field(0.5, gt=0.0, description="no state since the plan's end: judge the spin from "
                             "the held pads' motion over this long")
    stale: Duration = Field(1.0, gt=0.0, description="a state older than this (and from before the plan's end) "
                            "has stopped coming: judge the spin by the held pads")


class Despin(DualArmLeaf):
    kind = "despin"
    Params = DespinParams
    params: DespinParams

    @classmethod
    def writes(cls, params: DespinParams) -> list[str]:
        return [*super().writes(params), "/grapple/despin_torque"]

    def begin(self, replan: bool = False) -> Status:
        if self.predictor.estimate is None:
            self.feedback_message = "no state of the target"
            return Status.FAILURE
        if not replan:
            self.replans = 0
            self.pad_track: deque[tuple[float, np.ndarray]] = deque()
        now = self.t0 = self.ctx.now
        prediction = self.predictor.at(now)
        self.reference = prediction.attitude
        self.position, self.velocity = prediction.position, prediction.velocity
        self.reference_t = now
        body = prediction.body2world()
        momentum = prediction.attitude.angular_momentum(self.model.inertia)
        points = np.array([(body @ pad.pad2body)[:3, 3] - body[:3, 3] for pad in self.pads])
        if self.model.mount == "gimbal":  # the bearing reacts all but the spin about its axis
            axis = body[:3, :3] @ self.model.spin_axis
        else:  # forces at two points make no torque about the line through them
            line = (points[1] - points[0]) / np.linalg.norm(points[1] - points[0])
            axis = momentum - line * float(line @ momentum)
            axis = axis / max(float(np.linalg.norm(axis)), 1e-12)
        momentum = axis * float(axis @ momentum)
        self.grasp = gp.make_grasp(points, length=0.0, mobility=self.model.mobility())
        size = float(np.linalg.norm(momentum))
        if size == 0.0:
            self.profile = ds.plan_despin(momentum, 1.0)
        else:
            torque = ds.max_despin_torque(self.grasp, momentum / size, self.params.max_force)
            self.profile = ds.plan_despin(momentum, torque, self.params.jerk)
        self.record.fields["despin_plan_s"] = round(self.profile.duration, 4)
        self.record.fields["despin_torque_nm"] = round(self.profile.peak, 4)
        self.feedback_message = f"despinning: {self.profile.peak:.1f} N·m for {self.profile.duration:.2f} s"
        return Status.RUNNING

    def _advance(self, t: float) -> None:
        """Carry the reference body to ``t`` under the plan's torque (steps of one tick at most)."""
        while self.reference_t < t - 1e-12:
            h = min(self.ctx.period, t - self.reference_t)
            self.reference = rb.step(self.reference, self.model.inertia, h, self._torque)
            self.reference_t += h
            self.position = self.position + self.velocity * h

    def _torque(self, t: float, attitude: Rotation, _w: np.ndarray) -> np.ndarray:
        """The plan's torque at mission time ``t``, body frame (``rb.TorqueFn``)."""
        return attitude.inv().apply(self.profile.torque(t - self.t0))

    def body(self, t: float) -> np.ndarray:
        if t < self.reference_t:  # the current tick, asked again
            return self._pose(self.reference)
        self._advance(t)
        return self._pose(self.reference)

    def _pose(self, state: rb.AttitudeState) -> np.ndarray:
        pose = np.eye(4)
        pose[:3, :3] = state.attitude.as_matrix()
        pose[:3, 3] = self.position
        return pose

    def feedforward(self, t: float) -> np.ndarray:
        return ds.despin_wrenches(self.profile, t - self.t0, self.grasp)[:, :3]

    def check(self, forces: np.ndarray) -> Status | None:
        t = self.ctx.now - self.t0
        self.write("/grapple/despin_torque", float(np.linalg.norm(self.profile.torque(t))))
        self.predictor.update(self.read(f"/target/{self.params.target}/state"))
        estimate = self.predictor.estimate
        end = self.t0 + self.profile.duration
        if estimate is not None and estimate.t >= end:
            spin = self._removable_spin(estimate)
            if spin < self.params.until:
                self.record.fields["despun_by"] = "state"
                self.feedback_message = f"spin {spin * RPM:.3f} rpm: despun"
                return Status.SUCCESS
            if self.replans < self.params.replans:  # what the plan left (its estimate's error): plan again
                self.replans += 1
                self.record.fields["despin_replans"] = self.replans
                self.begin(replan=True)
                self.anchor()
                return None
        spin = self._held_spin(forces)
        stale = estimate is None or (estimate.t < end and self.ctx.now - estimate.t > self.params.stale)
        if spin is not None and spin < self.params.until and self.ctx.now >= end + self.params.window and stale:
            self.record.fields["despun_by"] = "kinematics"
            self.feedback_message = f"no state since the plan's end; held pads: {spin * RPM:.3f} rpm: despun"
            return Status.SUCCESS
        if self.ctx.now > end + self.params.settle:
            self.feedback_message = f"spin not under {self.params.until * RPM:g} rpm {self.params.settle:g} s " \
                                    "after the plan's end"
            return Status.FAILURE
        self.feedback_message = f"despinning, {t:.2f} of {self.profile.duration:.2f} s"
        return None

    def _removable_spin(self, estimate) -> float:
        """|ω| (rad/s) of the estimate's spin this grasp can take out: all of it on a gimbal; on a
        free body, the rate of the momentum across the line through the two pads (point grips make
        no torque about that line, so what the body keeps about it is not the despin's to remove;
        ``grapple.residual_line_rpm`` records it)."""
        w = np.asarray(estimate.twist[3:], float)
        if self.model.mount == "gimbal":
            return float(np.linalg.norm(w))
        body = estimate.body2world
        pads = [(body @ pad.pad2body)[:3, 3] for pad in self.pads]
        line = (pads[1] - pads[0]) / np.linalg.norm(pads[1] - pads[0])
        inertia = body[:3, :3] @ self.model.inertia @ body[:3, :3].T
        kept = np.linalg.solve(inertia, line * float(line @ (inertia @ w)))  # the rate of L about the line
        self.record.fields["residual_line_rpm"] = round(float(np.linalg.norm(kept)) * RPM, 5)
        return float(np.linalg.norm(w - kept))

    def _held_spin(self, forces: np.ndarray) -> float | None:
        """|ω⊥| (rad/s) of the held body over the last ``window``, from the arms' kinematics
        (None until a window has been seen)."""
        now = self.ctx.now
        self.pad_track.append((now, self.held_pads(forces)))
        while self.pad_track and self.pad_track[0][0] < now - self.params.window - 1e-9:
            self.pad_track.popleft()
        span = now - self.pad_track[0][0]
        if len(self.pad_track) < 6 or span < 0.9 * self.params.window:
            return None
        times = np.array([t for t, _ in self.pad_track])
        pads = np.array([p for _, p in self.pad_track])  # (n, 2, 3)
        slope = np.polyfit(times - times[0], pads.reshape(len(times), 6), 1)[0].reshape(2, 3)  # least squares
        d = pads[-1, 1] - pads[-1, 0]
        return float(np.linalg.norm(np.cross(d, slope[1] - slope[0])) / float(d @ d))
