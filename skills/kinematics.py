"""Serial-arm kinematics: DH and Hayati–Mirmirani link transforms, FK, Jacobian, resolved rate.

Conventions (pure functions, numpy in and out, SI units):

* The link transform of joint ``i`` is the Hayati–Mirmirani (HM) extension of standard (distal)
  Denavit–Hartenberg::

      T_i = Rz(theta_i) · Tz(d_i) · Tx(a_i) · Rx(alpha_i) · Ry(beta_i),
      theta_i = q_i + theta_offset_i

  With ``beta = 0`` this is exactly standard DH. HM is used for nominally parallel consecutive
  axes, where DH's ``d`` is ill-conditioned: such a joint is marked ``hm`` in its
  :class:`DHTable`, has ``d = 0`` (as is conventional) and carries the small tilt in ``beta``.
* Frame ``i`` is fixed to link ``i``; joint ``i + 1`` turns about ``z_i``. Frame 0 is the robot
  base, frame ``n`` the flange. A ``tool`` transform is ``tcp2flange`` (4, 4).
* Poses are (4, 4) homogeneous matrices named ``A2B``; twists are ``[vx, vy, vz, wx, wy, wz]``
  of the tool point, expressed in the base frame (linear part first).
* :data:`UR10E` is UR's official DH table. ``a2`` and ``a3`` are negative there, so at ``q = 0``
  the arm lies stretched along the base's −x axis: the flange sits at
  ``x = a2 + a3 = -1.18425``, ``y = -(d4 + d6) = -0.2907``, ``z = d1 - d5 = 0.06085`` (m). Poses
  are in the frame the UR controller reports (``getActualTCPPose``); ROS's ``base_link`` is that
  frame turned by pi about z.
* Resolved rate: :func:`dls_joint_velocity` (damped least squares, optionally with a singularity
  schedule) and :func:`resolved_rate_step`; :func:`inverse_kinematics` is local and numerical;
  :class:`TrapezoidProfile` time-scales a path from rest to rest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from orbitree.skills.se3 import check_fixed_pose, check_pose, check_vector, pose_error


def _readonly(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.array(values, dtype=float)
    array.setflags(write=False)
    return array


#: UR10e joint speed limits (rad/s): 120 deg/s for base and shoulder, 180 deg/s for the others.
UR10E_MAX_JOINT_SPEED: np.ndarray = _readonly(
    np.deg2rad([120.0, 120.0, 180.0, 180.0, 180.0, 180.0])
)
#: UR10e joint position range (rad): +-360 deg on every joint.
UR10E_JOINT_LOWER: np.ndarray = _readonly(np.full(6, -2.0 * np.pi))
UR10E_JOINT_UPPER: np.ndarray = _readonly(np.full(6, 2.0 * np.pi))
_I4 = _readonly(np.eye(4))


# ---------------------------------------------------------------------------- input checks
# Public so that drivers check their inputs with the same messages.




def _nonnegative(value: float, name: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0.0:
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return number


# ---------------------------------------------------------------------------- link transforms


def link_transform(d: float, theta: float, a: float, alpha: float, beta: float = 0.0) -> np.ndarray:
    """``Rz(theta) · Tz(d) · Tx(a) · Rx(alpha) · Ry(beta)`` as a (4, 4) transform link_i2link_{i-1}.

    Lengths in metres, angles in radians. ``beta = 0`` gives standard DH.
    """
    return np.array(_link_rows(d, theta, a, alpha, beta))


def _link_rows(d: float, theta: float, a: float, alpha: float, beta: float) -> list[list[float]]:
    ct, st = math.cos(theta), math.sin(theta)
    ca, sa = math.cos(alpha), math.sin(alpha)
    cb, sb = math.cos(beta), math.sin(beta)
    # Columns of Rz(theta)·Rx(alpha) are x = (ct, st, 0), y = (-st ca, ct ca, sa),
    # z = (st sa, -ct sa, ca); Ry(beta) then mixes x and z.
    return [
        [cb * ct - sb * st * sa, -st * ca, sb * ct + cb * st * sa, a * ct],
        [cb * st + sb * ct * sa, ct * ca, sb * st - cb * ct * sa, a * st],
        [-sb * ca, sa, cb * ca, d],
        [0.0, 0.0, 0.0, 1.0],
    ]


def dh_transform(d: float, theta: float, a: float, alpha: float) -> np.ndarray:
    """Standard DH link transform ``Rz(theta) · Tz(d) · Tx(a) · Rx(alpha)``, (4, 4)."""
    return link_transform(d, theta, a, alpha, 0.0)


def hm_transform(theta: float, a: float, alpha: float, beta: float, d: float = 0.0) -> np.ndarray:
    """Hayati–Mirmirani link transform ``Rz(theta) · Tz(d) · Tx(a) · Rx(alpha) · Ry(beta)``.

    ``d`` is conventionally 0 for an HM joint (the common normal of nearly parallel axes is
    replaced by the tilt ``beta`` about the new y axis); it is accepted for completeness.
    """
    return link_transform(d, theta, a, alpha, beta)


# ---------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class DHTable:
    """Per-joint link parameters (SI units) of a serial arm with revolute joints.

    ``theta_offset`` is added to the joint reading (``theta = q + theta_offset``). ``hm[i]`` marks
    joint ``i`` as modelled with Hayati–Mirmirani (then ``d[i]`` must be 0); ``beta[i]`` must be
    0 for plain DH joints. Sequences are stored as tuples so a table is hashable and immutable.
    """

    d: tuple[float, ...]
    theta_offset: tuple[float, ...]
    a: tuple[float, ...]
    alpha: tuple[float, ...]
    beta: tuple[float, ...] = ()
    hm: tuple[bool, ...] = ()
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        n = len(self.d)
        if n == 0:
            raise ValueError("DHTable needs at least one joint")
        set_field = object.__setattr__
        set_field(self, "beta", self.beta if len(self.beta) else (0.0,) * n)
        set_field(self, "hm", self.hm if len(self.hm) else (False,) * n)
        for key in ("d", "theta_offset", "a", "alpha", "beta"):
            values = tuple(float(v) for v in getattr(self, key))
            if len(values) != n:
                raise ValueError(f"DHTable.{key} must have {n} entries (as d), got {len(values)}")
            if not all(np.isfinite(values)):
                raise ValueError(f"DHTable.{key} must be finite, got {values}")
            set_field(self, key, values)
        set_field(self, "hm", tuple(bool(v) for v in self.hm))
        if len(self.hm) != n:
            raise ValueError(f"DHTable.hm must have {n} entries (as d), got {len(self.hm)}")
        for i in range(n):
            if self.hm[i] and self.d[i] != 0.0:
                raise ValueError(f"joint {i + 1} is Hayati–Mirmirani: d must be 0, got {self.d[i]}")
            if not self.hm[i] and self.beta[i] != 0.0:
                raise ValueError(f"joint {i + 1} is plain DH: beta must be 0, got {self.beta[i]}")

    @property
    def n_joints(self) -> int:
        return len(self.d)

    def as_array(self) -> np.ndarray:
        """(n, 5) array of rows ``[d, theta_offset, a, alpha, beta]``."""
        return np.column_stack([self.d, self.theta_offset, self.a, self.alpha, self.beta])


UR10E = DHTable(
    d=(0.1807, 0.0, 0.0, 0.17415, 0.11985, 0.11655),
    theta_offset=(0.0,) * 6,
    a=(0.0, -0.6127, -0.57155, 0.0, 0.0, 0.0),
    alpha=(np.pi / 2, 0.0, 0.0, np.pi / 2, -np.pi / 2, 0.0),
    name="ur10e",
)
"""Universal Robots UR10e, official DH parameters (m, rad)."""

UR10E_HM = DHTable(d=UR10E.d, theta_offset=UR10E.theta_offset, a=UR10E.a, alpha=UR10E.alpha,
                   hm=(False, True, True, False, False, False), name="ur10e (HM)")
"""The UR10e with joints 2 and 3 Hayati–Mirmirani (axes 2, 3 and 4 are parallel): the same
kinematics as :data:`UR10E` with every ``beta`` 0, the model a kinematic calibration identifies."""

_MM = 1e-3
_DEG = np.pi / 180.0
KUKA_KR5_SIXX = DHTable(
    d=tuple(v * _MM for v in (335.0, 0.0, 0.0, 295.0, 0.0, 80.0)),
    theta_offset=tuple(v * _DEG for v in (0.0, 0.0, 90.0, 0.0, 180.0, 0.0)),
    a=tuple(v * _MM for v in (75.0, 270.0, 90.0, 0.0, 0.0, 0.0)),
    alpha=tuple(v * _DEG for v in (90.0, 0.0, 90.0, 90.0, 90.0, 0.0)),
    beta=(0.0,) * 6,
    hm=(False, True, False, False, False, False),
    name="kuka_kr5_sixx",
)
"""KUKA KR5 sixx nominal table of Ginés Buil's circle-point calibration thesis ([CirclePoint], Table 1), in SI;
joint 2 (axes 2 and 3 nominally parallel) is Hayati–Mirmirani with beta = 0."""


# ---------------------------------------------------------------------------- forward kinematics


def link_frames(table: DHTable, q: np.ndarray, tool: np.ndarray | None = None) -> np.ndarray:
    """All frames of the chain in the base frame, shape (n + 2, 4, 4).

    Index 0 is the base (identity), index ``i`` frame ``i`` (after joint ``i``), index ``n`` the
    flange and index ``n + 1`` the tool (``flange @ tool``; equal to the flange when ``tool`` is
    None). ``q`` : (n,) rad; ``tool`` : (4, 4) tcp2flange.
    """
    return _frames_and_jacobian(table, q, tool)[0]


def _frames_and_jacobian(table: DHTable, q: np.ndarray, tool: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(``link_frames``, the tool's Jacobian (6, n)), by ``orbitree.skills.kinematics_kernels``
    (compiled, bit for bit the numpy code's; numba is imported on the first call)."""
    n = table.n_joints
    joints = np.asarray(q, dtype=float)
    if joints.shape != (n,):
        raise ValueError(f"q must have shape ({n},), got {joints.shape}")
    values = joints.tolist()  # check_vector's finiteness test, on Python floats
    if not all(map(math.isfinite, values)):
        raise ValueError(f"q must be finite, got {joints}")
    fixed, offsets = _fixed_links(table, with_offsets=True)
    thetas = joints + offsets  # each angle + its offset, as on floats
    if not _KERNEL:  # imported once, on the first call (not at this module's import)
        from orbitree.skills.kinematics_kernels import frames_and_jacobian
        _KERNEL.append(frames_and_jacobian)
    # the tool checked at a dictionary's cost when it is the one checked before (it comes back every call)
    return _KERNEL[0](fixed, thetas, None if tool is None else check_fixed_pose(tool, "tool"))


_KERNEL: list = []  # [kinematics_kernels.frames_and_jacobian] once imported
_FIXED: dict[int, tuple[DHTable, np.ndarray, np.ndarray]] = {}


def _fixed_links(table: DHTable, with_offsets: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """(n, 4, 4) each joint's ``Tz(d)·Tx(a)·Rx(alpha)·Ry(beta)`` (its link transform at theta = 0),
    kept per table (by identity; the table is kept with it, so its id is not reused); with
    ``with_offsets``, also the table's ``theta_offset`` as a read-only (n,) float array."""
    entry = _FIXED.get(id(table))
    if entry is None or entry[0] is not table:
        rows = [_link_rows(d, 0.0, a, alpha, beta)
                for d, a, alpha, beta in zip(table.d, table.a, table.alpha, table.beta, strict=True)]
        if len(_FIXED) > 64:
            _FIXED.clear()
        entry = _FIXED[id(table)] = table, _readonly(np.array(rows)), _readonly(np.array(table.theta_offset, "d"))
    return (entry[1], entry[2]) if with_offsets else entry[1]


def forward_kinematics(table: DHTable, q: np.ndarray, tool: np.ndarray | None = None) -> np.ndarray:
    """Tool pose ``tcp2base`` (4, 4) at joints ``q`` (n,) rad; flange pose if ``tool`` is None."""
    return link_frames(table, q, tool)[-1]


def geometric_jacobian(table: DHTable, q: np.ndarray, tool: np.ndarray | None = None) -> np.ndarray:
    """Geometric Jacobian (6, n) at the tool point, in the base frame, linear rows first.

    ``[v; w] = J @ qd`` with ``v`` the velocity of the tool origin and ``w`` the angular velocity,
    both in base coordinates.
    """
    return _frames_and_jacobian(table, q, tool)[1]


def pose_and_jacobian(
    table: DHTable, q: np.ndarray, tool: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(tcp2base (4, 4), J (6, n))`` from one pass over the chain (as the two functions above)."""
    frames, jacobian = _frames_and_jacobian(table, q, tool)
    return frames[-1], jacobian


# ------------------------------------------------------------ resolved rate, IK, timing


def scheduled_damping(sigma_min: float, damping: float, threshold: float) -> float:
    """Singularity-aware damping: ``damping * sqrt(1 - (sigma_min / threshold)^2)`` below
    ``threshold``, 0 above it (Nakamura / Chiaverini schedule; continuous in ``sigma_min``)."""
    if threshold <= 0.0 or sigma_min >= threshold:
        return 0.0
    return damping * math.sqrt(1.0 - (sigma_min / threshold) ** 2)  # np.sqrt's value (both exact-rounded)


def dls_joint_velocity(
    jacobian: np.ndarray,
    twist: np.ndarray,
    damping: float = 0.0,
    *,
    singular_threshold: float | None = None,
) -> np.ndarray:
    """Damped least-squares joint velocity ``J^T (J J^T + lambda^2 I)^-1 twist``, shape (n,).

    ``jacobian`` : (6, n); ``twist`` : (6,) in the Jacobian's frame. With ``damping = 0`` this is
    the pseudo-inverse solution (exact singular directions are dropped). If
    ``singular_threshold`` is given, ``damping`` is the maximum and is applied only near a
    singularity (see :func:`scheduled_damping` on the smallest singular value).
    """
    jac = np.asarray(jacobian, dtype=float)
    if jac.ndim != 2 or jac.shape[0] != 6:
        raise ValueError(f"jacobian must have shape (6, n), got {jac.shape}")
    return dls_from_svd(np.linalg.svd(jac, full_matrices=False), twist, damping,
                        singular_threshold=singular_threshold)


def dls_from_svd(
    svd: tuple[np.ndarray, np.ndarray, np.ndarray],
    twist: np.ndarray,
    damping: float = 0.0,
    *,
    singular_threshold: float | None = None,
) -> np.ndarray:
    """:func:`dls_joint_velocity` from the Jacobian's thin SVD ``(u (6, k), sigma (k,), vt (k, n))``
    (``np.linalg.svd(J, full_matrices=False)``), for a caller that needs the SVD anyway."""
    u, sigma, vt = svd
    xd = check_vector(twist, 6, "twist")
    lam = _nonnegative(damping, "damping")
    if singular_threshold is not None:
        lam = scheduled_damping(
            float(sigma[-1]), lam, _nonnegative(singular_threshold, "threshold")
        )
    denominator = sigma**2 + lam**2
    if min(denominator.tolist()) > 1e-300:  # the usual case: a plain division, the same quotients
        gains = sigma / denominator
    else:
        gains = np.divide(sigma, denominator, out=np.zeros_like(sigma), where=denominator > 1e-300)
    return vt.T @ (gains * (u.T @ xd))


def uniform_scale(values: np.ndarray, limits: np.ndarray | float) -> tuple[np.ndarray, float]:
    """Scale ``values`` by one factor ``s <= 1`` so that ``|values_i| <= limits_i`` for all i.

    Returns ``(s * values, s)``; the direction of ``values`` is kept. ``limits`` > 0, scalar or
    same shape as ``values``.
    """
    vals = np.asarray(values, dtype=float)
    if vals.ndim == 1 and isinstance(limits, float):  # the hot case (one limit for a vector), on floats:
        if limits <= 0.0:  # the same comparisons and quotients as below, without numpy's per-call cost
            raise ValueError(f"limits must be > 0, got {limits}")
        quotients = [limits / m for m in map(abs, vals.tolist()) if m > limits]
        if not quotients:
            return vals.copy(), 1.0
        factor = min(quotients)
        return vals * factor, factor
    lims = np.asarray(limits, dtype=float)
    if vals.ndim == 1 and lims.shape == vals.shape:  # the other hot case (a limit per value), on floats
        bounds = lims.tolist()
        if any(bound <= 0.0 for bound in bounds):
            raise ValueError(f"limits must be > 0, got {limits}")
        quotients = [bound / m for bound, m in zip(bounds, map(abs, vals.tolist()), strict=True) if m > bound]
        if not quotients:
            return vals.copy(), 1.0
        factor = min(quotients)
        return vals * factor, factor
    if lims.ndim and lims.shape != vals.shape:
        lims = np.broadcast_to(lims, vals.shape)
    if (lims <= 0.0).any():
        raise ValueError(f"limits must be > 0, got {limits}")
    magnitude = np.abs(vals)
    over = magnitude > lims
    if not over.any():
        return vals.copy(), 1.0
    factor = float(np.min((lims[over] if lims.ndim else lims) / magnitude[over]))
    return vals * factor, factor


def resolved_rate_step(
    table: DHTable,
    q: np.ndarray,
    twist: np.ndarray,
    dt: float,
    *,
    tool: np.ndarray | None = None,
    damping: float = 0.05,
    singular_threshold: float | None = 0.05,
    joint_speed_limits: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One explicit-Euler resolved-rate step: returns ``(q_next, qd)``, both (n,).

    ``qd`` is the DLS solution for the tool ``twist`` (6,) in the base frame, scaled uniformly
    into ``joint_speed_limits`` (n,) rad/s if given; ``q_next = q + qd * dt``.
    """
    step = float(dt)
    if not np.isfinite(step) or step <= 0.0:
        raise ValueError(f"dt must be > 0, got {dt}")
    joints = check_vector(q, table.n_joints, "q")
    jacobian = geometric_jacobian(table, joints, tool)
    qd = dls_joint_velocity(jacobian, twist, damping, singular_threshold=singular_threshold)
    if joint_speed_limits is not None:
        qd, _ = uniform_scale(qd, joint_speed_limits)
    return joints + qd * step, qd


@dataclass(frozen=True)
class TrapezoidProfile:
    """Time scaling of a path of length ``distance`` >= 0 (m or rad) from rest to rest.

    Constant ``acceleration`` up to ``speed``, cruise, constant deceleration; triangular when
    the path is too short to reach ``speed``. ``duration`` is the total time (s).
    """

    distance: float
    speed: float
    acceleration: float
    peak: float = field(init=False)
    ramp: float = field(init=False)
    duration: float = field(init=False)

    def __post_init__(self) -> None:
        if not (self.distance >= 0.0 and self.speed > 0.0 and self.acceleration > 0.0):
            raise ValueError(
                f"need distance >= 0, speed > 0, acceleration > 0; got {self.distance}, "
                f"{self.speed}, {self.acceleration}"
            )
        peak = min(self.speed, math.sqrt(self.distance * self.acceleration))
        ramp = peak / self.acceleration
        cruise = (self.distance - peak * ramp) / peak if peak > 0.0 else 0.0
        object.__setattr__(self, "peak", peak)
        object.__setattr__(self, "ramp", ramp)
        object.__setattr__(self, "duration", 2.0 * ramp + cruise)

    def fraction(self, t: float) -> float:
        """Fraction of ``distance`` covered ``t`` seconds after the start, in [0, 1]."""
        if t <= 0.0:
            return 0.0
        if self.distance == 0.0 or t >= self.duration:
            return 1.0
        a = self.acceleration
        if t < self.ramp:
            return 0.5 * a * t * t / self.distance
        left = self.duration - t
        if left < self.ramp:
            return 1.0 - 0.5 * a * left * left / self.distance
        return (0.5 * self.peak * self.ramp + self.peak * (t - self.ramp)) / self.distance


def inverse_kinematics(
    table: DHTable,
    target2base: np.ndarray,
    q_start: np.ndarray,
    tool: np.ndarray | None = None,
    *,
    tolerance: float = 1e-9,
    max_iterations: int = 100,
) -> tuple[np.ndarray, bool]:
    """Numerical IK by damped Gauss–Newton steps from ``q_start`` (a solution near it).

    Returns ``(q, converged)``: ``q`` (n,) rad and whether ``|pose_error|`` (position in m and
    rotation vector in rad, stacked) fell below ``tolerance``.
    """
    target = check_pose(target2base, "target2base")
    joints = check_vector(q_start, table.n_joints, "q_start").copy()
    for _ in range(max_iterations):
        error = pose_error(forward_kinematics(table, joints, tool), target)
        if np.linalg.norm(error) < tolerance:
            return joints, True
        jacobian = geometric_jacobian(table, joints, tool)
        # Levenberg–Marquardt style: damping shrinks with the error, so the last steps are
        # Gauss–Newton and converge fast even close to a singularity.
        step = dls_joint_velocity(jacobian, error, min(0.05, float(np.linalg.norm(error))))
        # Keep each Newton step small enough for the linearisation to hold.
        joints = joints + uniform_scale(step, 0.5)[0]
    error = pose_error(forward_kinematics(table, joints, tool), target)
    return joints, bool(np.linalg.norm(error) < tolerance)
