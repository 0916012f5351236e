"""Compliant-motion contact model of Suárez, Basañez and Colomé: the real tool pose and the wrist wrench.

The model of Suárez, Basañez & Colomé ("Modelado y simulación de movimientos con acomodación en
robótica"; [Suárez] in the README's Sources) puts a passive compliance (a spring, stiffness
``K`` diagonal in the compliance frame) between the robot and the tool: the robot reaches the
*commanded* TCP pose exactly; the tool takes the *real* pose that minimises the elastic energy
without interpenetrating the passive interface. A UR10e has no such wrist spring; what yields
when its tool presses on the passive SIROM is the structure: the arm's joints and links, the
wrist sensor and the two interfaces in contact, in series. ``K`` is that structural stiffness
(:func:`structural_stiffness`; the paper itself counts a wrist force sensor among the elastic
elements it models, section 1.2), so the deformations are fractions of a millimetre and the
forces what the arm's stiffness makes of them.

Two additions to the paper's model (which leaves out friction, section 1):

* **Coulomb friction** (``friction`` μ): each contact's row is replaced by ``friction_sides``
  rows with the normal tilted by μ toward each side of a pyramid around it,
  ``(n + μ t_k)·δp >= -dist`` (the linearised friction cone, Anitescu's convex relaxation): a
  contact's force then stays inside the cone, and a contact point slides only while the force
  is on the cone's edge (lifting off by μ times the slide, a boundary layer of micrometres per
  step). With it a tool can stick, wedge and jam.
* **Hooks** (:class:`HookPull`): closed docking hooks are a one-sided spring pulling the tool's
  origin toward the passive face along its normal, solved inside the QP with a slack variable
  (``½ k_h s²`` with ``s >= gap − depth``, ``s >= 0``), so that a stiff hook on a soft arm, or the
  reverse, settles at once; the tension is ``k_h s``.

Conventions (pure functions, numpy in and out, SI units):

* Compliance frame ``C`` = the commanded TCP frame. The deformation ``e = [t, θu]`` (6,) is the
  real TCP pose in ``C``: ``real_tcp2cmd = [Rotation.from_rotvec(θu), t]``
  (:func:`deformation`, :func:`apply_deformation`).
* Wrench ``f = K e`` (6,): force (N) and torque about the TCP (N·m) in ``C``. It is the external
  wrench the passive interface applies to the tool, i.e. what a zeroed wrist F/T sensor reports
  (UR ``getActualTCPForce`` sign): pressing the tool along +z_tcp into the passive face by ``d``
  gives ``f_z = -k_z d``.
* Contacts (:func:`find_contacts`) are searched at the real pose within ``margin_m`` and kept
  only when of dimension 0 and *determined*: an active vertex on a passive face, a passive
  vertex on an active face, or two non-parallel convex edges whose common normal lies in both
  edges' normal cones (to 2°, so an edge crossing a nearly parallel face keeps a contact at
  each of the face's sides). For a vertex near a convex piece the face used is the one whose
  plane separates it most: this is the determined contact associated with a vertex–edge or
  vertex–vertex contact, chosen from the current configuration as the paper prescribes (section 4.1).
  Parallel edges (dimension-1 contacts) are left to the contacts at their ends.
* Each contact's signed distance is linearised about the previous real pose into one row of
  ``A e >= b`` (:func:`linearise_contacts`); :func:`solve_deformation` solves
  ``min ½ eᵀ K e  s.t.  A e >= b`` with daqp (quadprog as a cross-check).
* :func:`solve_contact` splits large commanded steps, re-linearises until the real pose stops
  moving (under 1 µm), and when a candidate pose interpenetrates (an edge entering a convex
  piece of the other body deeper than ``tolerance_m``: :func:`interpenetrates`) bisects back
  toward the last free pose and re-linearises there, as the paper does (section 3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import daqp
import numpy as np
import quadprog

from orbitree.skills.contact_geometry import (
    CompositeBody,
    _readonly,
    clear_of_box,
    invert_pose,
    row_cross,
    sirom_active,
    sirom_passive,
    transform_points,
)
from orbitree.skills.se3 import check_pose, check_vector, rotation_of, rotvec_of

#: A soft passive wrist compliance (N/m x3, N·m/rad x3): 20 N/mm and ~5 N·m/deg, RCC-like. What
#: the paper's model assumes; the simulated UR10e uses :func:`structural_stiffness` instead.
DEFAULT_STIFFNESS: tuple[float, ...] = (2.0e4, 2.0e4, 2.0e4, 300.0, 300.0, 300.0)
#: Lever (m) through which the structure's translational stiffness also resists tilting the tool:
#: the active SIROM's 200 mm from the flange to its face.
STRUCTURAL_LEVER_M = 0.2
#: Effective stiffness from the commanded TCP to the passive face, N/m (README "Docking physics").
STRUCTURAL_STIFFNESS_N_PER_M = 1.0e5


def structural_stiffness(translational: float = STRUCTURAL_STIFFNESS_N_PER_M,
                         lever_m: float = STRUCTURAL_LEVER_M) -> tuple[float, ...]:
    """``K`` (6,) of the arm-to-interface chain: ``translational`` N/m on x, y, z and
    ``translational · lever²`` N·m/rad about them (1e5 N/m: 4000 N·m/rad, 70 N·m/deg)."""
    k = float(translational)
    if not (math.isfinite(k) and k > 0.0):
        raise ValueError(f"translational stiffness must be > 0, got {translational}")
    return (k, k, k, k * lever_m**2, k * lever_m**2, k * lever_m**2)
_CONE_TOL = 0.035  # sin 2°: edges crossing nearly parallel faces keep both end contacts
_PARALLEL_SIN = 1e-3
_SETTLED_M = 1e-6
_SETTLED_RAD = 1e-5
_DAQP_TOL = 1e-10


class ContactKind(IntEnum):
    VERTEX_FACE = 0  # an active vertex on a passive face
    FACE_VERTEX = 1  # a passive vertex on an active face
    EDGE_EDGE = 2  # a convex active edge across a convex passive edge


class ContactQPError(RuntimeError):
    """The contact QP has no solution (contradictory linearised contacts)."""


class _Tables:
    """Constants of the contact search, built once per model (the hot path works on them).

    active_points : (Va + 2Ea + 2Ca, 3) the active's vertices, edge ends and crease ends (TCP
    frame), placed by one product per pose. passive_points : (Vp + 2Ep, 3) the passive's
    vertices and edge ends. ``*_normals_t`` (3, P·Fmax) and ``*_offsets`` (P·Fmax,): every plane.
    passive_directions (Cp, 3), their transpose, squared lengths, and the transposed moments of
    the passive's creases. cos_sides, sin_sides : (S,) the friction pyramid's side angles.
    """

    def __init__(self, active: CompositeBody, passive: CompositeBody, sides: int) -> None:
        self.n_active_vertices = len(active.vertices)
        self.n_active_planar = self.n_active_vertices + 2 * len(active.edges)  # vertices + edge ends
        self.active_points = np.ascontiguousarray(np.vstack([
            active.vertices, active.edges.reshape(-1, 3), active.crease_edges.reshape(-1, 3)]))
        self.n_passive_vertices = len(passive.vertices)
        self.passive_points = np.ascontiguousarray(np.vstack([passive.vertices, passive.edges.reshape(-1, 3)]))
        self.active_shape = active.planes.shape[:2]
        self.passive_shape = passive.planes.shape[:2]
        flat = active.planes.reshape(-1, 4)
        self.active_normals_t, self.active_offsets = np.ascontiguousarray(flat[:, :3].T), flat[:, 3].copy()
        flat = passive.planes.reshape(-1, 4)
        self.passive_normals_t, self.passive_offsets = np.ascontiguousarray(flat[:, :3].T), flat[:, 3].copy()
        self.active_pieces = np.arange(self.active_shape[0])[None, :]
        self.passive_pieces = np.arange(self.passive_shape[0])[None, :]
        directions = passive.crease_edges[:, 1] - passive.crease_edges[:, 0]
        self.passive_directions = directions
        self.passive_directions_t = np.ascontiguousarray(directions.T)
        self.passive_lengths2 = (directions * directions).sum(axis=1)
        self.passive_moments_t = np.ascontiguousarray(passive.crease_moments.T)
        self.active_moments_t = np.ascontiguousarray(active.crease_moments.T)
        self.active_cones_t = np.ascontiguousarray(active.crease_cones.transpose(2, 0, 1).reshape(3, -1))
        angles = 2.0 * np.pi * np.arange(sides) / sides
        self.cos_sides, self.sin_sides = np.cos(angles)[None, :, None], np.sin(angles)[None, :, None]


@dataclass(frozen=True, eq=False)
class ContactModel:
    """Immutable configuration of one active/passive pair and its wrist compliance.

    active : body in the TCP frame; passive : body in its own (board) frame.
    stiffness : (6,) diagonal of K in the compliance frame, N/m and N·m/rad, all > 0.
    tolerance_m : interpenetration allowed after a solve. margin_m : contact search distance.
    max_step_m, max_step_rad : commanded steps larger than these are split.
    max_iterations : QP solves allowed per step. solver : ``"daqp"`` or ``"quadprog"``.
    friction : Coulomb coefficient μ >= 0 (0: frictionless, the paper's model).
    friction_sides : sides of the pyramid standing for the friction cone (>= 3).
    """

    active: CompositeBody
    passive: CompositeBody
    stiffness: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_STIFFNESS))
    tolerance_m: float = 5e-5
    margin_m: float = 1e-3
    max_step_m: float = 5e-4
    max_step_rad: float = math.radians(0.5)
    max_iterations: int = 20
    solver: str = "daqp"
    friction: float = 0.0
    friction_sides: int = 4
    tables: _Tables = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("active", "passive"):
            if not isinstance(getattr(self, name), CompositeBody):
                raise ValueError(f"{name} must be a CompositeBody, got {type(getattr(self, name))}")
        stiffness = check_vector(self.stiffness, 6, "stiffness").copy()
        if (stiffness <= 0.0).any():
            raise ValueError(f"stiffness must be > 0 on every axis, got {stiffness}")
        stiffness.setflags(write=False)
        object.__setattr__(self, "stiffness", stiffness)
        for name in ("tolerance_m", "max_step_m", "max_step_rad"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not self.margin_m > self.tolerance_m:
            raise ValueError(f"margin_m must exceed tolerance_m, got {self.margin_m}")
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if self.solver not in ("daqp", "quadprog"):
            raise ValueError(f"solver must be 'daqp' or 'quadprog', got {self.solver!r}")
        if not (math.isfinite(self.friction) and self.friction >= 0.0) or self.friction_sides < 3:
            raise ValueError(f"need friction >= 0 and friction_sides >= 3, got {self.friction}, "
                             f"{self.friction_sides}")
        object.__setattr__(self, "tables", _Tables(self.active, self.passive, self.friction_sides))


def sirom_contact_model(
    stiffness: Sequence[float] | np.ndarray = DEFAULT_STIFFNESS, **options: float | int | str
) -> ContactModel:
    """The SIROM pair of ``contact_geometry`` with the given stiffness and options.

    Unless ``tolerance_m`` is given, the interpenetration allowed is what 2 N would push in
    along the stiffest translational axis (at most 50 µm): with a stiff structure, 50 µm of
    slack would be 50 N of force error at 1000 N/mm.
    """
    k = np.asarray(stiffness, float)
    if "tolerance_m" not in options and k.shape == (6,) and (k[:3] > 0.0).all():
        options = {"tolerance_m": float(min(5e-5, 2.0 / k[:3].max())), **options}
    return ContactModel(sirom_active(), sirom_passive(), k, **options)


@dataclass(frozen=True)
class HookPull:
    """Closed hooks holding the passive interface: a one-sided spring on the tool's origin.

    ``depth`` (m): where the hook tips hold the passive's catches, as the tool origin's height
    above the passive face (0: seated face to face; negative: the hooks pull past seated, their
    preload); ``stiffness`` (N/m) of the hook linkage. The tension is ``stiffness · max(0,
    gap − depth)``, ``gap`` the real TCP's height along the passive's z.
    """

    depth: float
    stiffness: float


@dataclass(frozen=True, eq=False)
class ContactSet:
    """Determined contacts at one real pose, in the passive frame (m contacts).

    kinds : (m,) :class:`ContactKind` values. points_passive : (m, 3) contact points.
    normals_passive : (m, 3) unit normals from the passive toward the active body.
    distances : (m,) signed separations (m), negative when interpenetrating.
    """

    kinds: np.ndarray
    points_passive: np.ndarray
    normals_passive: np.ndarray
    distances: np.ndarray

    def __len__(self) -> int:
        return len(self.distances)


@dataclass(frozen=True, eq=False)
class QPSolution:
    """deformation : (6,) e; multipliers : (m,) >= 0, one per row of ``A e >= b``;
    hook_stretch : the hook spring's stretch s (m), 0 without hooks."""

    deformation: np.ndarray
    multipliers: np.ndarray
    hook_stretch: float = 0.0


@dataclass(frozen=True, eq=False)
class ContactResult:
    """One solve: real_tcp2base (4, 4); wrench_tcp (6,) ``K e`` in the commanded TCP frame;
    contacts at the real pose (passive frame); n_active how many touch (within tolerance);
    iterations the QP solves used; converged False when a step ran out of iterations or
    stalled (the pose returned is then the last free one); hook_tension (N) the hooks' pull."""

    real_tcp2base: np.ndarray
    wrench_tcp: np.ndarray
    contacts: ContactSet
    n_active: int
    iterations: int
    converged: bool
    hook_tension: float = 0.0


# ------------------------------------------------------------------------------ pose helpers


def deformation(commanded_tcp2x: np.ndarray, real_tcp2x: np.ndarray) -> np.ndarray:
    """e (6,) ``[t, θu]`` of the real TCP in the commanded TCP frame; both poses (4, 4) in x."""
    return _deformation(check_pose(commanded_tcp2x, "commanded_tcp2x"),
                        check_pose(real_tcp2x, "real_tcp2x"))


def apply_deformation(commanded_tcp2x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """real_tcp2x (4, 4) of deformation ``e`` (6,) from ``commanded_tcp2x`` (4, 4)."""
    return _apply(check_pose(commanded_tcp2x, "commanded_tcp2x"), check_vector(e, 6, "e"))


def _deformation(commanded: np.ndarray, real: np.ndarray) -> np.ndarray:
    real2cmd = invert_pose(commanded) @ real
    e = np.empty(6)
    e[:3], e[3:] = real2cmd[:3, 3], rotvec_of(real2cmd[:3, :3])
    return e


def _apply(commanded: np.ndarray, e: np.ndarray) -> np.ndarray:
    real2cmd = np.eye(4)
    real2cmd[:3, :3] = rotation_of(e[3:])
    real2cmd[:3, 3] = e[:3]
    return commanded @ real2cmd


def _interpolate(start: np.ndarray, end: np.ndarray, s: float) -> np.ndarray:
    """Pose a fraction ``s`` of the way: translation linear, rotation along the geodesic."""
    if s == 1.0:
        return end
    pose = np.eye(4)
    step = rotvec_of(start[:3, :3].T @ end[:3, :3])
    pose[:3, :3] = start[:3, :3] @ rotation_of(s * step)
    pose[:3, 3] = (1.0 - s) * start[:3, 3] + s * end[:3, 3]
    return pose


def _gap(start: np.ndarray, end: np.ndarray) -> tuple[float, float]:
    """(translation m, rotation angle rad) between two poses."""
    rel = start[:3, :3].T @ end[:3, :3]
    sine = 0.5 * math.hypot(rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1])
    angle = math.atan2(sine, 0.5 * (rel[0, 0] + rel[1, 1] + rel[2, 2] - 1.0))
    return float(np.linalg.norm(end[:3, 3] - start[:3, 3])), angle


def _left_jacobian(rotvec: np.ndarray) -> np.ndarray:
    """J_l (3, 3) with ``Exp(ω + δ) ≈ Exp(J_l(ω) δ) Exp(ω)``: ``I + c₁ [ω]× + c₂ [ω]×²``, written
    out on floats (``[ω]×² = ω ωᵀ − θ² I``)."""
    x, y, z = rotvec.tolist()
    theta2 = x * x + y * y + z * z
    theta = math.sqrt(theta2)
    if theta < 1e-8:
        c1, c2 = 0.5, 0.0
    else:
        c1, c2 = (1.0 - math.cos(theta)) / theta2, (theta - math.sin(theta)) / (theta2 * theta)
    xy, xz, yz = c2 * x * y, c2 * x * z, c2 * y * z
    return np.array([[1.0 - c2 * (y * y + z * z), xy - c1 * z, xz + c1 * y],
                     [xy + c1 * z, 1.0 - c2 * (x * x + z * z), yz - c1 * x],
                     [xz - c1 * y, yz + c1 * x, 1.0 - c2 * (x * x + y * y)]])


# --------------------------------------------------------------------------- contact search


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ki,ki->k", a, b)


_NO_CONTACTS = ContactSet(*(_readonly(x) for x in (np.zeros(0, np.int8), np.zeros((0, 3)), np.zeros((0, 3)),
                                                   np.zeros(0))))


class _Placed:
    """The two bodies at one ``tcp2passive`` pose, each number computed once and only when asked:
    the active's points in the passive frame (one product for all of them), the passive's in the
    TCP frame, and their distances to the other body's planes. A pose tested for
    interpenetration and then searched for contacts (the solver's next linearisation point)
    shares them."""

    __slots__ = ("_active_dist", "_passive", "_passive_dist", "active", "model", "pose")

    def __init__(self, model: ContactModel, pose: np.ndarray) -> None:
        self.model, self.pose = model, pose
        self.active = model.tables.active_points @ pose[:3, :3].T + pose[:3, 3]
        self._active_dist: np.ndarray | None = None
        self._passive: np.ndarray | None = None
        self._passive_dist: np.ndarray | None = None

    @property
    def vertices(self) -> np.ndarray:
        """(Va, 3) the active's vertices, passive frame."""
        return self.active[:self.model.tables.n_active_vertices]

    def active_distances(self) -> np.ndarray:
        """(Va + 2Ea, Pp·Fmax) the active's vertices and edge ends to every passive plane."""
        if self._active_dist is None:
            tables = self.model.tables
            self._active_dist = (self.active[:tables.n_active_planar] @ tables.passive_normals_t
                                 - tables.passive_offsets)
        return self._active_dist

    def passive_distances(self) -> np.ndarray:
        """(Vp + 2Ep, Pa·Fmax) the passive's vertices and edge ends to every active plane."""
        if self._passive_dist is None:
            tables, rotation = self.model.tables, self.pose[:3, :3]
            self._passive = tables.passive_points @ rotation - rotation.T @ self.pose[:3, 3]
            self._passive_dist = self._passive @ tables.active_normals_t - tables.active_offsets
        return self._passive_dist


def _vertex_face(
    dist: np.ndarray, body: CompositeBody, pieces: np.ndarray, tol: float, margin: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Points near the convex pieces of ``body``, from their plane distances ``dist`` (V, P, Fmax).

    Per (point, piece) the face whose plane separates the point most is the contact face; it
    counts when external and its distance lies in ``[-tol, margin]``. Returns point indices,
    outward face normals (k, 3) and distances (k,), and whether a point lies deeper than ``tol``
    inside a piece. ``pieces`` : (1, P) the piece indices.
    """
    face, best = dist.argmax(axis=2), dist.max(axis=2)
    external = body.plane_external[pieces, face]
    vertex, piece = np.nonzero(external & (best >= -tol) & (best <= margin))
    normals = body.planes[piece, face[vertex, piece], :3]
    return vertex, normals, best[vertex, piece], bool(best.min() < -tol)


def _in_cones(direction: np.ndarray, cones: np.ndarray) -> np.ndarray:
    """(k,) bool: direction (k, 3) inside each crease's normal cone, given as (k, 2, 3)."""
    return ((direction[:, None, :] * cones).sum(axis=2) >= -_CONE_TOL).all(axis=1)


def _edge_edge(
    active_ends: np.ndarray, active_moments: np.ndarray, active_cones: np.ndarray,
    passive: CompositeBody, tables: _Tables, tol: float, margin: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Convex active edges (Ca, 2, 3) across convex passive edges, all in the passive frame.

    The lines must be non-parallel and within ``[-tol, margin]`` (screened for all pairs at
    once with Plücker coordinates: ``(a0 - p0)·(da × dp) = da·m_p + dp·m_a``), their closest
    points inside both edges and the common normal inside both normal cones
    (``active_cones`` (Ca, 2, 3), see ``CompositeBody.crease_cones``). Returns contact points
    on the active edges (k, 3), normals (k, 3) and distances (k,).
    """
    da = active_ends[:, 1] - active_ends[:, 0]
    moment = da @ tables.passive_moments_t + active_moments @ tables.passive_directions_t
    along = da @ tables.passive_directions_t
    cross2 = np.multiply.outer((da * da).sum(axis=1), tables.passive_lengths2)
    sine2 = cross2 - along**2
    ia, ip = np.nonzero((sine2 > _PARALLEL_SIN**2 * cross2) & (moment**2 <= margin**2 * sine2))
    if len(ia) == 0:
        return _NO_CONTACTS.points_passive, _NO_CONTACTS.normals_passive, _NO_CONTACTS.distances
    a0, da, sine2 = active_ends[ia, 0], da[ia], sine2[ia, ip]
    p0, dp = passive.crease_edges[ip, 0], tables.passive_directions[ip]
    w = a0 - p0
    aa, bb, cc, dd, ee = (da * da).sum(axis=1), along[ia, ip], tables.passive_lengths2[ip], \
        (da * w).sum(axis=1), (dp * w).sum(axis=1)
    s = (bb * ee - cc * dd) / sine2
    t = (aa * ee - bb * dd) / sine2
    # the closest points inside both edges first: most screened pairs fail it, and the rest of
    # the test is per pair, so it runs on the few left
    inside = np.flatnonzero((s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0))
    if len(inside) == 0:
        return _NO_CONTACTS.points_passive, _NO_CONTACTS.normals_passive, _NO_CONTACTS.distances
    ia, ip, a0, da, dp, w, s, sine2 = (v[inside] for v in (ia, ip, a0, da, dp, w, s, sine2))
    cross = row_cross(da, dp)
    normal = cross / np.sqrt(sine2)[:, None]
    outward = np.sign((normal * passive.crease_normals[ip].sum(axis=1)).sum(axis=1))
    normal *= outward[:, None]
    dist = (normal * w).sum(axis=1)
    keep = ((outward != 0.0) & (dist >= -tol)
            & _in_cones(normal, passive.crease_cones[ip]) & _in_cones(-normal, active_cones[ia]))
    return (a0 + s[:, None] * da)[keep], normal[keep], dist[keep]


def find_contacts(model: ContactModel, tcp2passive: np.ndarray) -> ContactSet:
    """Determined contacts (passive frame) of the active body at ``tcp2passive`` (4, 4)."""
    return _find_contacts(model, check_pose(tcp2passive, "tcp2passive"))


def _find_contacts(model: ContactModel, pose: np.ndarray) -> ContactSet:
    return _search(model, pose)[0]


def _search(model: ContactModel, pose: np.ndarray | _Placed) -> tuple[ContactSet, bool]:
    """The contacts at ``pose`` (tcp2passive, or the bodies placed there), and whether a vertex
    of either body lies deeper than the tolerance inside a piece of the other (from the same
    plane distances)."""
    placed = pose if isinstance(pose, _Placed) else _Placed(model, pose)
    pose, tables = placed.pose, model.tables
    tol, margin = model.tolerance_m, model.margin_m
    active_points = placed.vertices
    if clear_of_box(active_points, model.passive, margin):  # nor is a vertex inside the other body
        return _NO_CONTACTS, False
    nva, nvp = tables.n_active_vertices, tables.n_passive_vertices
    v, vf_normals, vf_dist, active_inside = _vertex_face(
        placed.active_distances()[:nva].reshape(nva, *tables.passive_shape), model.passive,
        tables.passive_pieces, tol, margin)
    q, fv_normals, fv_dist, passive_inside = _vertex_face(
        placed.passive_distances()[:nvp].reshape(nvp, *tables.active_shape), model.active,
        tables.active_pieces, tol, margin)
    rotation, origin = pose[:3, :3], pose[:3, 3]
    active_ends = placed.active[tables.n_active_planar:].reshape(-1, 2, 3)
    directions = (active_ends[:, 1] - active_ends[:, 0])
    moments = (rotation @ tables.active_moments_t).T + row_cross(origin, directions)
    cones = (rotation @ tables.active_cones_t).T.reshape(-1, 2, 3)
    ee_points, ee_normals, ee_dist = _edge_edge(active_ends, moments, cones, model.passive, tables, tol, margin)
    if len(v) + len(q) + len(ee_dist) == 0:
        return _NO_CONTACTS, active_inside or passive_inside
    kinds = np.repeat(_KINDS, [len(v), len(q), len(ee_dist)])
    return ContactSet(
        kinds,
        np.vstack([active_points[v], model.passive.vertices[q], ee_points]),
        np.vstack([vf_normals, -fv_normals @ rotation.T, ee_normals]),
        np.concatenate([vf_dist, fv_dist, ee_dist]),
    ), active_inside or passive_inside


_KINDS = np.array([ContactKind.VERTEX_FACE, ContactKind.FACE_VERTEX, ContactKind.EDGE_EDGE], np.int8)


def linearise_contacts(
    contacts: ContactSet, commanded_tcp2passive: np.ndarray, real_tcp2passive: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``A`` (m, 6) and ``b`` (m,) of ``A e >= b``, the contacts linearised about the real pose.

    Row i: ``dist_i + n_i·δt + (r_i × n_i)·J_l(θu₀) δθu >= 0`` in the compliance frame, with
    ``r_i`` the lever from the real TCP to the contact point and ``e₀`` the real pose's
    deformation, so that ``A e₀ - b`` equals the contact distances. ``contacts`` are those of
    :func:`find_contacts` at ``real_tcp2passive``.
    """
    if not isinstance(contacts, ContactSet):
        raise ValueError(f"contacts must be a ContactSet, got {type(contacts)}")
    return _linearise(contacts, check_pose(commanded_tcp2passive, "commanded_tcp2passive"),
                      check_pose(real_tcp2passive, "real_tcp2passive"))


def _linearise(
    contacts: ContactSet, commanded: np.ndarray, real: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    to_cmd = commanded[:3, :3]  # row vectors times cmd2passive's rotation: passive -> cmd frame
    e0 = _deformation(commanded, real)
    normals = contacts.normals_passive @ to_cmd
    levers = (contacts.points_passive - real[:3, 3]) @ to_cmd
    a = np.hstack([normals, row_cross(levers, normals) @ _left_jacobian(e0[3:])])
    return a, a @ e0 - contacts.distances


def solve_deformation(
    stiffness: np.ndarray, a: np.ndarray, b: np.ndarray, solver: str = "daqp",
    load: np.ndarray | None = None, hook: tuple[np.ndarray, float, float] | None = None,
) -> QPSolution:
    """``argmin ½ eᵀ diag(stiffness) e - loadᵀ e  s.t.  a e >= b`` with ``a`` (m, 6), ``b`` (m,).

    ``load`` (6,) is an external wrench applied to the tool in the compliance frame; without
    contacts it deflects the tool by ``K⁻¹ load``. ``hook`` ``(h (6,), c, k_h)`` adds a one-sided
    spring: ``+ ½ k_h s²`` with ``s >= h·e + c`` and ``s >= 0`` (the solution's ``hook_stretch``
    is ``s``). Raises :class:`ContactQPError` when the constraints are inconsistent.
    """
    k = check_vector(stiffness, 6, "stiffness")
    q = np.zeros(6) if load is None else check_vector(load, 6, "load").astype(float)
    a = np.ascontiguousarray(a, dtype=float).reshape(-1, 6)
    b = np.ascontiguousarray(b, dtype=float)
    if b.shape != (len(a),):
        raise ValueError(f"b must have shape ({len(a)},), got {b.shape}")
    if len(a) == 0 and hook is None:
        return QPSolution(q / k, np.zeros(0))
    m = len(a)
    if hook is not None:  # one more variable, the hook's stretch s
        h, c, k_hook = check_vector(hook[0], 6, "hook row"), float(hook[1]), float(hook[2])
        k = np.append(k, k_hook)
        q = np.append(q, 0.0)
        rows = np.zeros((m + 2, 7))  # [a 0], [-h 1], [0 1]
        rows[:m, :6], rows[m, :6], rows[m:, 6] = a, -h, 1.0
        a = rows
        b = np.append(b, (c, 0.0))
    x, lam = _solve_qp(k, q, a, b, solver)
    return QPSolution(x[:6], lam[:m], float(x[6]) if hook is not None else 0.0)


def _deform(k: np.ndarray, a: np.ndarray, b: np.ndarray, solver: str, load: np.ndarray | None,
            hook: tuple[np.ndarray, float, float] | None) -> np.ndarray:
    """:func:`solve_deformation`'s ``e`` for the solver's own rows (checked inputs: no checks)."""
    q = _ZERO6 if load is None else load
    if len(a) == 0 and hook is None:
        return q / k
    if hook is not None:
        m = len(a)
        rows = np.zeros((m + 2, 7))  # [a 0], [-h 1], [0 1]
        rows[:m, :6], rows[m, :6], rows[m:, 6] = a, -hook[0], 1.0
        k, q, a = np.append(k, hook[2]), np.append(q, 0.0), rows
        b = np.append(b, (hook[1], 0.0))
    return _solve_qp(k, q, a, b, solver)[0][:6]


_ZERO6 = _readonly(np.zeros(6))


def _solve_qp(k: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray, solver: str
              ) -> tuple[np.ndarray, np.ndarray]:
    if solver == "daqp":
        # daqp's default primal tolerance (1e-6) would allow a micrometre of penetration here.
        x, _, flag, info = daqp.solve(np.diag(k), -q, np.ascontiguousarray(a), np.full(len(b), np.inf), b,
                                      np.zeros(len(b), dtype=np.intc), primal_tol=_DAQP_TOL)
        if flag not in (1, 2):
            raise ContactQPError(f"daqp exit flag {flag}")
        return np.asarray(x), np.maximum(-np.asarray(info["lam"]), 0.0)
    if solver == "quadprog":
        try:
            x, _, _, _, lam, _ = quadprog.solve_qp(np.diag(k), q, a.T.copy(), b, 0)
        except ValueError as error:
            raise ContactQPError(str(error)) from error
        return x, lam
    raise ValueError(f"solver must be 'daqp' or 'quadprog', got {solver!r}")


# ----------------------------------------------------------------------- interpenetration


def interpenetrates(model: ContactModel, tcp2passive: np.ndarray) -> bool:
    """Edge–face crossing test: do the bodies overlap by more than ``model.tolerance_m``?"""
    return _penetrates(model, check_pose(tcp2passive, "tcp2passive"))


def _penetrates(model: ContactModel, tcp2passive: np.ndarray | _Placed) -> bool:
    """``contact_geometry.interpenetrate`` at ``tcp2passive`` (or the bodies placed there), from
    the plane distances of every edge end at once (all pieces: the per-piece box culling costs
    more than it saves on so few pieces, and culls only segments that cannot enter)."""
    placed = tcp2passive if isinstance(tcp2passive, _Placed) else _Placed(model, tcp2passive)
    if clear_of_box(placed.vertices, model.passive, 0.0):
        return False
    tables, depth = model.tables, model.tolerance_m
    ends = placed.active_distances()[tables.n_active_vertices:]
    if _segments_enter(ends.reshape(-1, 2, *tables.passive_shape), depth):
        return True
    ends = placed.passive_distances()[tables.n_passive_vertices:]
    return _segments_enter(ends.reshape(-1, 2, *tables.active_shape), depth)


def _segments_enter(dist: np.ndarray, depth: float) -> bool:
    """``contact_geometry.segments_enter`` from the plane distances (E, 2, P, Fmax) of the
    segments' ends: Cyrus–Beck clipping against every piece shrunk by ``depth``, on the
    (segment, piece) pairs not wholly outside one of the piece's planes."""
    d0, d1 = dist[:, 0] + depth, dist[:, 1] + depth
    near = ~((d0 > 0.0) & (d1 > 0.0)).any(axis=2)
    if not near.any():
        return False
    d0, d1 = d0[near], d1[near]
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = d0 / (d0 - d1)
    lo = np.where(d1 < d0, crossing, 0.0).max(axis=1, initial=0.0)
    hi = np.where(d1 > d0, crossing, 1.0).min(axis=1, initial=1.0)
    return bool((lo < hi).any())


def _bisect(model: ContactModel, free: np.ndarray, blocked: np.ndarray) -> float:
    """Largest fraction of the way from ``free`` to ``blocked`` found free, to ~tol / 4."""
    distance, angle = _gap(free, blocked)
    extent = distance + angle * model.active.radius
    lo, hi = 0.0, 1.0
    while (hi - lo) * extent > 0.25 * model.tolerance_m:
        mid = 0.5 * (lo + hi)
        if _penetrates(model, _interpolate(free, blocked, mid)):
            hi = mid
        else:
            lo = mid
    return lo


# ----------------------------------------------------------------------------- the solver


def _tangents(normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors (k, 3) each, perpendicular to each normal (k, 3) and to each other."""
    helper = np.where(np.abs(normals[:, :1]) < 0.9, _X_ROW, _Y_ROW)
    first = row_cross(normals, helper)
    first /= np.sqrt((first * first).sum(axis=1, keepdims=True))  # np.linalg.norm's bits
    return first, row_cross(normals, first)


_X_ROW, _Y_ROW = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])


def _rows(
    model: ContactModel, contacts: ContactSet, cmd: np.ndarray, real: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The QP's rows ``a e >= b`` (with friction, ``friction_sides`` per contact) and the plain
    normal rows ``a_n e >= b_n`` (one per contact, for the distances predicted)."""
    to_cmd = cmd[:3, :3]
    e0 = _deformation(cmd, real)
    jl = _left_jacobian(e0[3:])
    normals = contacts.normals_passive @ to_cmd
    levers = (contacts.points_passive - real[:3, 3]) @ to_cmd
    m = len(normals)
    if model.friction == 0.0 or m == 0:
        a_n = np.hstack([normals, row_cross(levers, normals) @ jl])
        b_n = a_n @ e0 - contacts.distances
        return a_n, b_n, a_n, b_n
    tables, sides = model.tables, model.friction_sides
    first, second = _tangents(normals)
    tilts = tables.cos_sides * first[:, None] + tables.sin_sides * second[:, None]
    # the normal rows and the friction pyramid's in one array (one cross product, one product)
    rows = np.empty((m * (sides + 1), 6))
    rows[:m, :3] = normals
    rows[m:, :3] = (normals[:, None] + model.friction * tilts).reshape(-1, 3)
    arms = np.empty((len(rows), 3))
    arms[:m] = levers
    arms[m:] = np.repeat(levers, sides, axis=0)
    rows[:, 3:] = row_cross(arms, rows[:, :3]) @ jl
    gaps = np.empty(len(rows))
    gaps[:m] = contacts.distances
    gaps[m:] = np.repeat(contacts.distances, sides)
    b = rows @ e0 - gaps
    return rows[m:], b[m:], rows[:m], b[:m]


def _hook_row(cmd: np.ndarray, hook: HookPull | None) -> tuple[np.ndarray, float, float] | None:
    """The hook's spring in the QP: the real TCP's height over the passive face is
    ``cmd[2, 3] + cmd[2, :3] · e_t`` (the passive frame's z row of the real origin)."""
    if hook is None:
        return None
    return np.concatenate([cmd[2, :3], np.zeros(3)]), float(cmd[2, 3] - hook.depth), hook.stiffness


def _qp_step(
    model: ContactModel, cmd: np.ndarray, real: np.ndarray, contacts: ContactSet,
    load: np.ndarray | None = None, hook: HookPull | None = None,
) -> tuple[np.ndarray, ContactSet]:
    """Candidate real pose, and the contacts with their distances predicted there."""
    a, b, a_n, b_n = _rows(model, contacts, cmd, real)
    pull = _hook_row(cmd, hook)
    try:
        e = _deform(model.stiffness, a, b, model.solver, load, pull)
    except ContactQPError:  # contradictory small penetrations: only forbid deepening them
        sides = len(a) // max(len(contacts), 1)
        relaxed = b + np.repeat(np.minimum(contacts.distances, 0.0), sides)
        e = _deform(model.stiffness, a, relaxed, model.solver, load, pull)
    return _apply(cmd, e), ContactSet(contacts.kinds, contacts.points_passive, contacts.normals_passive,
                                      a_n @ e - b_n)


def _settle(
    model: ContactModel, cmd: np.ndarray, real: np.ndarray, load: np.ndarray | None = None,
    hook: HookPull | None = None, found: ContactSet | _Placed | None = None,
) -> tuple[np.ndarray, ContactSet, int, bool, _Placed | None]:
    """Real pose for commanded ``cmd`` (passive frame) from the free pose ``real``.

    Returns the pose, its contacts, the QP solves used, whether the pose settled and the bodies
    placed at the pose returned (None if not placed). ``found``: the contacts at ``real`` if
    already searched, or the bodies already placed there.
    """
    free = cmd if load is None else _apply(cmd, load / model.stiffness)
    placed = found if isinstance(found, _Placed) else None  # the bodies at ``real`` if placed
    for iteration in range(1, model.max_iterations + 1):
        if iteration == 1 and isinstance(found, ContactSet):
            contacts = found
        else:
            contacts = _search(model, real if placed is None else placed)[0]
        if len(contacts) == 0 and hook is None:
            candidate, predicted = free, contacts
        else:
            candidate, predicted = _qp_step(model, cmd, real, contacts, load, hook)
        distance, angle = _gap(real, candidate)
        settled = distance < _SETTLED_M and angle < _SETTLED_RAD
        at_candidate = _Placed(model, candidate)
        if not _penetrates(model, at_candidate):
            if len(contacts) == 0 or settled:  # a settled pose is within 1 µm of ``real``
                return candidate, predicted, iteration, True, at_candidate
            real, placed = candidate, at_candidate
            continue
        placed = None
        fraction = _bisect(model, real, candidate)
        if fraction * distance < _SETTLED_M and fraction * angle < _SETTLED_RAD:
            break  # stuck: the contacts found do not block this motion
        real = _interpolate(real, candidate, fraction)
    return real, _find_contacts(model, real), iteration, False, None


def _substeps(model: ContactModel, start: np.ndarray, end: np.ndarray) -> list[np.ndarray]:
    distance, angle = _gap(start, end)
    ratio = max(distance / model.max_step_m, angle / model.max_step_rad)
    count = max(1, math.ceil(ratio - 1e-9))
    return [_interpolate(start, end, (i + 1) / count) for i in range(count)]


def clear_motion(
    model: ContactModel,
    commanded_tcp2base: np.ndarray,
    passive2base: np.ndarray,
    previous_real_tcp2base: np.ndarray,
    previous_commanded_tcp2base: np.ndarray | None = None,
) -> bool:
    """True when :func:`solve_contact` with these poses (and no ``load`` or ``hook``) certainly
    meets no contact: it would return the commanded pose and a zero wrench. A broad phase for
    callers that step a contact model every tick; False means only "solve it".

    Every pose :func:`solve_contact` searches for contacts at, or tests for interpenetration,
    is the previous real pose or one on the way from the previous commanded pose to the
    commanded one, and on that way no point of the active body moves further than the way's
    translation plus its rotation angle times the body's radius (``sweep``). So when the box of
    the active's vertices at the previous real pose is more than ``margin_m`` clear of the
    passive's box, and their box at the previous commanded pose more than ``margin_m + sweep``
    clear (the test ``_find_contacts`` starts with, on a larger box), no contact is found on
    the way and no candidate pose interpenetrates. Poses (4, 4), base frame; unchecked (the
    caller's are those it passes to :func:`solve_contact`).
    """
    base2passive = invert_pose(passive2base)
    real = base2passive @ previous_real_tcp2base
    vertices = model.active.vertices
    if not clear_of_box(transform_points(real, vertices), model.passive, model.margin_m):
        return False
    start = real if previous_commanded_tcp2base is None else base2passive @ previous_commanded_tcp2base
    distance, angle = _gap(start, base2passive @ commanded_tcp2base)
    sweep = distance + angle * model.active.radius
    if sweep == 0.0 and start is real:
        return True
    return clear_of_box(transform_points(start, vertices), model.passive, model.margin_m + sweep + 1e-9)


def solve_contact(
    model: ContactModel,
    commanded_tcp2base: np.ndarray,
    passive2base: np.ndarray,
    previous_real_tcp2base: np.ndarray,
    previous_commanded_tcp2base: np.ndarray | None = None,
    load: np.ndarray | None = None,
    hook: HookPull | None = None,
) -> ContactResult:
    """Real TCP pose and wrist wrench for one commanded pose (all (4, 4), base frame).

    The commanded motion, from ``previous_commanded_tcp2base`` (default: the previous real
    pose), is split into steps of at most ``max_step_m`` / ``max_step_rad``, each solved from
    the real pose of the one before. ``previous_real_tcp2base`` must be free (the previous
    result, or any pose clear of the passive body at start): a vertex of one body inside the
    other raises ValueError. Without contact the real pose is the commanded one and the wrench
    zero. The contacts reported are those of the last QP with their distances at the real pose
    as linearised (exact to second order in the last, sub-micrometre, move). If the passive body
    moved since the last call, carry the previous poses along with it (keep their pose relative
    to the passive) so that the previous real pose stays free. ``load`` (6,), in the commanded
    TCP frame, is an external wrench on the tool besides the contacts (hook pull); the wrench
    returned is then ``K e`` = load + contact reactions, what the wrist sensor measures.
    ``hook`` (:class:`HookPull`) adds closed hooks' pull; ``hook_tension`` is their pull at the
    real pose.
    """
    if load is not None:
        load = check_vector(load, 6, "load").astype(float)
        if not load.any():
            load = None
    commanded = check_pose(commanded_tcp2base, "commanded_tcp2base")
    passive2base = check_pose(passive2base, "passive2base")
    base2passive = invert_pose(passive2base)
    real = base2passive @ check_pose(previous_real_tcp2base, "previous_real_tcp2base")
    found, inside = _search(model, real)  # the first step's first search, and the check
    if inside:
        raise ValueError("previous_real_tcp2base interpenetrates the passive body; start the "
                         "contact model from a free pose")
    start = real if previous_commanded_tcp2base is None else base2passive @ check_pose(
        previous_commanded_tcp2base, "previous_commanded_tcp2base")
    cmd = base2passive @ commanded
    iterations, converged = 0, True
    for step in _substeps(model, start, cmd):
        real, contacts, used, settled, found = _settle(model, step, real, load, hook, found)
        iterations, converged = iterations + used, converged and settled
    if real is cmd:
        real_tcp2base, wrench = commanded.copy(), np.zeros(6)
    else:
        real_tcp2base = passive2base @ real
        wrench = model.stiffness * _deformation(cmd, real)
    n_active = int((contacts.distances <= model.tolerance_m).sum())
    tension = 0.0 if hook is None else hook.stiffness * max(0.0, float(real[2, 3]) - hook.depth)
    return ContactResult(real_tcp2base, wrench, contacts, n_active, iterations, converged, tension)
