"""Joint axes from measured points: least-squares plane and circle fits, and Plücker lines
(the geometry of the circle-point calibration, :mod:`orbitree.skills.circle_point`, which
re-exports these names).

A joint turned alone carries a point on its link around a circle about its axis: the plane through
the points gives the axis direction (its normal), the circle's centre a point on the axis, and the
axis is the Plücker line ``(S, S0 = p × S)``. :func:`line_relation` says how two such lines lie.
Arrays carry leading batch axes (one entry per Monte Carlo iteration); lengths in metres.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

PARALLEL_SINE = 1e-9  # |S_j x S_k| below this: parallel axes (no unique common normal)
NEARLY_PARALLEL_DEG = 1.0  # below this, DH's d is ill-conditioned: the joint needs Hayati–Mirmirani
GAUSS_NEWTON_STEPS = 20


# ------------------------------------------------------------------------------- small vector helpers


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", u, v)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# ------------------------------------------------------------------------------- fits


def fit_plane(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares plane through ``points`` (..., N, 3): ``(centroid (..., 3), unit normal (..., 3))``.

    The normal is the eigenvector of the scatter matrix with the smallest eigenvalue (total least
    squares: orthogonal distances); its sign is arbitrary.
    """
    centroid = points.mean(axis=-2)
    centred = points - centroid[..., None, :]
    scatter = np.matmul(np.swapaxes(centred, -1, -2), centred)
    _, vectors = np.linalg.eigh(scatter)
    return centroid, vectors[..., :, 0]


def fit_circle(
    points: np.ndarray, centroid: np.ndarray, normal: np.ndarray, steps: int = GAUSS_NEWTON_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """Circle through ``points`` (..., N, 3) in the plane ``(centroid, normal)``: ``(centre (..., 3),
    radius (...))``.

    The points are projected on the plane; Kåsa's algebraic fit (linear least squares on
    ``x² + y² = 2 x0 x + 2 y0 y + c``) starts Gauss–Newton on the geometric residuals
    ``|p - c| - r``, which runs until every step of the batch is below 1e-12 of the radius.
    """
    helper = np.where(np.abs(normal[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    u = _unit(np.cross(normal, helper))
    v = np.cross(normal, u)
    centred = points - centroid[..., None, :]
    x, y = _dot(centred, u[..., None, :]), _dot(centred, v[..., None, :])
    ones = np.ones_like(x)
    design = np.stack([x, y, ones], axis=-1)
    rhs = x * x + y * y
    gram = np.matmul(np.swapaxes(design, -1, -2), design)
    sol = np.linalg.solve(gram, np.matmul(np.swapaxes(design, -1, -2), rhs[..., None]))[..., 0]
    params = np.stack([sol[..., 0] / 2, sol[..., 1] / 2, np.zeros_like(sol[..., 0])], axis=-1)
    params[..., 2] = np.sqrt(np.maximum(sol[..., 2] + params[..., 0] ** 2 + params[..., 1] ** 2, 0.0))
    count = x.shape[-1]
    for _ in range(steps):
        dx, dy = x - params[..., :1], y - params[..., 1:2]
        rho = np.hypot(dx, dy)
        cx, cy, residual = dx / rho, dy / rho, rho - params[..., 2:3]
        sxx, sxy, syy, sx, sy = (cx * cx).sum(-1), (cx * cy).sum(-1), (cy * cy).sum(-1), cx.sum(-1), cy.sum(-1)
        jtj = np.stack([sxx, sxy, sx, sxy, syy, sy, sx, sy, np.full_like(sx, count)], axis=-1)
        rhs = np.stack([(cx * residual).sum(-1), (cy * residual).sum(-1), residual.sum(-1)], axis=-1)
        step = np.linalg.solve(jtj.reshape(*jtj.shape[:-1], 3, 3), rhs[..., None])[..., 0]
        params += step
        if np.all(np.abs(step) <= 1e-12 * params[..., 2:3]):
            break
    centre = centroid + params[..., :1] * u + params[..., 1:2] * v
    return centre, params[..., 2]


class Axis(NamedTuple):
    """A joint axis as a Plücker line ``(direction S, moment S0 = p × S)``, with its fitted circle."""

    direction: np.ndarray  # (..., 3) unit
    moment: np.ndarray  # (..., 3)
    centre: np.ndarray  # (..., 3) circle centre, a point on the axis
    radius: np.ndarray  # (...)


def fit_axis(points: np.ndarray, towards: np.ndarray | None = None) -> Axis:
    """The axis of the circle of ``points`` (..., N, 3); its direction points along ``towards`` (3,)
    when given (a plane's normal has no sign of its own)."""
    centroid, normal = fit_plane(points)
    if towards is not None:
        normal = np.where(_dot(normal, towards)[..., None] < 0.0, -normal, normal)
    centre, radius = fit_circle(points, centroid, normal)
    return Axis(normal, np.cross(centre, normal), centre, radius)


def plucker(direction: np.ndarray, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plücker coordinates ``(S, S0)`` of the line through ``point`` along ``direction`` (normalised)."""
    s = _unit(np.asarray(direction, dtype=float))
    return s, np.cross(np.asarray(point, dtype=float), s)


def line_point(direction: np.ndarray, moment: np.ndarray, near: np.ndarray | None = None) -> np.ndarray:
    """The point of the line ``(S, S0)`` nearest to ``near`` (default the origin), (..., 3)."""
    base = np.cross(direction, moment)
    if near is None:
        return base
    return base + _dot(near - base, direction)[..., None] * direction


def line_relation(
    s_j: np.ndarray, m_j: np.ndarray, s_k: np.ndarray, m_k: np.ndarray,
    *, tolerance: float = 1e-9, nearly_parallel_deg: float = NEARLY_PARALLEL_DEG,
) -> str:
    """How two lines (Plücker, unit directions, one pair) lie: ``skew``, ``intersecting``,
    ``nearly parallel`` (skew or intersecting within ``nearly_parallel_deg``), ``parallel`` or
    ``coincident``. Distances below ``tolerance`` (m) count as zero; the mutual moment
    ``S_j·S0_k + S_k·S0_j`` is the distance between the lines times the sine of their angle.
    """
    sine = float(np.linalg.norm(np.cross(s_j, s_k)))
    if sine < PARALLEL_SINE:
        gap = np.linalg.norm(np.cross(s_j, line_point(s_k, m_k) - line_point(s_j, m_j)))
        return "coincident" if gap < tolerance else "parallel"
    if np.degrees(np.arcsin(min(sine, 1.0))) < nearly_parallel_deg:
        return "nearly parallel"
    distance = abs(float(np.dot(s_j, m_k) + np.dot(s_k, m_j))) / sine
    return "intersecting" if distance < tolerance else "skew"
