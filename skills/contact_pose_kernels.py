"""Compiled rigid-motion arithmetic of the contact model: points placed by a pose, rotations, poses.

Points mapped by tcp2passive and by its inverse (``place``, ``place_inverse``), the rotation of a
rotation vector (``rotation_of``) and its left Jacobian (``left_jacobian``), both through
``_so3_series``; the translation and angle between two poses (``gap``); a deformation ``[t, θu]``
applied to a commanded pose (``apply``) and read back from a real one (``deformation``); the pose
a fraction of the way between two (``interpolate``, the bisection's path). The same arithmetic as
``se3``'s, written as loops compiled by numba (``@njit(cache=True)``) for the contact solver;
:mod:`orbitree.skills.contact_kernels` describes the kernels as a whole and re-exports these.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def place(points: np.ndarray, rotation: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """``points`` (N, 3) mapped by the pose: ``R p + t`` (N, 3)."""
    out = np.empty((points.shape[0], 3))
    for i in range(points.shape[0]):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        for j in range(3):
            out[i, j] = rotation[j, 0] * x + rotation[j, 1] * y + rotation[j, 2] * z + origin[j]
    return out


@numba.njit(cache=True)
def place_inverse(points: np.ndarray, rotation: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """``points`` (N, 3) mapped by the pose's inverse: ``Rᵀ (p − t)`` (N, 3)."""
    out = np.empty((points.shape[0], 3))
    for i in range(points.shape[0]):
        x, y, z = points[i, 0] - origin[0], points[i, 1] - origin[1], points[i, 2] - origin[2]
        for j in range(3):
            out[i, j] = rotation[0, j] * x + rotation[1, j] * y + rotation[2, j] * z
    return out


@numba.njit(cache=True)
def rotation_of(x: float, y: float, z: float) -> np.ndarray:
    """``se3.rotation_of`` (Rodrigues, same arithmetic) of the rotation vector (x, y, z)."""
    angle2 = x * x + y * y + z * z
    if angle2 < 1e-16:
        a, b = 1.0 - angle2 / 6.0, 0.5 - angle2 / 24.0
    else:
        angle = math.sqrt(angle2)
        half = math.sin(0.5 * angle)
        a, b = math.sin(angle) / angle, 2.0 * half * half / angle2
    return _so3_series(x, y, z, a, b)


@numba.njit(cache=True)
def _so3_series(x: float, y: float, z: float, a: float, b: float) -> np.ndarray:
    """``I + a [w]x + b [w]x^2`` (3, 3) of w = (x, y, z), written out: the form both the rotation
    (Rodrigues) and its left Jacobian take, with their own coefficients."""
    bxy, bxz, byz = b * x * y, b * x * z, b * y * z
    out = np.empty((3, 3))
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - b * (y * y + z * z), bxy - a * z, bxz + a * y
    out[1, 0], out[1, 1], out[1, 2] = bxy + a * z, 1.0 - b * (x * x + z * z), byz - a * x
    out[2, 0], out[2, 1], out[2, 2] = bxz - a * y, byz + a * x, 1.0 - b * (x * x + y * y)
    return out


@numba.njit(cache=True)
def gap(start: np.ndarray, end: np.ndarray) -> tuple[float, float]:
    """(translation m, rotation angle rad) between two poses (4, 4)."""
    rel = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            rel[i, j] = start[0, i] * end[0, j] + start[1, i] * end[1, j] + start[2, i] * end[2, j]
    x, y, z = rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]
    sine = 0.5 * math.sqrt(x * x + y * y + z * z)
    angle = math.atan2(sine, 0.5 * (rel[0, 0] + rel[1, 1] + rel[2, 2] - 1.0))
    dx, dy, dz = end[0, 3] - start[0, 3], end[1, 3] - start[1, 3], end[2, 3] - start[2, 3]
    return math.sqrt(dx * dx + dy * dy + dz * dz), angle


@numba.njit(cache=True)
def apply(commanded: np.ndarray, e: np.ndarray) -> np.ndarray:
    """real (4, 4) of deformation ``e`` (6,) ``[t, θu]`` from ``commanded`` (4, 4):
    ``commanded · [Exp(θu), t]``."""
    turn = rotation_of(e[3], e[4], e[5])
    pose = np.eye(4)
    for i in range(3):
        for j in range(3):
            pose[i, j] = commanded[i, 0] * turn[0, j] + commanded[i, 1] * turn[1, j] + commanded[i, 2] * turn[2, j]
        pose[i, 3] = commanded[i, 0] * e[0] + commanded[i, 1] * e[1] + commanded[i, 2] * e[2] + commanded[i, 3]
    return pose


@numba.njit(cache=True)
def interpolate(start: np.ndarray, end: np.ndarray, step: np.ndarray, s: float) -> np.ndarray:
    """Pose (4, 4) a fraction ``s`` of the way from ``start`` to ``end`` (4, 4): translation
    linear, rotation ``start · Exp(s · step)``, ``step`` (3,) the rotation vector of
    ``startᵀ end``."""
    turn = rotation_of(s * step[0], s * step[1], s * step[2])
    pose = np.eye(4)
    for i in range(3):
        for j in range(3):
            pose[i, j] = start[i, 0] * turn[0, j] + start[i, 1] * turn[1, j] + start[i, 2] * turn[2, j]
        pose[i, 3] = (1.0 - s) * start[i, 3] + s * end[i, 3]
    return pose


@numba.njit(cache=True)
def deformation(commanded: np.ndarray, real: np.ndarray) -> np.ndarray:
    """e (6,) ``[t, θu]`` of the real pose (4, 4) in the commanded one (4, 4), both in one frame
    (``se3.rotvec_of``'s closed form); NaNs beyond ~154° of rotation, where that form loses
    digits (the caller then asks scipy)."""
    e = np.empty(6)
    rel = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            rel[i, j] = commanded[0, i] * real[0, j] + commanded[1, i] * real[1, j] + commanded[2, i] * real[2, j]
        e[i] = (commanded[0, i] * (real[0, 3] - commanded[0, 3]) + commanded[1, i] * (real[1, 3] - commanded[1, 3])
                + commanded[2, i] * (real[2, 3] - commanded[2, 3]))
    x, y, z = rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]
    cosine = 0.5 * (rel[0, 0] + rel[1, 1] + rel[2, 2] - 1.0)
    if cosine < -0.9:
        e[3:] = np.nan
        return e
    sine = 0.5 * math.sqrt(x * x + y * y + z * z)
    angle = math.atan2(sine, cosine)
    factor = 0.5 * angle / sine if sine > 1e-12 else 0.5 + angle * angle / 12.0
    e[3], e[4], e[5] = factor * x, factor * y, factor * z
    return e


@numba.njit(cache=True)
def left_jacobian(x: float, y: float, z: float) -> np.ndarray:
    """J_l (3, 3) of the rotation vector (x, y, z): ``Exp(ω + δ) ≈ Exp(J_l(ω) δ) Exp(ω)``."""
    theta2 = x * x + y * y + z * z
    theta = math.sqrt(theta2)
    if theta < 1e-8:
        c1, c2 = 0.5, 0.0
    else:
        c1, c2 = (1.0 - math.cos(theta)) / theta2, (theta - math.sin(theta)) / (theta2 * theta)
    return _so3_series(x, y, z, c1, c2)
