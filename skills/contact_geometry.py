"""Polyhedral geometry for the compliant-contact model: convex pieces, unions, the SIROM pair.

A solid is a union of convex polyhedra (:class:`CompositeBody`); each piece is built as the
convex hull of its corner points (:func:`convex_polyhedron`). Building the union marks which
faces are *external* (not covered by another piece), which edges are real *convex creases* of
the union, and which vertices lie on its surface. Contact search (``contact_model.py``) only uses
those features, so the seams between pieces never produce contacts.

SIROM docking pair (model assumptions; a simplified stand-in for the real interfaces of the
SIROM self-coupling paper, [SIROM] in the README's Sources; numbers in mm). What the paper fixes
is the passive face: its marker board (section 3.1, eqs. 1-3) lies flat on the connection
triangle's plane, the frame's origin at the triangle's centre, the triangle 72 mm a side with its
sides 20 mm from the centre; the markers sit just outside those sides, their white borders
reaching 44.7 mm from the centre (:mod:`orbitree.skills.board_model`). So the face must be solid
out to at least 44.7 mm: nothing of the guiding can open inside that circle.

* Passive SIROM, in its board frame (origin at the face centre, z out of the face): a 12-gon
  prism (corners at 15° + k·30°, side normals at k·30°), 54 across its apothem and 25 deep
  (z -25..0), whose face edge has a 45° chamfer 8 wide. The flat face keeps an apothem of 46:
  the board (44.7) fits with 1.3 to spare. One convex piece.
* Active SIROM, in the TCP frame (origin at the centre of the active face, z along the approach,
  pointing into the passive face when docked): a 12-gon of circumradius 60 (Ø120), 30 thick
  behind the face (z -30..0), the size the model had before the board was checked. Three guide
  petals at 0°, 120° and 240° stand 12 proud of the face at its rim; each is a plate 20 wide and
  3 thick whose inner face sits 0.5 outside the passive's side when centred, with a 2 x 45°
  chamfer on its inner tip edge. The petals close around the passive body; they are the only
  part of the active ahead of its face.
* Seated pose (:func:`seated_tcp2passive`): TCP at the passive origin, tcp z = -passive z
  (a rotation of pi about x), active face on the passive face, each petal facing a passive side.
* Capture by the chamfer: a petal moved inward (toward the passive's axis) lands on the chamfer,
  not on the face, while it sits less than 10.5 further in than centred (0.5 clearance, 8
  chamfer, 2 tip chamfer). An offset toward the side opposite a petal moves that petal inward by
  the whole offset; an offset along a petal moves the other two inward by half of it: a lateral
  offset up to 10.5 in any direction (21 along a petal) is guided in. This covers the ±5 mm,
  ±1.5° envelope of the SIROM paper. An offset of 15 away from petal 0 (along -x) puts that
  petal's tip on the flat face: blocked. The 0.5 clearance leaves about ±0.5 lateral play and
  ~±2.9° about z when seated, so the ±1.5° about z of the envelope needs no guiding. Hooks,
  connectors and the real petal shapes are not modelled, and the two bodies are not the
  androgynous pair of the real interface.
* Before issue 18 the passive had a hexagonal pocket (92 across the flats of its mouth) with
  the petals inside it: the board was printed over the hole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

_PLANE_TOL = 1e-9
_PROBE_M = 1e-6

# --------------------------------------------------------------------- SIROM dimensions (m)
PASSIVE_APOTHEM_M = 0.054
PASSIVE_THICKNESS_M = 0.025
CHAMFER_M = 0.008
PASSIVE_FACE_APOTHEM_M = PASSIVE_APOTHEM_M - CHAMFER_M
ACTIVE_OUTLINE_RADIUS_M = 0.060
ACTIVE_THICKNESS_M = 0.030
PETAL_ANGLES_DEG = (0.0, 120.0, 240.0)
PETAL_LENGTH_M = 0.012
PETAL_THICKNESS_M = 0.003
PETAL_WIDTH_M = 0.020
PETAL_TIP_CHAMFER_M = 0.002
PETAL_CLEARANCE_M = 0.0005


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class ConvexPolyhedron:
    """A convex polyhedron in its body frame (metres).

    vertices : (V, 3).
    faces : per face, its vertex indices counter-clockwise seen from outside.
    normals : (F, 3) outward unit normals; offsets : (F,), ``normals[j] @ x == offsets[j]`` on
    face j, ``< `` inside.
    edges : (E, 2) vertex indices; edge_faces : (E, 2) the two faces that share each edge.
    """

    vertices: np.ndarray
    faces: tuple[tuple[int, ...], ...]
    normals: np.ndarray
    offsets: np.ndarray
    edges: np.ndarray
    edge_faces: np.ndarray

    def signed_distances(self, points: np.ndarray) -> np.ndarray:
        """(N, F) plane distances of ``points`` (N, 3): all < 0 means strictly inside."""
        return np.asarray(points, dtype=float) @ self.normals.T - self.offsets


def convex_polyhedron(points: Sequence[Sequence[float]] | np.ndarray) -> ConvexPolyhedron:
    """The convex hull of ``points`` (N, 3), with coplanar hull triangles merged into faces."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or pts.shape[0] < 4:
        raise ValueError(f"points must have shape (N >= 4, 3), got {pts.shape}")
    if not np.isfinite(pts).all():
        raise ValueError("points must be finite")
    hull = ConvexHull(pts)
    keep = np.unique(hull.simplices)
    vertices = pts[keep]
    remap = {int(old): new for new, old in enumerate(keep)}
    planes = _merge_coplanar(hull.equations, hull.simplices, remap)
    faces = tuple(_ccw(vertices, idx, normal) for normal, _, idx in planes)
    normals = np.array([normal for normal, _, _ in planes])
    offsets = np.array([offset for _, offset, _ in planes])
    edges, edge_faces = _edges(faces)
    return ConvexPolyhedron(
        _readonly(vertices), faces, _readonly(normals), _readonly(offsets),
        _readonly(edges), _readonly(edge_faces),
    )


def _merge_coplanar(
    equations: np.ndarray, simplices: np.ndarray, remap: dict[int, int]
) -> list[tuple[np.ndarray, float, set[int]]]:
    planes: list[tuple[np.ndarray, float, set[int]]] = []
    for equation, simplex in zip(equations, simplices, strict=True):
        normal, offset = equation[:3], -equation[3]
        for plane_normal, plane_offset, members in planes:
            if np.abs(plane_normal - normal).max() < 1e-7 and abs(plane_offset - offset) < 1e-9:
                members.update(remap[int(i)] for i in simplex)
                break
        else:
            members = {remap[int(i)] for i in simplex}
            planes.append((normal / np.linalg.norm(normal), offset, members))
    return planes


def _ccw(vertices: np.ndarray, members: set[int], normal: np.ndarray) -> tuple[int, ...]:
    idx = np.array(sorted(members))
    rel = vertices[idx] - vertices[idx].mean(axis=0)
    u = rel[0] / np.linalg.norm(rel[0])
    w = np.cross(normal, u)
    angles = np.arctan2(rel @ w, rel @ u)
    return tuple(int(i) for i in idx[np.argsort(angles)])


def _edges(faces: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, np.ndarray]:
    owners: dict[tuple[int, int], list[int]] = {}
    for f, face in enumerate(faces):
        for a, b in zip(face, face[1:] + face[:1], strict=True):
            owners.setdefault((min(a, b), max(a, b)), []).append(f)
    if any(len(fs) != 2 for fs in owners.values()):
        raise ValueError("hull faces do not close into a polyhedron (degenerate points?)")
    keys = sorted(owners)
    return np.array(keys, dtype=int), np.array([owners[k] for k in keys], dtype=int)


# --------------------------------------------------------------------------- composite bodies


@dataclass(frozen=True, eq=False)
class CompositeBody:
    """A solid as a union of convex pieces, with the feature tables contact search uses.

    All arrays are in the body frame. ``P`` pieces, padded to ``Fmax`` planes each.
    planes : (P, Fmax, 4) ``[normal, offset]``; padding rows are ``[0, 0, 0, 1]`` (distance -1).
    plane_external : (P, Fmax) the face is (at least partly) on the union's surface.
    vertices : (V, 3) piece vertices on the union's surface, duplicates removed.
    edges : (E, 2, 3) end points of every piece edge (for the interpenetration test).
    crease_edges : (C, 2, 3) end points of the union's convex creases (for edge-edge contacts).
    crease_moments : (C, 3) ``start × (end - start)``, the lines' Plücker moments.
    crease_normals : (C, 2, 3) outward normals of the two faces meeting at each crease.
    crease_cones : (C, 2, 3) unit ``g1, g2``: a direction d (perpendicular to the crease) lies in
    the crease's cone of outward normals iff ``d @ g1 >= 0`` and ``d @ g2 >= 0``.
    piece_centres : (P, 3), piece_radii : (P,) bounding spheres of the pieces.
    bounds : (2, 3) axis-aligned box (min, max corners) holding every piece.
    radius : distance from the frame origin to the farthest vertex.
    piece_bounds : (P, 2, 3) axis-aligned box (min, max corners) of each piece.
    """

    pieces: tuple[ConvexPolyhedron, ...]
    planes: np.ndarray
    plane_external: np.ndarray
    vertices: np.ndarray
    edges: np.ndarray
    crease_edges: np.ndarray
    crease_moments: np.ndarray
    crease_normals: np.ndarray
    crease_cones: np.ndarray
    piece_centres: np.ndarray
    piece_radii: np.ndarray
    bounds: np.ndarray
    radius: float
    piece_bounds: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:  # the interpenetration test's broad phase
        boxes = np.array([[p.vertices.min(axis=0), p.vertices.max(axis=0)] for p in self.pieces])
        object.__setattr__(self, "piece_bounds", _readonly(boxes))


def composite_body(pieces: Sequence[ConvexPolyhedron]) -> CompositeBody:
    """Union of convex ``pieces`` (same frame); pieces may share faces but should not overlap."""
    pieces = tuple(pieces)
    if not pieces or not all(isinstance(p, ConvexPolyhedron) for p in pieces):
        raise ValueError("pieces must be a non-empty sequence of ConvexPolyhedron")
    planes, external = _plane_table(pieces)
    surface = _unique_rows(np.vstack([
        piece.vertices[~_inside_others(piece.vertices, pieces, k)]
        for k, piece in enumerate(pieces)
    ]))
    every = np.vstack([piece.vertices for piece in pieces])
    crease_ends, normals = _crease_table(pieces)
    moments = np.cross(crease_ends[:, 0], crease_ends[:, 1] - crease_ends[:, 0])
    axis = np.cross(normals[:, 0], normals[:, 1])
    cones = np.stack([np.cross(axis, normals[:, 0]), np.cross(normals[:, 1], axis)], axis=1)
    cones /= np.linalg.norm(cones, axis=2, keepdims=True)
    centres = np.array([0.5 * (p.vertices.min(axis=0) + p.vertices.max(axis=0)) for p in pieces])
    radii = np.array([np.linalg.norm(p.vertices - c, axis=1).max()
                      for p, c in zip(pieces, centres, strict=True)])
    return CompositeBody(
        pieces, _readonly(planes), _readonly(external), _readonly(surface),
        _readonly(np.vstack([p.vertices[p.edges] for p in pieces])), _readonly(crease_ends),
        _readonly(moments), _readonly(normals), _readonly(cones), _readonly(centres),
        _readonly(radii), _readonly(np.array([every.min(axis=0), every.max(axis=0)])),
        float(np.linalg.norm(every, axis=1).max()),
    )


def _plane_table(pieces: tuple[ConvexPolyhedron, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Padded (P, Fmax, 4) planes and (P, Fmax) flags of faces on the union's surface."""
    fmax = max(len(p.faces) for p in pieces)
    planes = np.tile(np.array([0.0, 0.0, 0.0, 1.0]), (len(pieces), fmax, 1))
    external = np.zeros((len(pieces), fmax), dtype=bool)
    for k, piece in enumerate(pieces):
        count = len(piece.faces)
        planes[k, :count, :3], planes[k, :count, 3] = piece.normals, piece.offsets
        centroids = np.array([piece.vertices[list(f)].mean(axis=0) for f in piece.faces])
        external[k, :count] = ~_inside_others(centroids + _PROBE_M * piece.normals, pieces, k)
    return planes, external


def _crease_table(pieces: tuple[ConvexPolyhedron, ...]) -> tuple[np.ndarray, np.ndarray]:
    """End points (C, 2, 3) and face normals (C, 2, 3) of the union's convex creases."""
    ends, normals = [], []
    for k, piece in enumerate(pieces):
        convex = _convex_creases(piece, piece.vertices[piece.edges], pieces, k)
        ends.append(piece.vertices[piece.edges[convex]])
        normals.append(piece.normals[piece.edge_faces[convex]])
    return np.vstack(ends), np.vstack(normals)


def _inside_others(points: np.ndarray, pieces: tuple[ConvexPolyhedron, ...], k: int) -> np.ndarray:
    """(N,) bool: each point lies strictly inside some piece other than ``pieces[k]``."""
    inside = np.zeros(len(points), dtype=bool)
    for j, other in enumerate(pieces):
        if j != k:
            inside |= other.signed_distances(points).max(axis=1) < -_PLANE_TOL
    return inside


def _convex_creases(
    piece: ConvexPolyhedron, ends: np.ndarray, pieces: tuple[ConvexPolyhedron, ...], k: int
) -> np.ndarray:
    """(E,) bool: the edge is a convex crease of the union (both sides of it face free space)."""
    mid = 0.63 * ends[:, 0] + 0.37 * ends[:, 1]  # off-centre: midpoints often lie on seams
    n1, n2 = piece.normals[piece.edge_faces[:, 0]], piece.normals[piece.edge_faces[:, 1]]
    inward = 0.25 * _PROBE_M * (n1 + n2)
    free1 = ~_inside_others(mid + _PROBE_M * n1 - inward, pieces, k)
    free2 = ~_inside_others(mid + _PROBE_M * n2 - inward, pieces, k)
    sharp = np.linalg.norm(np.cross(n1, n2), axis=1) > 1e-6
    return free1 & free2 & sharp


def _unique_rows(points: np.ndarray) -> np.ndarray:
    _, first = np.unique(np.round(points / 1e-9).astype(np.int64), axis=0, return_index=True)
    return points[np.sort(first)]


# ---------------------------------------------------------------- small vectorised queries


def transform_points(pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``points`` (..., 3) in frame A mapped by ``pose`` = A2B (4, 4) into frame B."""
    return points @ pose[:3, :3].T + pose[:3, 3]


def invert_pose(pose: np.ndarray) -> np.ndarray:
    """B2A (4, 4) of a rigid A2B (4, 4)."""
    inverse = np.empty((4, 4))
    rotation_t = pose[:3, :3].T
    inverse[:3, :3] = rotation_t
    inverse[:3, 3] = -rotation_t @ pose[:3, 3]
    inverse[3] = _LAST_ROW
    return inverse


_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])
_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def row_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (k, 3) arrays, either may be a single (3,) row; (k, 3).

    np.cross costs tens of microseconds on such small arrays; this is two (the components
    gathered by ``take``, whose copies are contiguous, rather than strided column views).
    """
    out = (a.take(_NEXT, axis=-1) * b.take(_AFTER, axis=-1)
           - a.take(_AFTER, axis=-1) * b.take(_NEXT, axis=-1))
    return out if out.ndim == 2 else out.reshape(-1, 3)


def sphere_pairs(
    centres_a: np.ndarray, radii_a: np.ndarray, centres_b: np.ndarray, radii_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays of the overlapping sphere pairs, centres (A, 3), (B, 3), radii (A,), (B,)."""
    d2 = ((centres_a**2).sum(axis=1)[:, None] + (centres_b**2).sum(axis=1)[None, :]
          - 2.0 * centres_a @ centres_b.T)
    return np.nonzero(d2 <= (radii_a[:, None] + radii_b[None, :]) ** 2)


def boxes_overlap(low: np.ndarray, high: np.ndarray, boxes: np.ndarray, gap: float) -> np.ndarray:
    """(N, B) bool: the box ``[low, high]`` (N, 3 each) comes within ``gap`` of each of ``boxes``
    (B, 2, 3: min, max corners) along every axis (a broad phase: False means farther than
    ``gap`` apart)."""
    return ((low[:, None, :] <= boxes[None, :, 1, :] + gap)
            & (high[:, None, :] >= boxes[None, :, 0, :] - gap)).all(axis=2)


def half_lengths(ends: np.ndarray) -> np.ndarray:
    """(E,) half lengths of segments (E, 2, 3)."""
    return 0.5 * np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1)


def clear_of_box(points: np.ndarray, body: CompositeBody, gap: float) -> bool:
    """Broad phase: the box of ``points`` (N, 3) is more than ``gap`` away from ``body.bounds``."""
    low, high = body.bounds
    return bool((points.min(axis=0) > high + gap).any()
                or (points.max(axis=0) < low - gap).any())


def segments_enter(ends: np.ndarray, body: CompositeBody, depth: float) -> bool:
    """Does a segment (E, 2, 3) reach deeper than ``depth`` into a convex piece of ``body``?

    Edge–face crossing by Cyrus–Beck clipping against the planes, moved inward by ``depth``
    (>= 0), of each piece whose box the segment's box meets: the part of a segment inside is
    ``[lo, hi]``, non-empty only when the segment crosses a face plane into the piece (or lies
    inside it).
    """
    ie, ip = np.nonzero(boxes_overlap(ends.min(axis=1), ends.max(axis=1), body.piece_bounds, 0.0))
    planes = body.planes[ip]
    dist = (np.einsum("kei,kfi->kef", ends[ie], planes[..., :3])
            - (planes[..., 3] - depth)[:, None, :])
    d0, d1 = dist[:, 0], dist[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = d0 / (d0 - d1)
    lo = np.where(d1 < d0, crossing, 0.0).max(axis=1, initial=0.0)
    hi = np.where(d1 > d0, crossing, 1.0).min(axis=1, initial=1.0)
    outside = ((d0 > 0.0) & (d1 > 0.0)).any(axis=1)
    return bool(((lo < hi) & ~outside).any())


def interpenetrate(
    active: CompositeBody, active2passive: np.ndarray, passive: CompositeBody, depth: float
) -> bool:
    """Do the bodies overlap by more than ``depth``: an edge of either enters the other?

    Two polyhedra intersect iff an edge of one crosses a face of the other (Suárez, Basañez and
    Colomé, [Suárez] in the README's Sources, section 3). Each convex piece is tested on its own,
    so a depth measured across a seam between two pieces of one body is underestimated; the other
    body's edges entering it usually reveal it.
    """
    if clear_of_box(transform_points(active2passive, active.vertices), passive, 0.0):
        return False
    if segments_enter(transform_points(active2passive, active.edges), passive, depth):
        return True
    passive_in_active = transform_points(invert_pose(active2passive), passive.edges)
    return segments_enter(passive_in_active, active, depth)


# ------------------------------------------------------------------------------ SIROM pair


def _polygon(radius: float, count: int, first_deg: float) -> np.ndarray:
    angles = np.deg2rad(first_deg + np.arange(count) * 360.0 / count)
    return radius * np.column_stack([np.cos(angles), np.sin(angles)])


def _prism(polygon: np.ndarray, z_low: float, z_high: float) -> ConvexPolyhedron:
    low = np.column_stack([polygon, np.full(len(polygon), z_low)])
    high = np.column_stack([polygon, np.full(len(polygon), z_high)])
    return convex_polyhedron(np.vstack([low, high]))


def _petal(angle_deg: float) -> ConvexPolyhedron:
    inner = PASSIVE_APOTHEM_M + PETAL_CLEARANCE_M
    outer = inner + PETAL_THICKNESS_M
    profile = [  # (radial, z) in the tcp frame, tip chamfer on the inner edge (toward the passive)
        (outer, 0.0), (inner, 0.0), (inner, PETAL_LENGTH_M - PETAL_TIP_CHAMFER_M),
        (inner + PETAL_TIP_CHAMFER_M, PETAL_LENGTH_M), (outer, PETAL_LENGTH_M),
    ]
    angle = np.deg2rad(angle_deg)
    radial = np.array([np.cos(angle), np.sin(angle), 0.0])
    tangential = np.array([-np.sin(angle), np.cos(angle), 0.0])
    half = 0.5 * PETAL_WIDTH_M
    return convex_polyhedron([
        r * radial + v * tangential + np.array([0.0, 0.0, z])
        for r, z in profile for v in (-half, half)
    ])


def _chamfered_prism(apothem: float, face_apothem: float, depth: float, chamfer: float) -> ConvexPolyhedron:
    """A 12-gon prism (corners at 15° + k·30°) from z = -depth to its face at z = 0, the face
    edge chamfered at 45° from ``apothem`` (below z = -chamfer) to ``face_apothem`` (at z = 0)."""
    corner = 1.0 / np.cos(np.deg2rad(15.0))  # circumradius / apothem of a 12-gon
    rings = [(apothem, -depth), (apothem, -chamfer), (face_apothem, 0.0)]
    return convex_polyhedron(np.vstack([
        np.column_stack([_polygon(a * corner, 12, 15.0), np.full(12, z)]) for a, z in rings
    ]))


def sirom_passive() -> CompositeBody:
    """The passive SIROM in its board frame (z out of the face): a chamfered 12-gon prism."""
    return composite_body([_chamfered_prism(PASSIVE_APOTHEM_M, PASSIVE_FACE_APOTHEM_M,
                                            PASSIVE_THICKNESS_M, CHAMFER_M)])


def sirom_active() -> CompositeBody:
    """The active SIROM in the TCP frame (z into the passive when docked): body + 3 petals."""
    body = _prism(_polygon(ACTIVE_OUTLINE_RADIUS_M, 12, 15.0), -ACTIVE_THICKNESS_M, 0.0)
    return composite_body([body, *(_petal(angle) for angle in PETAL_ANGLES_DEG)])


def seated_tcp2passive() -> np.ndarray:
    """(4, 4) tcp2passive of the seated active SIROM: faces together, petals around the passive."""
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_euler("x", np.pi).as_matrix()
    return pose
