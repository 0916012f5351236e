"""Compiled broad phase of the contact model: :func:`motion_clear`, ``contact.clear_motion`` in one call.

``clear_motion`` decides, before each tick's solve, whether the commanded motion certainly meets
no contact (the tool's vertices' box at the previous real pose, and along the way, clear of the
passive's box by the search margin); written with numpy it made a dozen small arrays a call
(two point transforms, their boxes, the poses in the passive frame), ~20 µs, on every tick near a
target. This is the same test as loops compiled by numba (``@njit(cache=True)``; warmed with the
other kernels by ``contact_model._warm_up``). Its products round as written (numpy hands its
(4, 4) and (N, 3) products to BLAS, which may fuse multiply-adds), so a box's corner can differ
from numpy's in the last bit: the answer differs only for a box within rounding of the margin,
where both answers are right (the test is conservative by 1e-9 m, and a "not clear" only asks
for the full solve).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from orbitree.skills.contact_pose_kernels import gap


@numba.njit(cache=True)
def _in_passive(base2passive: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """``base2passive @ pose`` for (4, 4) rigid transforms (the last row [0, 0, 0, 1])."""
    out = np.zeros((4, 4))
    for i in range(3):
        for j in range(4):
            out[i, j] = base2passive[i, 0] * pose[0, j] + base2passive[i, 1] * pose[1, j] \
                + base2passive[i, 2] * pose[2, j]
        out[i, 3] += base2passive[i, 3]
    out[3, 3] = 1.0
    return out


@numba.njit(cache=True)
def _box_clear(pose: np.ndarray, vertices: np.ndarray, bounds: np.ndarray, gap_m: float) -> bool:
    """The box of ``vertices`` (N, 3) placed by ``pose`` (4, 4) is more than ``gap_m`` from ``bounds``."""
    low = np.full(3, math.inf)
    high = np.full(3, -math.inf)
    for k in range(vertices.shape[0]):
        x, y, z = vertices[k, 0], vertices[k, 1], vertices[k, 2]
        for i in range(3):
            value = pose[i, 0] * x + pose[i, 1] * y + pose[i, 2] * z + pose[i, 3]
            low[i] = min(low[i], value)
            high[i] = max(high[i], value)
    for i in range(3):  # noqa: SIM110 (a loop numba compiles, not any() of a generator)
        if low[i] > bounds[1, i] + gap_m or high[i] < bounds[0, i] - gap_m:
            return True
    return False


@numba.njit(cache=True)
def motion_clear(base2passive: np.ndarray, real: np.ndarray, start: np.ndarray, has_start: bool,
                 commanded: np.ndarray, vertices: np.ndarray, bounds: np.ndarray, margin: float,
                 radius: float) -> bool:
    """``contact.clear_motion``'s test: poses (4, 4) in the base frame (``start`` the previous
    commanded pose, read only with ``has_start``), ``vertices`` (N, 3) the active body's (TCP
    frame), ``bounds`` (2, 3) the passive's box, ``radius`` the active's."""
    real_p = _in_passive(base2passive, real)
    if not _box_clear(real_p, vertices, bounds, margin):
        return False
    start_p = _in_passive(base2passive, start) if has_start else real_p
    distance, angle = gap(start_p, _in_passive(base2passive, commanded))
    sweep = distance + angle * radius
    if sweep == 0.0 and not has_start:
        return True
    return _box_clear(start_p, vertices, bounds, margin + sweep + 1e-9)
