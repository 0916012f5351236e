"""Compiled geometry kernels of the contact model (``contact_model.py``): placement, search, clipping.

The contact solver's geometry works on a few hundred points and planes at a time; written as
numpy expressions it paid numpy's per-call overhead (microseconds) a few dozen times per search,
and the search, the interpenetration test and the bisection toward the last free pose ran many
times per tick. These kernels are the same arithmetic as loops, compiled once by numba
(``@njit(cache=True)``: the machine code is cached next to this file, so a fresh process loads
it instead of compiling; :func:`warm_up` runs each kernel once, which ``ContactModel`` does when
it is built, so no compilation lands inside a tick). Each kernel's ``.py_func`` is the same code
run by the interpreter (tests compare the two).

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

_CONE_TOL = 0.035  # sin 2°: edges crossing nearly parallel faces keep both end contacts
_PARALLEL_SIN = 1e-3


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
def distances(points: np.ndarray, first: int, last: int, planes: np.ndarray) -> np.ndarray:
    """(last − first, n) distances of ``points[first:last]`` to every plane (n, 4)."""
    out = np.empty((last - first, planes.shape[0]))
    for i in range(first, last):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        for f in range(planes.shape[0]):
            out[i - first, f] = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
    return out


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
