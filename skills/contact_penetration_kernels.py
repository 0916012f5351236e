"""Compiled interpenetration test of the contact model, and the bisection toward the free pose.

``penetrates``: does an edge of either body enter a convex piece of the other deeper than a depth
(Cyrus–Beck clipping, ``segment_enters``), with the box tests that skip pairs apart
(``clear_of_box``, ``_apart``, their slack ``_SLACK_M``; the contact search in
:mod:`orbitree.skills.contact_kernels` uses them too); ``bisect``: the largest fraction of a
motion found free of interpenetration. Compiled by numba (``@njit(cache=True)``);
:mod:`orbitree.skills.contact_kernels` describes the kernels as a whole and re-exports these.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from orbitree.skills.contact_pose_kernels import interpolate, place, place_inverse


@numba.njit(cache=True)
def clear_of_box(points: np.ndarray, count: int, bounds: np.ndarray, gap: float) -> bool:
    """The box of ``points[:count]`` is more than ``gap`` away from ``bounds`` (2, 3)."""
    for j in range(3):
        low, high = math.inf, -math.inf
        for i in range(count):
            value = points[i, j]
            low = min(low, value)
            high = max(high, value)
        if low > bounds[1, j] + gap or high < bounds[0, j] - gap:
            return True
    return False


@numba.njit(cache=True)
def segment_enters(start: np.ndarray, end: np.ndarray, planes: np.ndarray, first: int, count: int,
                   depth: float) -> bool:
    """Does the segment ``start``–``end`` (3,) reach deeper than ``depth`` into the convex piece of
    planes ``planes[first:first + count]`` (n, 4)? Cyrus–Beck clipping against the planes moved
    inward by ``depth``: the part inside is ``[lo, hi]`` of the segment's parameter; a segment
    whose ends are both outside one plane misses the piece."""
    lo, hi = 0.0, 1.0
    for f in range(first, first + count):
        n0, n1, n2, offset = planes[f, 0], planes[f, 1], planes[f, 2], planes[f, 3]
        d0 = (n0 * start[0] + n1 * start[1] + n2 * start[2] - offset) + depth
        d1 = (n0 * end[0] + n1 * end[1] + n2 * end[2] - offset) + depth
        if d0 > 0.0 and d1 > 0.0:
            return False
        if d1 < d0:
            lo = max(lo, d0 / (d0 - d1))
        elif d1 > d0:
            hi = min(hi, d0 / (d0 - d1))
    return lo < hi


@numba.njit(cache=True)
def _apart(start: np.ndarray, end: np.ndarray, box: np.ndarray, gap: float) -> bool:
    """The box of the segment ``start``–``end`` (3,) is more than ``gap`` away from ``box``
    (2, 3: min, max corners) along some axis."""
    for j in range(3):
        if min(start[j], end[j]) > box[1, j] + gap or max(start[j], end[j]) < box[0, j] - gap:
            return True
    return False


#: Rounding slack (m) of the box tests that skip work: far above the plane distances' rounding
#: (~1e-17 m on these bodies), far below any distance the model resolves.
_SLACK_M = 1e-9


@numba.njit(cache=True)
def _edges_enter(ends: np.ndarray, first: int, last: int, planes: np.ndarray, pieces: int, fmax: int,
                 piece_bounds: np.ndarray, depth: float) -> bool:
    """Does a segment (rows ``2k``, ``2k + 1`` of ``ends[first:last]``) enter a piece of a body
    (planes (P·Fmax, 4), boxes (P, 2, 3)) deeper than ``depth``? A segment's part inside a piece
    lies in the piece's box, so the pairs whose boxes are apart are skipped."""
    for k in range(first, last, 2):
        for p in range(pieces):
            if not _apart(ends[k], ends[k + 1], piece_bounds[p], _SLACK_M) and segment_enters(
                    ends[k], ends[k + 1], planes, p * fmax, fmax, depth):
                return True
    return False


@numba.njit(cache=True)
def penetrates(rotation: np.ndarray, origin: np.ndarray, active_points: np.ndarray, n_active_vertices: int,
               n_active_planar: int, passive_points: np.ndarray, n_passive_vertices: int,
               active_planes: np.ndarray, active_pieces: int, passive_planes: np.ndarray, passive_pieces: int,
               fmax_active: int, fmax_passive: int, passive_bounds: np.ndarray, active_piece_bounds: np.ndarray,
               passive_piece_bounds: np.ndarray, depth: float) -> bool:
    """``contact_geometry.interpenetrate`` of the two bodies at tcp2passive ``(rotation, origin)``:
    an edge of either enters a piece of the other deeper than ``depth``."""
    active = place(active_points[:n_active_planar], rotation, origin)
    if clear_of_box(active, n_active_vertices, passive_bounds, 0.0):
        return False
    if _edges_enter(active, n_active_vertices, n_active_planar, passive_planes, passive_pieces, fmax_passive,
                    passive_piece_bounds, depth):
        return True
    passive = place_inverse(passive_points[n_passive_vertices:], rotation, origin)
    return _edges_enter(passive, 0, passive.shape[0], active_planes, active_pieces, fmax_active,
                        active_piece_bounds, depth)


@numba.njit(cache=True)
def bisect(free: np.ndarray, blocked: np.ndarray, step: np.ndarray, extent: float, tolerance: float,
           active_points: np.ndarray, n_active_vertices: int, n_active_planar: int, passive_points: np.ndarray,
           n_passive_vertices: int, active_planes: np.ndarray, active_pieces: int, passive_planes: np.ndarray,
           passive_pieces: int, fmax_active: int, fmax_passive: int, passive_bounds: np.ndarray,
           active_piece_bounds: np.ndarray, passive_piece_bounds: np.ndarray) -> float:
    """Largest fraction of the way from ``free`` to ``blocked`` (4, 4) found free of
    interpenetration deeper than ``tolerance``, to ``tolerance / 4`` of motion (``extent``: the
    motion's translation plus angle times the active's radius)."""
    lo, hi = 0.0, 1.0
    while (hi - lo) * extent > 0.25 * tolerance:
        mid = 0.5 * (lo + hi)
        pose = interpolate(free, blocked, step, mid)
        if penetrates(pose[:3, :3], pose[:3, 3], active_points, n_active_vertices, n_active_planar,
                      passive_points, n_passive_vertices, active_planes, active_pieces, passive_planes,
                      passive_pieces, fmax_active, fmax_passive, passive_bounds, active_piece_bounds,
                      passive_piece_bounds, tolerance):
            hi = mid
        else:
            lo = mid
    return lo
