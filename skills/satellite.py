"""A satellite as the arms meet it: a body spinning on a gimbal's bearing (the laboratory mockup of
the JPL dual-arm grappling experiment, [JPL] in the README's Sources) and the contact between a
tool and a grapple pad.

Bearing friction: ``I ω̇ = τ - c ω - τc sgn(ω)`` about the bearing's axis, ``c`` viscous
(N·m·s/rad), ``τc`` Coulomb (N·m), ``I`` the moment of inertia about the axis (kg·m²); the
bearing sticks at ω = 0 while the applied torque stays within ``τc``. For a constant torque over a
step the equation is linear between sign changes, so :func:`gimbal_step` solves it exactly
(no integration error, however long the step).

Pad contact: a pad (a Velcro disc on the satellite, its frame's z the outward normal, origin at
its centre) is a stiff, damped surface: pressed ``δ`` deep at ``δ̇`` it pushes back with
``k δ + d δ̇`` (never pulling), and the tool slides on it against Coulomb friction (regularised
below a slip speed, so a tool resting on the pad is not chattered). Once the Velcro has engaged,
the tool is tied to the point it engaged at by the same spring and damper in every direction,
until the pull along the normal exceeds the pad's hold force (the Velcro tears open).

Frames and units: SI; vectors are (3,) numpy arrays in the frame each function names.
"""

from __future__ import annotations

import math

import numpy as np

from orbitree.skills.se3 import check_vector

# ------------------------------------------------------------------------------ gimbal


def _free_run(omega: float, accel_const: float, k: float, t: float) -> tuple[float, float]:
    """(ω(t), ∫ω) of ``ω̇ = accel_const - k ω`` from ``omega`` (k = c/I >= 0)."""
    if k * t < 1e-12:
        return omega + accel_const * t, omega * t + 0.5 * accel_const * t * t
    w_inf = accel_const / k
    decay = math.exp(-k * t)
    return w_inf + (omega - w_inf) * decay, w_inf * t + (omega - w_inf) * (1.0 - decay) / k


def _time_to_zero(omega: float, accel_const: float, k: float) -> float:
    """When ``ω̇ = accel_const - k ω`` from ``omega`` reaches 0 (inf if it does not)."""
    if omega == 0.0:
        return 0.0
    if k < 1e-15:
        return -omega / accel_const if accel_const * omega < 0.0 else math.inf
    w_inf = accel_const / k
    if w_inf * omega >= 0.0:  # the asymptote is on the same side: never reaches zero
        return math.inf
    return math.log((omega - w_inf) / (0.0 - w_inf)) / k


def gimbal_step(angle: float, omega: float, inertia: float, viscous: float, coulomb: float, torque: float,
                dt: float) -> tuple[float, float]:
    """The bearing's angle (rad) and rate (rad/s) after ``dt`` seconds of a constant axial ``torque``
    (N·m), solved exactly: viscous and Coulomb friction, sticking at rest while ``|torque| <= coulomb``.
    """
    if inertia <= 0.0 or viscous < 0.0 or coulomb < 0.0 or dt < 0.0:
        raise ValueError(f"need inertia > 0, friction >= 0 and dt >= 0 (got {inertia}, {viscous}, "
                         f"{coulomb}, {dt})")
    k = viscous / inertia
    left = dt
    for _ in range(4):  # at most: slide to rest, stick or break away, slide on
        if left <= 0.0:
            break
        if omega == 0.0:
            if abs(torque) <= coulomb:
                return angle, 0.0  # static friction holds it
            sign = math.copysign(1.0, torque)
        else:
            sign = math.copysign(1.0, omega)
        accel = (torque - coulomb * sign) / inertia
        stop = _time_to_zero(omega, accel, k) if omega != 0.0 else math.inf
        if stop >= left:
            omega, travelled = _free_run(omega, accel, k, left)
            return angle + travelled, omega
        _, travelled = _free_run(omega, accel, k, stop)
        angle, omega, left = angle + travelled, 0.0, left - stop
    return angle, omega


def gimbal_spin_down(omega0: float, inertia: float, viscous: float, coulomb: float,
                     t: float | np.ndarray) -> np.ndarray:
    """Closed form of a free spin-down (no applied torque): the rate (rad/s) at time(s) ``t``.

    ``ω(t) = (|ω0| + τc/c) e^(-c t / I) - τc/c`` (``|ω0| - τc t / I`` without viscous friction),
    with ω0's sign, and 0 from the stop time on (:func:`gimbal_stop_time`).
    """
    t = np.asarray(t, float)
    w0 = abs(omega0)
    if viscous > 0.0:
        a = coulomb / viscous
        w = (w0 + a) * np.exp(-viscous * t / inertia) - a
    else:
        w = w0 - coulomb * t / inertia
    return math.copysign(1.0, omega0) * np.maximum(w, 0.0)


def gimbal_stop_time(omega0: float, inertia: float, viscous: float, coulomb: float) -> float:
    """Seconds a free spin takes to stop: ``(I/c) ln(1 + c|ω0|/τc)`` (``I|ω0|/τc`` without viscous
    friction; inf without Coulomb friction)."""
    w0 = abs(omega0)
    if coulomb == 0.0:
        return math.inf if w0 > 0.0 else 0.0
    if viscous == 0.0:
        return inertia * w0 / coulomb
    return inertia / viscous * math.log1p(viscous * w0 / coulomb)


# ------------------------------------------------------------------------------ inertia


def inertia_matrix(principal: np.ndarray, products: np.ndarray | None = None) -> np.ndarray:
    """The (3, 3) inertia tensor from its diagonal ``(Ixx, Iyy, Izz)`` and products of inertia
    ``(Ixy, Ixz, Iyz)`` (kg·m², the tensor's off-diagonal entries as written, e.g. ETS-VII's
    table). ValueError unless symmetric positive definite and physical (triangle inequality of
    the principal moments)."""
    xx, yy, zz = check_vector(principal, 3, "principal")
    xy, xz, yz = (0.0, 0.0, 0.0) if products is None else check_vector(products, 3, "products")
    matrix = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    check_inertia(matrix)
    return matrix


def check_inertia(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, float)
    if matrix.shape != (3, 3) or not np.allclose(matrix, matrix.T):
        raise ValueError(f"an inertia tensor is a symmetric 3x3 matrix, got {np.round(matrix, 6).tolist()}")
    moments = np.linalg.eigvalsh(matrix)
    if moments.min() <= 0.0:
        raise ValueError(f"an inertia tensor is positive definite; its principal moments are "
                         f"{np.round(moments, 6).tolist()} kg·m²")
    a, b, c = moments
    if c > a + b + 1e-9 * c:
        raise ValueError(f"principal moments {np.round(moments, 6).tolist()} kg·m² break the triangle "
                         "inequality (no body has them)")
    return matrix


# ------------------------------------------------------------------------------ pad contact

PAD_MAX_DEPTH_M = 0.05
"""A tip deeper than this behind a pad's face is not touching it (it is behind the pad)."""


def pad_contact_force(tip: np.ndarray, tip_velocity: np.ndarray, radius: float, stiffness: float,
                      damping: float, friction: float, slip_speed: float = 0.005,
                      max_depth: float = PAD_MAX_DEPTH_M) -> tuple[np.ndarray, float]:
    """Force (3,) N on the tool's tip from a disc pad, and the depth (m) it is pressed in.

    ``tip`` (3,): the tip in the pad frame (z the pad's outward normal, origin at its centre);
    ``tip_velocity`` (3,): the tip's velocity relative to the pad's surface point under it, pad
    frame. No force off the disc (``|tip_xy| > radius``), above it (``z >= 0``) or deeper than
    ``max_depth`` (the tip is then behind the pad, inside the satellite: not a contact). Normal
    ``max(0, k δ - d ż)``; tangential ``-μ N v̂`` scaled by ``min(1, |v| / slip_speed)``.
    """
    tip, vel = check_vector(tip, 3, "tip"), check_vector(tip_velocity, 3, "tip_velocity")
    depth = -float(tip[2])
    if not 0.0 < depth <= max_depth or math.hypot(tip[0], tip[1]) > radius:
        return np.zeros(3), 0.0
    normal = max(0.0, stiffness * depth - damping * float(vel[2]))
    slide = vel[:2]
    speed = float(np.linalg.norm(slide))
    force = np.array([0.0, 0.0, normal])
    if speed > 0.0 and normal > 0.0:
        force[:2] = -friction * normal * min(1.0, speed / slip_speed) * slide / speed
    return force, depth


def tether_force(tip: np.ndarray, anchor: np.ndarray, tip_velocity: np.ndarray, stiffness: float,
                 damping: float) -> np.ndarray:
    """Force (3,) N on the tool's tip tied to ``anchor`` (an engaged Velcro: the point it engaged at)
    by a spring ``stiffness`` and damper ``damping`` in every direction; all in one frame."""
    tip, anchor = check_vector(tip, 3, "tip"), check_vector(anchor, 3, "anchor")
    return -stiffness * (tip - anchor) - damping * check_vector(tip_velocity, 3, "tip_velocity")
