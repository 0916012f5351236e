"""Compiled rows of the contact model's QP: the contacts found, linearised about the real pose.

``qp_rows`` builds the QP's constraint rows (one per contact, or one per side of each contact's
friction pyramid, and the hook's two) and the plain normal rows, each written by ``_row``; the
QP itself is solved in :mod:`orbitree.skills.contact_qp` (daqp). Compiled by numba
(``@njit(cache=True)``); :mod:`orbitree.skills.contact_kernels` describes the kernels as a whole
and re-exports ``qp_rows``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from orbitree.skills.contact_pose_kernels import left_jacobian


@numba.njit(cache=True)
def _row(out: np.ndarray, r: int, n0: float, n1: float, n2: float, lever: np.ndarray, jl: np.ndarray) -> None:
    """Row r of ``out``: the normal (n0, n1, n2) and ``(lever × n) J_l``."""
    c0 = lever[1] * n2 - lever[2] * n1
    c1 = lever[2] * n0 - lever[0] * n2
    c2 = lever[0] * n1 - lever[1] * n0
    out[r, 0], out[r, 1], out[r, 2] = n0, n1, n2
    for j in range(3):
        out[r, 3 + j] = c0 * jl[0, j] + c1 * jl[1, j] + c2 * jl[2, j]


@numba.njit(cache=True)
def qp_rows(commanded: np.ndarray, real: np.ndarray, e0: np.ndarray, normals: np.ndarray, points: np.ndarray,
            dist: np.ndarray, friction: float, cos_sides: np.ndarray, sin_sides: np.ndarray, hook: bool,
            hook_gap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contacts (passive frame: normals, points (m, 3), distances (m,)) linearised about the
    real pose, whose deformation from ``commanded`` (4, 4) is ``e0`` (6,): the QP's rows ``a x >= b``
    and the plain normal rows ``a_n e >= b_n`` (m, 6), (m,). Row i: ``dist_i + n_i·δt + (r_i ×
    n_i)·J_l(θu₀) δθu >= 0``, in the commanded frame, ``r_i`` the lever from the real origin to
    the contact. With ``friction`` μ > 0 each contact's QP row is one per side k of the pyramid,
    normal ``n + μ (cos_k t₁ + sin_k t₂)`` (t₁, t₂ unit, perpendicular to n and each other).
    With ``hook`` two more rows and a 7th variable, the hook's stretch s: ``s − h·e >= hook_gap``
    (h the passive's z in the commanded frame) and ``s >= 0``."""
    m = dist.shape[0]
    jl = left_jacobian(e0[3], e0[4], e0[5])
    a_n = np.empty((m, 6))
    lever = np.empty(3)
    sides = cos_sides.shape[0] if friction != 0.0 else 1
    count = m * sides
    a = np.zeros((count + (2 if hook else 0), 7 if hook else 6))
    rows = np.empty((count, 6))
    for i in range(m):
        n = np.empty(3)
        for j in range(3):  # row vectors times cmd2passive's rotation: passive -> cmd frame
            n[j] = (normals[i, 0] * commanded[0, j] + normals[i, 1] * commanded[1, j]
                    + normals[i, 2] * commanded[2, j])
            lever[j] = ((points[i, 0] - real[0, 3]) * commanded[0, j]
                        + (points[i, 1] - real[1, 3]) * commanded[1, j]
                        + (points[i, 2] - real[2, 3]) * commanded[2, j])
        _row(a_n, i, n[0], n[1], n[2], lever, jl)
        if friction == 0.0:
            for j in range(6):
                rows[i, j] = a_n[i, j]
            continue
        if abs(n[0]) < 0.9:  # t₁ = n × x
            f0, f1, f2 = 0.0, n[2], -n[1]
        else:  # t₁ = n × y
            f0, f1, f2 = -n[2], 0.0, n[0]
        norm = math.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
        f0, f1, f2 = f0 / norm, f1 / norm, f2 / norm
        s0, s1, s2 = n[1] * f2 - n[2] * f1, n[2] * f0 - n[0] * f2, n[0] * f1 - n[1] * f0
        for k in range(sides):
            c, s = cos_sides[k], sin_sides[k]
            _row(rows, i * sides + k, n[0] + friction * (c * f0 + s * s0), n[1] + friction * (c * f1 + s * s1),
                 n[2] + friction * (c * f2 + s * s2), lever, jl)
    b = np.empty(a.shape[0])
    b_n = np.empty(m)
    for i in range(m):
        b_n[i] = (a_n[i, 0] * e0[0] + a_n[i, 1] * e0[1] + a_n[i, 2] * e0[2] + a_n[i, 3] * e0[3]
                  + a_n[i, 4] * e0[4] + a_n[i, 5] * e0[5]) - dist[i]
    for r in range(count):
        for j in range(6):
            a[r, j] = rows[r, j]
        b[r] = (rows[r, 0] * e0[0] + rows[r, 1] * e0[1] + rows[r, 2] * e0[2] + rows[r, 3] * e0[3]
                + rows[r, 4] * e0[4] + rows[r, 5] * e0[5]) - dist[r // sides]
    if hook:
        for j in range(3):
            a[count, j] = -commanded[2, j]
        a[count, 6], a[count + 1, 6] = 1.0, 1.0
        b[count], b[count + 1] = hook_gap, 0.0
    return a, b, a_n, b_n
