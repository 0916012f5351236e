"""Compiled geometry kernels of the contact model (``contact_model.py``): the contact search, and the rest.

The contact solver's geometry works on a few hundred points and planes at a time; written as
numpy expressions it paid numpy's per-call overhead (microseconds) a few dozen times per search,
and the search, the interpenetration test and the bisection toward the last free pose ran many
times per tick. These kernels are the same arithmetic as loops, compiled once by numba
(``@njit(cache=True)``: the machine code is cached next to each kernel's module, so a fresh
process loads it instead of compiling; ``ContactModel`` runs each kernel once when it is built,
``contact_model._warm_up``, so no compilation lands inside a tick). Each kernel's ``.py_func`` is
the same code run by the interpreter (tests compare the two).

Where they are (every public name importable from this module, as the solver uses them): here
the contact search (``search``: the vertex–face, face–vertex and edge–edge contacts, through
``distances``, ``_vertex_face`` and ``_edge_edge``); :mod:`~orbitree.skills.contact_pose_kernels`
the rigid-motion arithmetic (``place``, ``place_inverse``, ``rotation_of``, ``left_jacobian``,
``gap``, ``apply``, ``deformation``, ``interpolate``);
:mod:`~orbitree.skills.contact_penetration_kernels` the interpenetration test and the bisection
(``penetrates``, ``segment_enters``, ``clear_of_box``, ``bisect``);
:mod:`~orbitree.skills.contact_qp_kernels` the QP's rows (``qp_rows``);
:mod:`~orbitree.skills.contact_broad_kernels` the broad phase before a solve (``motion_clear``).

Speed (flagship at 500 Hz, its 5063 solve_contact calls replayed, old and new alternating on one
core): 0.86 -> 0.15 ms a call; per call in contact p50 0.50 -> 0.095 ms, p99 1.40 -> 0.20 ms;
results within 4e-15 m and 8e-11 N of the numpy code; the simulated world's step on ticks in
contact, median 0.84 -> 0.35 ms, p99 2.5 -> 0.74 ms. A fresh process pays ~0.4 s more (numba's
import, the kernels loaded from the cache); the first build after an install compiles for ~10 s.

Conventions: a pose is ``(rotation (3, 3), translation (3,))`` of tcp2passive; planes are
``(n, 4)`` rows ``[normal, offset]``, a point's distance ``n·x − offset``; bodies as in
``contact_geometry.CompositeBody`` (pieces padded to ``Fmax`` planes each).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from orbitree.skills.contact_broad_kernels import motion_clear
from orbitree.skills.contact_penetration_kernels import (
    _SLACK_M,
    _apart,
    bisect,
    clear_of_box,
    penetrates,
    segment_enters,
)
from orbitree.skills.contact_pose_kernels import (
    apply,
    deformation,
    gap,
    interpolate,
    left_jacobian,
    place,
    place_inverse,
    rotation_of,
)
from orbitree.skills.contact_qp_kernels import qp_rows

__all__ = [
    "apply",
    "bisect",
    "clear_of_box",
    "deformation",
    "distances",
    "gap",
    "interpolate",
    "left_jacobian",
    "motion_clear",
    "penetrates",
    "place",
    "place_inverse",
    "qp_rows",
    "rotation_of",
    "search",
    "segment_enters",
]

_CONE_TOL = 0.035  # sin 2°: edges crossing nearly parallel faces keep both end contacts
_PARALLEL_SIN = 1e-3


@numba.njit(cache=True)
def distances(points: np.ndarray, first: int, last: int, planes: np.ndarray) -> np.ndarray:
    """(last − first, n) distances of ``points[first:last]`` to every plane (n, 4)."""
    out = np.empty((last - first, planes.shape[0]))
    for i in range(first, last):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        for f in range(planes.shape[0]):
            out[i - first, f] = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
    return out


@numba.njit(cache=True)
def _vertex_face(dist: np.ndarray, pieces: int, fmax: int, external: np.ndarray, tol: float, margin: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Per (point, piece) of ``dist`` (V, P·Fmax): the face whose plane separates the point most
    (first of equals), kept when external and within ``[-tol, margin]``. Returns the points, the
    pieces, the faces, the distances of those kept (row-major order) and whether a point lies
    deeper than ``tol`` inside a piece."""
    count = dist.shape[0] * pieces
    best = np.empty(count)
    face = np.empty(count, np.int64)
    inside = False
    kept = 0
    for v in range(dist.shape[0]):
        for p in range(pieces):
            top, arg = dist[v, p * fmax], 0
            for f in range(1, fmax):
                value = dist[v, p * fmax + f]
                if value > top:
                    top, arg = value, f
            best[v * pieces + p], face[v * pieces + p] = top, arg
            if top < -tol:
                inside = True
            if external[p, arg] and top >= -tol and top <= margin:
                kept += 1
    points = np.empty(kept, np.int64)
    piece = np.empty(kept, np.int64)
    faces = np.empty(kept, np.int64)
    values = np.empty(kept)
    k = 0
    for i in range(count):
        p, f, top = i % pieces, face[i], best[i]
        if external[p, f] and top >= -tol and top <= margin:
            points[k], piece[k], faces[k], values[k] = i // pieces, p, f, top
            k += 1
    return points, piece, faces, values, inside


@numba.njit(cache=True)
def _edge_edge(ends: np.ndarray, first: int, rotation: np.ndarray, origin: np.ndarray,
               active_moments: np.ndarray, active_cones: np.ndarray, passive_ends: np.ndarray,
               passive_directions: np.ndarray, passive_lengths2: np.ndarray, passive_moments: np.ndarray,
               passive_normal_sums: np.ndarray, passive_cones: np.ndarray, passive_bounds: np.ndarray, tol: float,
               margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Convex active edges (rows ``first + 2k``, ``first + 2k + 1`` of ``ends``, passive frame)
    across convex passive edges: non-parallel lines within ``[-tol, margin]`` (Plücker screen:
    ``(a0 − p0)·(da × dp) = da·m_p + dp·m_a``), closest points inside both edges, the common
    normal inside both normal cones (to ``_CONE_TOL``); an active edge whose box lies further than
    ``margin`` from the passive's box (``passive_bounds``, where the passive edges' closest points
    lie) is skipped. Returns the contact points on the active
    edges (k, 3), normals (k, 3), distances (k,), in (active, passive) row-major order."""
    n_active = active_moments.shape[0]
    n_passive = passive_directions.shape[0]
    found_points, found_normals, found_dist = [], [], []
    da, ma, ga = np.empty(3), np.empty(3), np.empty((2, 3))
    # the screen runs over all passive edges at once per active edge, on contiguous columns
    dpx, dpy, dpz = passive_directions[:, 0].copy(), passive_directions[:, 1].copy(), \
        passive_directions[:, 2].copy()
    mpx, mpy, mpz = passive_moments[:, 0].copy(), passive_moments[:, 1].copy(), passive_moments[:, 2].copy()
    screened = np.empty(n_passive, np.bool_)
    alongs, sines2 = np.empty(n_passive), np.empty(n_passive)
    limit2, parallel2 = margin * margin, _PARALLEL_SIN * _PARALLEL_SIN
    for a in range(n_active):
        a0 = ends[first + 2 * a]
        a1 = ends[first + 2 * a + 1]
        if _apart(a0, a1, passive_bounds, margin + _SLACK_M):
            continue  # a contact's point on this edge would lie within margin of a passive edge
        for j in range(3):
            da[j] = a1[j] - a0[j]
        for j in range(3):  # the line's moment in the passive frame: R m + t × da
            ma[j] = rotation[j, 0] * active_moments[a, 0] + rotation[j, 1] * active_moments[a, 1] \
                + rotation[j, 2] * active_moments[a, 2]
        ma[0] += origin[1] * da[2] - origin[2] * da[1]
        ma[1] += origin[2] * da[0] - origin[0] * da[2]
        ma[2] += origin[0] * da[1] - origin[1] * da[0]
        aa = da[0] * da[0] + da[1] * da[1] + da[2] * da[2]
        d0, d1, d2, m0, m1, m2 = da[0], da[1], da[2], ma[0], ma[1], ma[2]
        any_screened = False
        for p in range(n_passive):  # branch-free: the compiler vectorises it
            moment = (d0 * mpx[p] + d1 * mpy[p] + d2 * mpz[p]) + (m0 * dpx[p] + m1 * dpy[p] + m2 * dpz[p])
            along = d0 * dpx[p] + d1 * dpy[p] + d2 * dpz[p]
            cross2 = aa * passive_lengths2[p]
            sine2 = cross2 - along * along
            alongs[p], sines2[p] = along, sine2
            screened[p] = (sine2 > parallel2 * cross2) & (moment * moment <= limit2 * sine2)
            any_screened |= screened[p]
        if not any_screened:
            continue
        cones_placed = False
        for p in range(n_passive):
            if not screened[p]:
                continue
            dp = passive_directions[p]
            along, sine2, cc = alongs[p], sines2[p], passive_lengths2[p]
            p0 = passive_ends[p, 0]
            w0, w1, w2 = a0[0] - p0[0], a0[1] - p0[1], a0[2] - p0[2]
            dd = da[0] * w0 + da[1] * w1 + da[2] * w2
            ee = dp[0] * w0 + dp[1] * w1 + dp[2] * w2
            s = (along * ee - cc * dd) / sine2
            t = (aa * ee - along * dd) / sine2
            if not (s > 0.0 and s < 1.0 and t > 0.0 and t < 1.0):
                continue
            root = math.sqrt(sine2)
            n0 = (da[1] * dp[2] - da[2] * dp[1]) / root
            n1 = (da[2] * dp[0] - da[0] * dp[2]) / root
            n2 = (da[0] * dp[1] - da[1] * dp[0]) / root
            sums = passive_normal_sums[p]
            side = n0 * sums[0] + n1 * sums[1] + n2 * sums[2]
            if side == 0.0:
                continue
            if side < 0.0:
                n0, n1, n2 = -n0, -n1, -n2
            dist = n0 * w0 + n1 * w1 + n2 * w2
            if dist < -tol:
                continue
            g = passive_cones[p]
            if (n0 * g[0, 0] + n1 * g[0, 1] + n2 * g[0, 2] < -_CONE_TOL
                    or n0 * g[1, 0] + n1 * g[1, 1] + n2 * g[1, 2] < -_CONE_TOL):
                continue
            if not cones_placed:
                for c in range(2):
                    for j in range(3):
                        ga[c, j] = (rotation[j, 0] * active_cones[a, c, 0] + rotation[j, 1] * active_cones[a, c, 1]
                                    + rotation[j, 2] * active_cones[a, c, 2])
                cones_placed = True
            if (-n0 * ga[0, 0] - n1 * ga[0, 1] - n2 * ga[0, 2] < -_CONE_TOL
                    or -n0 * ga[1, 0] - n1 * ga[1, 1] - n2 * ga[1, 2] < -_CONE_TOL):
                continue
            found_points.append((a0[0] + s * da[0], a0[1] + s * da[1], a0[2] + s * da[2]))
            found_normals.append((n0, n1, n2))
            found_dist.append(dist)
    k = len(found_dist)
    points, normals, values = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    for i in range(k):
        for j in range(3):
            points[i, j] = found_points[i][j]
            normals[i, j] = found_normals[i][j]
        values[i] = found_dist[i]
    return points, normals, values


@numba.njit(cache=True)
def search(rotation: np.ndarray, origin: np.ndarray, active_points: np.ndarray, n_active_vertices: int,
           n_active_planar: int, passive_points: np.ndarray, n_passive_vertices: int,
           active_planes: np.ndarray, active_pieces: int, fmax_active: int, active_external: np.ndarray,
           passive_planes: np.ndarray, passive_pieces: int, fmax_passive: int, passive_external: np.ndarray,
           passive_bounds: np.ndarray, active_moments: np.ndarray, active_cones: np.ndarray,
           passive_ends: np.ndarray, passive_directions: np.ndarray, passive_lengths2: np.ndarray,
           passive_moments: np.ndarray, passive_normal_sums: np.ndarray, passive_cones: np.ndarray,
           tol: float, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """The determined contacts at tcp2passive ``(rotation, origin)`` (see ``contact.py``): kinds
    (m,) int8 (0 vertex–face, 1 face–vertex, 2 edge–edge), points (m, 3), normals (m, 3) from
    the passive toward the active, distances (m,), all in the passive frame; and whether a vertex
    of either body lies deeper than ``tol`` inside a piece of the other."""
    active = place(active_points, rotation, origin)
    if clear_of_box(active, n_active_vertices, passive_bounds, margin):
        return np.empty(0, np.int8), np.empty((0, 3)), np.empty((0, 3)), np.empty(0), False
    v, v_piece, v_face, v_dist, active_inside = _vertex_face(
        distances(active, 0, n_active_vertices, passive_planes), passive_pieces, fmax_passive,
        passive_external, tol, margin)
    passive = place_inverse(passive_points[:n_passive_vertices], rotation, origin)
    q, q_piece, q_face, q_dist, passive_inside = _vertex_face(
        distances(passive, 0, n_passive_vertices, active_planes), active_pieces, fmax_active,
        active_external, tol, margin)
    e_points, e_normals, e_dist = _edge_edge(
        active, n_active_planar, rotation, origin, active_moments, active_cones, passive_ends,
        passive_directions, passive_lengths2, passive_moments, passive_normal_sums, passive_cones, passive_bounds,
        tol, margin)
    nv, nq, ne = len(v), len(q), len(e_dist)
    m = nv + nq + ne
    kinds, points, normals, values = np.empty(m, np.int8), np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
    for i in range(nv):
        plane = passive_planes[v_piece[i] * fmax_passive + v_face[i]]
        kinds[i], values[i] = 0, v_dist[i]
        for j in range(3):
            points[i, j], normals[i, j] = active[v[i], j], plane[j]
    for i in range(nq):
        plane = active_planes[q_piece[i] * fmax_active + q_face[i]]
        k = nv + i
        kinds[k], values[k] = 1, q_dist[i]
        for j in range(3):  # the active face's outward normal in the passive frame, reversed
            points[k, j] = passive_points[q[i], j]
            normals[k, j] = -(plane[0] * rotation[j, 0] + plane[1] * rotation[j, 1] + plane[2] * rotation[j, 2])
    for i in range(ne):
        k = nv + nq + i
        kinds[k], values[k] = 2, e_dist[i]
        for j in range(3):
            points[k, j], normals[k, j] = e_points[i, j], e_normals[i, j]
    return kinds, points, normals, values, active_inside or passive_inside
