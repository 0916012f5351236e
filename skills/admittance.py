"""Admittance control for docking: a Cartesian mass-damper-spring per axis, and the joint form.

**Cartesian law** (UR's URScript admittance example, [UR] in the README's Sources), per axis ``i``::

    a_i = (F_i − F_t,i − K_i x_i − D_i ẋ_i) / M_i

``F`` is the measured wrench after the dead band, ``F_t`` a target wrench, ``x`` the offset
accumulated since the controller started and ``ẋ`` the commanded twist. :func:`admittance_step`
integrates one tick and returns the new twist (sent with ``speed_l``) and offset; it keeps no state.

* Frames: the law is per axis in whatever axes the wrench is given; the twist comes out in the
  same axes. For ``speed_l`` give the wrench at the TCP point in base axes
  (:func:`wrench_tcp_to_base` turns the sensor's TCP-frame reading into that). UR's parameters are
  isotropic, so the choice of axes does not change their behaviour.
* Offset: position in m and, for the rotational axes, the integrated angular velocity in rad (a
  small-angle measure, enough for the stiffness term close to the start pose).
* Dead band: the force part is zeroed while ``‖f‖ < force_dead_band`` (3 N) and the torque part
  while ``‖τ‖ < torque_dead_band`` (0.2 N·m); above, the reading passes unchanged. Norms rather
  than single axes, so the band does not depend on the frame.
* Integration: backward Euler, ``(M + dt D + dt² K) ẋ⁺ = M ẋ + dt (F − F_t − K x)``,
  ``x⁺ = x + dt ẋ⁺``: stable for every ``dt``, with the exact steady states ``ẋ = F/D`` (K = 0)
  and ``x = F/K`` (K > 0).

**Joint form** (eq. 14 of the SIROM paper [SIROM], after Scherzinger et al. 2019): ``q̈ = H(q)⁻¹ J(q)ᵀ f_ext``,
with ``H`` the joint inertia matrix of arm plus tool, ``J`` the geometric Jacobian at the TCP
(base axes) and ``f_ext`` the wrench at the TCP in base axes (gravity compensated by the low-level
control, slow motion). :func:`joint_admittance_step` adds an optional joint damping so the arm
stops when the force goes away. With ``H = Jᵀ M J`` it reduces to the Cartesian law.
:func:`ur10e_joint_inertia` is an *approximate* ``H`` for the UR10e (see its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from orbitree.skills.kinematics import UR10E, link_frames
from orbitree.skills.se3 import check_vector, vector_norm

Sextuple = tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class AdmittanceParams:
    """Per-axis admittance parameters, SI, translation first.

    ``mass`` M (kg, kg·m²) > 0, ``damping`` D (N·s/m, N·m·s/rad) >= 0, ``stiffness`` K (N/m,
    N·m/rad) >= 0, ``target_wrench`` F_t (N, N·m), dead bands (N, N·m) >= 0. Defaults: UR's
    URScript example, M = 0.5·(22.5, 22.5, 22.5, 1, 1, 1), D = 0.5·(25, 25, 25, 2, 2, 2), K = 0.
    """

    mass: Sextuple = (11.25, 11.25, 11.25, 0.5, 0.5, 0.5)
    damping: Sextuple = (12.5, 12.5, 12.5, 1.0, 1.0, 1.0)
    stiffness: Sextuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    target_wrench: Sextuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    force_dead_band: float = 3.0
    torque_dead_band: float = 0.2

    def __post_init__(self) -> None:
        for key in ("mass", "damping", "stiffness", "target_wrench"):
            values = tuple(float(v) for v in getattr(self, key))
            if len(values) != 6 or not all(math.isfinite(v) for v in values):
                raise ValueError(f"AdmittanceParams.{key} must be 6 finite numbers, got {values}")
            object.__setattr__(self, key, values)
        if min(self.mass) <= 0.0:
            raise ValueError(f"AdmittanceParams.mass must be > 0 on every axis, got {self.mass}")
        for key in ("damping", "stiffness"):
            if min(getattr(self, key)) < 0.0:
                raise ValueError(f"AdmittanceParams.{key} must be >= 0, got {getattr(self, key)}")
        for key in ("force_dead_band", "torque_dead_band"):
            value = float(getattr(self, key))
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f"AdmittanceParams.{key} must be finite and >= 0, got {value}")
            object.__setattr__(self, key, value)


UR_ADMITTANCE = AdmittanceParams()
"""The URScript example's parameters (3 N / 0.2 N·m dead band, K = 0)."""


def apply_dead_band(
    wrench: np.ndarray, force_dead_band: float = 3.0, torque_dead_band: float = 0.2
) -> np.ndarray:
    """``wrench`` (6,) with its force (torque) part zeroed while its norm is below the band."""
    values = check_vector(wrench, 6, "wrench").copy()
    if vector_norm(values[:3]) < force_dead_band:
        values[:3] = 0.0
    if vector_norm(values[3:]) < torque_dead_band:
        values[3:] = 0.0
    return values


def admittance_step(
    wrench: np.ndarray,
    twist: np.ndarray,
    offset: np.ndarray,
    dt: float,
    params: AdmittanceParams = UR_ADMITTANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """One tick of the Cartesian admittance: returns ``(twist_new, offset_new)``, both (6,).

    ``wrench`` (6,) measured (N, N·m), ``twist`` (6,) the previous command (m/s, rad/s),
    ``offset`` (6,) the previous offset (m, rad), all in the same axes; ``dt`` > 0 (s).
    """
    force = apply_dead_band(wrench, params.force_dead_band, params.torque_dead_band)
    velocity = check_vector(twist, 6, "twist")
    displacement = check_vector(offset, 6, "offset")
    step = _positive_dt(dt)
    mass, damping = np.asarray(params.mass), np.asarray(params.damping)
    stiffness = np.asarray(params.stiffness)
    drive = force - np.asarray(params.target_wrench) - stiffness * displacement
    new_velocity = (mass * velocity + step * drive) / (mass + step * damping + step**2 * stiffness)
    return new_velocity, displacement + step * new_velocity


def joint_acceleration(
    jacobian: np.ndarray, joint_inertia: np.ndarray, wrench: np.ndarray
) -> np.ndarray:
    """``q̈ = H⁻¹ Jᵀ f_ext`` (n,): ``jacobian`` (6, n) at the TCP in base axes, ``joint_inertia``
    H (n, n) symmetric positive definite, ``wrench`` (6,) at the TCP in base axes."""
    jac, inertia = _check_joint_matrices(jacobian, joint_inertia)
    force = check_vector(wrench, 6, "wrench")
    return np.linalg.solve(inertia, jac.T @ force)


def joint_admittance_step(
    jacobian: np.ndarray,
    joint_inertia: np.ndarray,
    wrench: np.ndarray,
    qd: np.ndarray,
    dt: float,
    joint_damping: np.ndarray | None = None,
) -> np.ndarray:
    """One tick of ``H q̈ = Jᵀ f − D_q q̇`` by backward Euler: the new joint velocity (n,).

    ``(H + dt D_q) q̇⁺ = H q̇ + dt Jᵀ f``. ``joint_damping`` D_q is (n, n) or its diagonal (n,)
    (N·m·s/rad), None for the SIROM paper's undamped form. Apply :func:`apply_dead_band` to ``wrench``
    first if wanted; ``J @ q̇⁺`` is the matching TCP twist for ``speed_l``.
    """
    jac, inertia = _check_joint_matrices(jacobian, joint_inertia)
    n = inertia.shape[0]
    force = check_vector(wrench, 6, "wrench")
    velocity = check_vector(qd, n, "qd")
    step = _positive_dt(dt)
    if joint_damping is None:
        damping = np.zeros((n, n))
    else:
        damping = np.asarray(joint_damping, dtype=float)
        if damping.shape == (n,):
            damping = np.diag(damping)
        if damping.shape != (n, n) or not np.isfinite(damping).all():
            raise ValueError(
                f"joint_damping must be finite, ({n},) or ({n}, {n}), got {damping.shape}"
            )
    return np.linalg.solve(inertia + step * damping, inertia @ velocity + step * (jac.T @ force))


# ---------------------------------------------------------------------------- UR10e inertia

#: UR10e link masses (kg), UR's "parameters for calculations of kinematics and dynamics".
UR10E_LINK_MASS: tuple[float, ...] = (7.369, 13.051, 3.989, 2.1, 1.98, 0.615)
#: Link centres of mass (m) in the DH frame of each link (frame i for link i), same source.
UR10E_LINK_COM: tuple[tuple[float, float, float], ...] = (
    (0.021, 0.0, 0.027),
    (0.38, 0.0, 0.158),
    (0.24, 0.0, 0.068),
    (0.0, 0.007, 0.018),
    (0.0, 0.007, 0.018),
    (0.0, 0.0, -0.026),
)
#: Rotor inertia reflected through the gears, kg·m² — an order-of-magnitude guess, not a datum.
UR10E_ARMATURE: tuple[float, ...] = (0.3, 0.3, 0.15, 0.05, 0.05, 0.05)


def ur10e_joint_inertia(
    q: np.ndarray,
    payload_mass: float = 0.0,
    payload_com: np.ndarray | None = None,
    armature: tuple[float, ...] = UR10E_ARMATURE,
) -> np.ndarray:
    """Approximate UR10e joint inertia matrix H(q) (6, 6), symmetric positive definite.

    An approximation, not identified dynamics: each link is a point mass at its published centre
    of mass (UR publishes masses and centres, no link inertia tensors), the payload (the active
    SIROM) a point mass at ``payload_com`` (3,) m in the flange frame (default: the flange
    origin), plus a diagonal ``armature`` (kg·m², guessed) that stands for rotor and link inertia
    and keeps H positive definite at every q. ``q`` (6,) rad.
    """
    joints = check_vector(q, 6, "q")
    extra = check_vector(armature, 6, "armature")
    mass = float(payload_mass)
    if not math.isfinite(mass) or mass < 0.0 or np.any(extra <= 0.0):
        raise ValueError(f"need payload_mass >= 0 and armature > 0, got {mass}, {extra}")
    frames = link_frames(UR10E, joints)
    points = [
        (m, i + 1, np.asarray(c))
        for i, (m, c) in enumerate(zip(UR10E_LINK_MASS, UR10E_LINK_COM, strict=True))
    ]
    if mass > 0.0:
        com = np.zeros(3) if payload_com is None else check_vector(payload_com, 3, "payload_com")
        points.append((mass, 6, com))
    inertia = np.diag(extra)
    for point_mass, link, local in points:
        position = frames[link, :3, :3] @ local + frames[link, :3, 3]
        jacobian = np.zeros((3, 6))
        for j in range(link):  # joint j + 1 turns about z_j and moves links j + 1 .. 6
            jacobian[:, j] = np.cross(frames[j, :3, 2], position - frames[j, :3, 3])
        inertia += point_mass * jacobian.T @ jacobian
    return inertia


# ---------------------------------------------------------------------------- delay margins
#
# One axis of the dock loop: the admittance (M, D, and its own stiffness K, 0 in the flagship) drives
# the arm against a contact of stiffness k (the wrist compliance in series with the contact), whose
# force reaches the law τ late. Linear: above the dead band, below the speed and acceleration limits.


def delay_margin(
    mass: float, damping: float, stiffness: float, *, admittance_stiffness: float = 0.0
) -> float:
    """The loop delay (s) at which the continuous-time dock loop becomes unstable.

    The smallest τ >= 0 at which ``M s² + D s + K + k e^(−sτ) = 0`` has a root on the imaginary
    axis: ``mass`` M (kg), ``damping`` D (N·s/m) and ``admittance_stiffness`` K (N/m) of the law,
    ``stiffness`` k (N/m) of what the wrist meets (N·m/rad and kin for a rotational axis). The open
    loop ``L = k / (M s² + D s + K)`` has unit gain where ``(K − M ω²)² + D² ω² = k²``, i.e.
    ``M² ω⁴ + (D² − 2 K M) ω² + K² − k² = 0``; at such an ω the delay ``τ = (π + arg L(jω)) / ω``
    (mod 2π/ω) puts a root at jω. The margin is the smallest over the crossovers; 0 when the loop
    is not stable without delay (D = 0), ``inf`` when it has no crossover (k = 0, or K well above k).

    With K = 0 there is one crossover and ``τ = (π/2 − atan(M ω / D)) / ω``; the mass-free bound
    ``τ < (π/2) D / k`` is its limit M → 0 and overstates the margin (78.5 ms against 69.3 ms at
    M = 11.25 kg, D = 1000 N·s/m, k = 20 N/mm). It also ignores the sampling:
    :func:`sampled_delay_margin`.
    """
    m, d, k, k_law = _loop_parameters(mass, damping, stiffness, admittance_stiffness)
    if k == 0.0:
        return math.inf
    if d == 0.0:
        return 0.0
    margins = [math.inf]
    for u in _quadratic_roots(m * m, d * d - 2.0 * k_law * m, k_law * k_law - k * k):
        if u <= 0.0:
            continue
        omega = math.sqrt(u)
        phase = -math.atan2(d * omega, k_law - m * omega * omega)  # arg L(jω)
        margins.append(math.fmod(phase + math.pi + 2.0 * math.tau, math.tau) / omega)
    return min(margins)


def dock_loop_matrix(
    mass: float,
    damping: float,
    stiffness: float,
    period: float,
    delay: float = 0.0,
    *,
    admittance_stiffness: float = 0.0,
) -> np.ndarray:
    """The state-transition matrix of one axis of the dock loop as ``admittance_dock`` runs it.

    Each tick n (``period`` T) the wrist reads ``F_n = −k x(nT − τ)`` (τ = ``delay`` >= 0, the
    sensor-to-command delay beyond the tick's own); :func:`admittance_step` (backward Euler)
    gives ``v_{n+1} = (M v_n + T (F_n − K x_n)) / (M + T D + T² K)``; ``speed_l`` holds it for
    the whole next period, so ``x_{n+1} = x_n + T v_{n+1}`` (as the simulated arm moves). ``x`` is
    the arm's offset from the contact's equilibrium, which is also the law's offset. Arguments as
    for :func:`delay_margin`.

    The arm moves at a constant speed between ticks, so ``x(t)`` is piecewise linear and, with
    ``τ = (n_d + α) T`` (whole n_d, 0 <= α < 1), ``x(nT − τ) = (1 − α) x_{n−n_d} + α x_{n−n_d−1}``
    exactly: a fractional delay costs no approximation. State ``(v_n, x_n, x_{n−1}, ...,
    x_{n−n_d−1})``, n_d + 3 entries; the loop is stable while every eigenvalue is inside the unit
    circle.
    """
    m, d, k, k_law = _loop_parameters(mass, damping, stiffness, admittance_stiffness)
    step = _positive_dt(period)
    lag = float(delay)
    if not math.isfinite(lag) or lag < 0.0:
        raise ValueError(f"delay must be finite and >= 0, got {delay}")
    whole = math.floor(lag / step + 1e-9)
    fraction = max(0.0, lag / step - whole)
    n = whole + 3
    gain = 1.0 / (m + step * d + step * step * k_law)
    velocity_row = np.zeros(n)  # v_{n+1} as a function of the state
    velocity_row[0] = gain * m
    velocity_row[1] -= gain * step * k_law
    velocity_row[1 + whole] -= gain * step * k * (1.0 - fraction)
    velocity_row[2 + whole] -= gain * step * k * fraction
    matrix = np.zeros((n, n))
    matrix[0] = velocity_row
    matrix[1] = step * velocity_row
    matrix[1, 1] += 1.0
    for i in range(2, n):  # the older positions shift down
        matrix[i, i - 1] = 1.0
    return matrix


def sampled_delay_margin(
    mass: float,
    damping: float,
    stiffness: float,
    period: float,
    *,
    admittance_stiffness: float = 0.0,
    max_delay: float | None = None,
    tolerance: float = 1e-6,
) -> float:
    """The smallest delay (s) at which the sampled dock loop (:func:`dock_loop_matrix`) is unstable.

    Stability by the spectral radius of the loop's state-transition matrix: ρ < 1. The delay is
    the sensor-to-command delay on top of the tick's own sample-and-hold (the simulated arm's
    loop is the zero-delay case). The delay is continuous, not a whole number of ticks: whole
    ticks would resolve the margin only to a period (64 or 72 ms at the flagship's 8 ms), and a
    fractional delay is exact in this loop (:func:`dock_loop_matrix`). Delays are scanned from 0
    up to ``max_delay`` (default twice :func:`delay_margin` plus four periods; 0.5 s if that is
    infinite) in steps of ``max(period / 4, max_delay / 64)``, and the first step at which ρ >= 1
    is bisected down to ``tolerance`` (s).

    Returns 0 when the loop is unstable without any delay (with K = 0, a contact stiffer than
    ``2 (2 M + T D) / T²``: 9.5e5 N/m at the flagship's M, D and 8 ms), ``inf`` when it is still
    stable at ``max_delay`` (or k = 0: no loop).
    """
    m, d, k, k_law = _loop_parameters(mass, damping, stiffness, admittance_stiffness)
    step = _positive_dt(period)
    if k == 0.0:
        return math.inf
    if max_delay is None:
        continuous = delay_margin(m, d, k, admittance_stiffness=k_law)
        max_delay = 2.0 * continuous + 4.0 * step if math.isfinite(continuous) else 0.5
    limit, accuracy = float(max_delay), float(tolerance)
    if not (math.isfinite(limit) and limit >= 0.0 and math.isfinite(accuracy) and accuracy > 0.0):
        raise ValueError(f"need max_delay >= 0 and tolerance > 0, got {max_delay}, {tolerance}")

    def unstable(lag: float) -> bool:
        matrix = dock_loop_matrix(m, d, k, step, lag, admittance_stiffness=k_law)
        return float(np.max(np.abs(np.linalg.eigvals(matrix)))) >= 1.0

    if unstable(0.0):
        return 0.0
    stride = max(step / 4.0, limit / 64.0)
    stable = 0.0
    while stable < limit:
        trial = min(stable + stride, limit)
        if unstable(trial):
            break
        stable = trial
    else:
        return math.inf
    while trial - stable > accuracy:
        middle = 0.5 * (stable + trial)
        if unstable(middle):
            trial = middle
        else:
            stable = middle
    return 0.5 * (stable + trial)


def _loop_parameters(
    mass: float, damping: float, stiffness: float, admittance_stiffness: float
) -> tuple[float, float, float, float]:
    values = tuple(float(v) for v in (mass, damping, stiffness, admittance_stiffness))
    if not all(math.isfinite(v) for v in values) or values[0] <= 0.0 or min(values[1:]) < 0.0:
        raise ValueError(
            "need finite mass > 0, damping, stiffness and admittance_stiffness >= 0, got "
            f"{mass}, {damping}, {stiffness}, {admittance_stiffness}"
        )
    return values  # type: ignore[return-value]


def _quadratic_roots(a: float, b: float, c: float) -> list[float]:
    """Real roots of ``a u² + b u + c`` (a > 0), without cancellation."""
    discriminant = b * b - 4.0 * a * c
    if discriminant < 0.0:
        return []
    q = -0.5 * (b + math.copysign(math.sqrt(discriminant), b))
    return [q / a, c / q] if q != 0.0 else [0.0]


# ---------------------------------------------------------------------------- checks


def _positive_dt(dt: float) -> float:
    step = float(dt)
    if not math.isfinite(step) or step <= 0.0:
        raise ValueError(f"dt must be finite and > 0, got {dt}")
    return step


def _check_joint_matrices(
    jacobian: np.ndarray, joint_inertia: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    jac = np.asarray(jacobian, dtype=float)
    if jac.ndim != 2 or jac.shape[0] != 6 or not np.isfinite(jac).all():
        raise ValueError(f"jacobian must be a finite (6, n) matrix, got shape {jac.shape}")
    n = jac.shape[1]
    inertia = np.asarray(joint_inertia, dtype=float)
    if inertia.shape != (n, n) or not np.isfinite(inertia).all():
        raise ValueError(f"joint_inertia must be a finite ({n}, {n}) matrix, got {inertia.shape}")
    if not np.allclose(inertia, inertia.T, rtol=1e-9, atol=1e-12):
        raise ValueError("joint_inertia must be symmetric")
    return jac, inertia
