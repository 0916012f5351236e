"""Despinning a grappled body with bounded forces: the trajectory [JPL] generates "based on the
initial velocity at the moment of contact", here a torque profile on the angular momentum.

The arms apply a world-frame torque against the angular momentum at contact ``L0`` (3,), so
``L(t) = L0·(1 − J(t)/|L0|)`` shrinks along a fixed direction and reaches zero at the end, for any
inertia (a tumbling body too: ``dL/dt = τ`` in an inertial frame). The torque's magnitude is a
trapezoid: it rises at the jerk limit ``j`` (N·m/s) to the peak ``τ_max``, holds, and falls back,
so a Velcro pad is loaded and unloaded gradually; without a jerk limit it is a step (bang-bang).
Duration ``|L0|/τ_max + τ_max/j`` (``|L0|/τ_max = I ω0/τ_max`` for a spin about a principal axis);
when ``|L0| < τ_max²/j`` the trapezoid becomes a triangle of peak ``√(|L0| j)``.

``τ_max`` comes from the arms' bounds through the grasp (:func:`max_despin_torque`): the per-arm
wrenches are the internal-free distribution of the net torque (:mod:`orbitree.skills.grasp`), which
is linear in it, so the largest torque whose distribution keeps every arm within its force and
moment bounds is found in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills.grasp import Grasp, distribute
from orbitree.skills.se3 import check_pose, check_vector


@dataclass(frozen=True)
class DespinProfile:
    """``momentum`` (3,) N·m·s, world, at contact (t = 0); the torque magnitude rises for ``ramp``
    s to ``peak`` N·m, holds for ``hold`` s, falls for ``ramp`` s. Build with :func:`plan_despin`."""

    momentum: np.ndarray
    peak: float
    ramp: float
    hold: float

    @property
    def duration(self) -> float:
        """s from contact to rest."""
        return 2.0 * self.ramp + self.hold

    @property
    def axis(self) -> np.ndarray:
        """Unit (3,) along the momentum at contact (zeros for a body at rest)."""
        size = float(np.linalg.norm(self.momentum))
        return self.momentum / size if size > 0.0 else np.zeros(3)

    def _integrals(self, t: float) -> tuple[float, float, float]:
        """(τ, J, J2): the torque magnitude, its integral and the integral of that, at ``t`` s."""
        p, r, h = self.peak, self.ramp, self.hold
        t = max(0.0, float(t))
        if t < r:
            return p * t / r, p * t * t / (2 * r), p * t**3 / (6 * r)
        j1, k1 = p * r / 2, p * r * r / 6
        if t < r + h:
            u = t - r
            return p, j1 + p * u, k1 + j1 * u + p * u * u / 2
        j2, k2 = j1 + p * h, k1 + j1 * h + p * h * h / 2
        if t < 2 * r + h:
            u = t - r - h
            impulse = j2 + p * u - p * u * u / (2 * r)
            return p * (1 - u / r), impulse, k2 + j2 * u + p * u * u / 2 - p * u**3 / (6 * r)
        j3, k3 = j2 + p * r / 2, k2 + j2 * r + p * r * r / 3
        return 0.0, j3, k3 + j3 * (t - self.duration)

    def torque(self, t: float) -> np.ndarray:
        """The torque (3,) N·m, world, the arms apply on the body at ``t`` s after contact."""
        return -self.axis * self._integrals(t)[0]

    def momentum_at(self, t: float) -> np.ndarray:
        """The angular momentum (3,) N·m·s, world, if the body follows the profile."""
        return self.momentum - self.axis * self._integrals(t)[1]

    def rate_about_axis(self, t: float, inertia_about_axis: float) -> float:
        """Spin rate (rad/s) at ``t`` for a fixed-axis spin (a gimbal's bearing, or a spin about a
        principal axis) with moment of inertia ``inertia_about_axis`` (kg·m²) about it."""
        return float(np.linalg.norm(self.momentum_at(t))) / _positive(inertia_about_axis, "inertia_about_axis")

    def angle_about_axis(self, t: float, inertia_about_axis: float) -> float:
        """Angle (rad) turned since contact, same fixed-axis case: ``(|L0| t − ∫J)/I``."""
        t = max(0.0, float(t))
        return (float(np.linalg.norm(self.momentum)) * t - self._integrals(t)[2]) / _positive(
            inertia_about_axis, "inertia_about_axis")


def _positive(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


def spin_momentum(angular_velocity: np.ndarray, body2world: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """The angular momentum (3,) N·m·s in world axes, ``R I Rᵀ ω``, from the angular velocity (3,)
    rad/s in world axes, the body's pose (4, 4) and its inertia (3, 3) kg·m² in the body frame."""
    matrix = np.asarray(inertia, dtype=float)
    if matrix.shape != (3, 3) or not np.allclose(matrix, matrix.T) or np.linalg.eigvalsh(matrix).min() <= 0.0:
        raise ValueError("inertia must be a symmetric positive definite (3, 3) matrix")
    rotation = check_pose(body2world, "body2world")[:3, :3]
    return rotation @ matrix @ rotation.T @ check_vector(angular_velocity, 3, "angular_velocity")


def plan_despin(momentum: np.ndarray, torque_limit: float, jerk_limit: float = math.inf) -> DespinProfile:
    """The shortest trapezoidal torque profile that brings ``momentum`` (3,) N·m·s to zero with
    ``|τ| <= torque_limit`` (N·m) and ``|dτ/dt| <= jerk_limit`` (N·m/s; inf for a step)."""
    start = check_vector(momentum, 3, "momentum")
    limit = _positive(torque_limit, "torque_limit")
    jerk = float(jerk_limit)
    if math.isnan(jerk) or jerk <= 0.0:
        raise ValueError(f"jerk_limit must be > 0 (inf for none), got {jerk_limit}")
    size = float(np.linalg.norm(start))
    if size == 0.0:
        return DespinProfile(start, 0.0, 0.0, 0.0)
    ramp = limit / jerk
    if size >= limit * ramp:
        return DespinProfile(start, limit, ramp, size / limit - ramp)
    peak = math.sqrt(size * jerk)
    return DespinProfile(start, peak, peak / jerk, 0.0)


def max_despin_torque(grasp: Grasp, axis: np.ndarray, max_force: float, max_moment: float = math.inf) -> float:
    """The largest torque (N·m) about ``axis`` (3,) whose internal-free distribution keeps every
    arm's force under ``max_force`` (N) and its moment under ``max_moment`` (N·m).

    Raises ValueError when the grasp cannot make a torque about that axis (e.g. forces only and
    the axis through both contacts)."""
    direction = check_vector(axis, 3, "axis")
    if np.linalg.norm(direction) == 0.0:
        raise ValueError("axis must be non-zero")
    direction = direction / np.linalg.norm(direction)
    force_limit = _positive(max_force, "max_force")
    moment_limit = float(max_moment)
    if math.isnan(moment_limit) or moment_limit <= 0.0:
        raise ValueError(f"max_moment must be > 0 (inf for none), got {max_moment}")
    wanted = np.concatenate([np.zeros(3), direction])
    unit = distribute(grasp, wanted)
    if np.linalg.norm(grasp.mobility @ (grasp.matrix @ unit.reshape(-1) - wanted)) > 1e-9:
        raise ValueError(f"the grasp cannot make a torque about {direction.round(6).tolist()}")
    forces = np.linalg.norm(unit[:, :3], axis=1).max()
    moments = np.linalg.norm(unit[:, 3:], axis=1).max()
    bounds = [force_limit / forces if forces > 0.0 else math.inf,
              moment_limit / moments if moments > 1e-12 else math.inf]
    return float(min(bounds))


def despin_wrenches(profile: DespinProfile, t: float, grasp: Grasp) -> np.ndarray:
    """The wrenches (n, 6) each arm applies on the body at ``t`` s: the profile's torque with no
    internal part (and no net force on a free body; a mount takes what the grasp's mobility leaves
    to it), world axes at the contacts."""
    return distribute(grasp, np.concatenate([np.zeros(3), profile.torque(t)]))


def despin_pad_pose(profile: DespinProfile, t: float, pad2world: np.ndarray, center: np.ndarray,
                    inertia_about_axis: float) -> np.ndarray:
    """Where a pad (4, 4, world at contact) is ``t`` s after contact if the body turns about the
    fixed axis through ``center`` (3,) m as the profile says: the frame the arm holding it follows."""
    pose = check_pose(pad2world, "pad2world")
    pivot = check_vector(center, 3, "center")
    turn = Rotation.from_rotvec(profile.axis * profile.angle_about_axis(t, inertia_about_axis)).as_matrix()
    out = np.eye(4)
    out[:3, :3] = turn @ pose[:3, :3]
    out[:3, 3] = pivot + turn @ (pose[:3, 3] - pivot)
    return out


MIN_JERK_PEAK = 10.0 / math.sqrt(3.0)
"""Peak of the minimum-jerk blend's second derivative, ``s''`` at ``τ = (3 − √3)/6``: a move of
``x`` in ``T`` s peaks at ``x·10/(√3 T²)``."""


def min_jerk_duration(grasp: Grasp, mass: float, inertia: np.ndarray, shift: np.ndarray, turn: np.ndarray,
                      max_force: float) -> float:
    """The shortest duration (s) of a minimum-jerk move of a held body that asks at most
    ``max_force`` (N) of any arm.

    ``shift`` (3,) m and ``turn`` (3,) rad (a rotation vector) are the move, world axes, its
    translation and rotation blended together; ``inertia`` (3, 3) kg·m² is the body's about its
    centre of mass in world axes at the start, ``mass`` kg. Linear and angular accelerations peak
    together at ``MIN_JERK_PEAK/T²`` of the move, so the peak net wrench is
    ``[m·shift, I·turn]·MIN_JERK_PEAK/T²`` and its internal-free distribution over the grasp
    (:func:`orbitree.skills.grasp.distribute`: what a mount takes, or a moment about the line
    through two point contacts, is left out) scales with ``1/T²``: ``T = √(f₁/max_force)``, ``f₁``
    the largest per-arm force at ``T = 1 s``. The gyroscopic torque ``ω × Iω`` is neglected (second
    order in the small rate of a despun body's move). 0 for no move.
    """
    shift = check_vector(shift, 3, "shift")
    turn = check_vector(turn, 3, "turn")
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.isfinite(inertia).all():
        raise ValueError(f"inertia must be a finite (3, 3) matrix, got shape {inertia.shape}")
    if not mass > 0.0:
        raise ValueError(f"mass must be > 0 kg, got {mass}")
    limit = _positive(max_force, "max_force")
    net = MIN_JERK_PEAK * np.concatenate([mass * shift, inertia @ turn])
    per_arm = float(np.linalg.norm(distribute(grasp, net)[:, :3], axis=1).max())
    return math.sqrt(per_arm / limit)
