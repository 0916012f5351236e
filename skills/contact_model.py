"""The contact model of one active/passive pair: :class:`ContactModel` and what it does at one pose.

The model's configuration and the tables its compiled kernels (``contact_kernels.py`` and the
modules it re-exports) read, built once per model; the SIROM pair (:func:`sirom_contact_model`);
the structure's stiffness (:func:`structural_stiffness`); :class:`HookPull`; and the operations at
one pose: the contact search (:func:`find_contacts`), the interpenetration test
(:func:`interpenetrates`), the bisection back toward a free pose, and one QP step (the contacts
linearised about the real pose, friction and hooks included, solved by ``contact_qp.py``). Building
a model runs each kernel once (``_warm_up``). The stepping solver
(:func:`orbitree.skills.contact.solve_contact`) and the model's conventions and sources:
``contact.py``, which re-exports all of this.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from orbitree.skills import contact_kernels as kernels
from orbitree.skills.contact_geometry import (
    CompositeBody,
    _readonly,
    seated_tcp2passive,
    sirom_active,
    sirom_passive,
)
from orbitree.skills.contact_qp import (
    ContactQPError,
    ContactSet,
    _deformation,
    _gap,
    _solve_qp,
)
from orbitree.skills.se3 import check_pose, check_vector, rotvec_of

__all__ = [
    "DEFAULT_STIFFNESS",
    "STRUCTURAL_LEVER_M",
    "STRUCTURAL_STIFFNESS_N_PER_M",
    "ContactModel",
    "HookPull",
    "find_contacts",
    "interpenetrates",
    "sirom_contact_model",
    "structural_stiffness",
]

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


class _Tables:
    """Constants of the contact search, built once per model, laid out for the compiled kernels
    (``contact_kernels``): ``solid`` the arguments of the interpenetration test, ``geometry``
    those of the contact search (after the pose), cos_flat, sin_flat : (S,) the friction
    pyramid's side angles.

    active_points : (Va + 2Ea + 2Ca, 3) the active's vertices, edge ends and crease ends (TCP
    frame). passive_points : (Vp + 2Ep, 3) the passive's vertices and edge ends. Planes (P·Fmax,
    4) of each body, their external flags (P, Fmax), the passive's box, the active creases'
    moments (Ca, 3) and normal cones (Ca, 2, 3), the passive creases' ends (Cp, 2, 3),
    directions (Cp, 3), squared lengths (Cp,), moments (Cp, 3), sums of their two face normals
    (Cp, 3) and cones (Cp, 2, 3).
    """

    def __init__(self, active: CompositeBody, passive: CompositeBody, sides: int) -> None:
        self.n_active_vertices = len(active.vertices)
        self.n_active_planar = self.n_active_vertices + 2 * len(active.edges)  # vertices + edge ends
        self.active_points = np.ascontiguousarray(np.vstack([
            active.vertices, active.edges.reshape(-1, 3), active.crease_edges.reshape(-1, 3)]))
        self.n_passive_vertices = len(passive.vertices)
        self.passive_points = np.ascontiguousarray(np.vstack([passive.vertices, passive.edges.reshape(-1, 3)]))
        (pa, fa), (pp, fp) = active.planes.shape[:2], passive.planes.shape[:2]
        active_planes = np.ascontiguousarray(active.planes.reshape(-1, 4))
        passive_planes = np.ascontiguousarray(passive.planes.reshape(-1, 4))
        bounds = np.ascontiguousarray(passive.bounds)
        self.solid = (self.active_points, self.n_active_vertices, self.n_active_planar, self.passive_points,
                      self.n_passive_vertices, active_planes, pa, passive_planes, pp, fa, fp, bounds,
                      np.ascontiguousarray(active.piece_bounds), np.ascontiguousarray(passive.piece_bounds))
        directions = passive.crease_edges[:, 1] - passive.crease_edges[:, 0]
        c = np.ascontiguousarray
        self.geometry = (
            self.active_points, self.n_active_vertices, self.n_active_planar, self.passive_points,
            self.n_passive_vertices, active_planes, pa, fa, c(active.plane_external), passive_planes, pp, fp,
            c(passive.plane_external), bounds, c(active.crease_moments), c(active.crease_cones),
            c(passive.crease_edges), c(directions), c((directions * directions).sum(axis=1)),
            c(passive.crease_moments), c(passive.crease_normals.sum(axis=1)), c(passive.crease_cones))
        angles = 2.0 * np.pi * np.arange(sides) / sides
        self.cos_flat, self.sin_flat = np.cos(angles), np.sin(angles)
        self.active_vertices = np.ascontiguousarray(active.vertices, dtype=float)  # the broad phase's
        self.passive_bounds = bounds
        self.weights: dict[float | None, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # _weights'


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
        _warm_up(self)  # the kernels compile (or load from numba's cache) now, not in a tick


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


# --------------------------------------------------------------------------- contact search


_NO_CONTACTS = ContactSet(*(_readonly(x) for x in (np.zeros(0, np.int8), np.zeros((0, 3)), np.zeros((0, 3)),
                                                   np.zeros(0))))


def find_contacts(model: ContactModel, tcp2passive: np.ndarray) -> ContactSet:
    """Determined contacts (passive frame) of the active body at ``tcp2passive`` (4, 4)."""
    return _find_contacts(model, check_pose(tcp2passive, "tcp2passive"))


def _find_contacts(model: ContactModel, pose: np.ndarray) -> ContactSet:
    return _search(model, pose)[0]


def _search(model: ContactModel, pose: np.ndarray) -> tuple[ContactSet, bool]:
    """The contacts at ``pose`` (tcp2passive), and whether a vertex of either body lies deeper
    than the tolerance inside a piece of the other (from the same plane distances):
    ``contact_kernels.search``. Per (vertex, piece) the face whose plane separates the vertex
    most is the contact face (kept when external and within ``[-tolerance, margin]``); edge
    pairs are screened with Plücker coordinates, then need their closest points inside both
    edges and their common normal inside both normal cones."""
    kinds, points, normals, dist, inside = kernels.search(
        pose[:3, :3], pose[:3, 3], *model.tables.geometry, model.tolerance_m, model.margin_m)
    if len(dist) == 0:
        return _NO_CONTACTS, inside
    return ContactSet(kinds, points, normals, dist), inside


# ----------------------------------------------------------------------- interpenetration


def interpenetrates(model: ContactModel, tcp2passive: np.ndarray) -> bool:
    """Edge–face crossing test: do the bodies overlap by more than ``model.tolerance_m``?"""
    return _penetrates(model, check_pose(tcp2passive, "tcp2passive"))


def _penetrates(model: ContactModel, tcp2passive: np.ndarray) -> bool:
    """``contact_geometry.interpenetrate`` at ``tcp2passive`` from the plane distances of every
    edge end at once (all pieces: the per-piece box culling costs more than it saves on so few
    pieces): ``contact_penetration_kernels.penetrates``."""
    return kernels.penetrates(tcp2passive[:3, :3], tcp2passive[:3, 3], *model.tables.solid, model.tolerance_m)


def _bisect(model: ContactModel, free: np.ndarray, blocked: np.ndarray) -> float:
    """Largest fraction of the way from ``free`` to ``blocked`` found free, to ~tol / 4
    (``contact_penetration_kernels.bisect``; the poses on the way are :func:`_interpolate`'s)."""
    distance, angle = _gap(free, blocked)
    step = rotvec_of(free[:3, :3].T @ blocked[:3, :3])
    return kernels.bisect(free, blocked, step, distance + angle * model.active.radius, model.tolerance_m,
                          *model.tables.solid)


def _warm_up(model: ContactModel) -> None:
    """Run each kernel once (numba compiles it, or loads it from its cache, on first call)."""
    pose = np.eye(4)
    pose[2, 3] = 1.0  # clear of the passive: the kernels' early exits
    _search(model, pose)
    _penetrates(model, pose)
    kernels.bisect(pose, pose, np.zeros(3), 0.0, model.tolerance_m, *model.tables.solid)
    seated = seated_tcp2passive()  # the full paths: contacts found, a box entered, a QP
    contacts = _search(model, seated)[0]
    _penetrates(model, seated)
    for hook in (None, HookPull(0.0, 1.0)):
        _qp_step(model, seated, seated, contacts, hook=hook)
    # as a run calls them: contacts carried from an earlier step are read-only arrays (a second
    # specialisation of the QP's rows), and the solver measures a step's size with gap
    frozen = ContactSet(*(_readonly(np.array(v)) for v in (contacts.kinds, contacts.points_passive,
                                                            contacts.normals_passive, contacts.distances)))
    _qp_step(model, seated, seated, frozen)
    kernels.gap(pose, seated)
    tables = model.tables  # the broad phase as clear_motion calls it (the passive's inverse read-only)
    for has_start in (False, True):
        kernels.motion_clear(_readonly(np.eye(4)), pose, seated, has_start, seated, tables.active_vertices,
                             tables.passive_bounds, model.margin_m, model.active.radius)


# -------------------------------------------------------------------------- one QP step


def _qp_step(
    model: ContactModel, cmd: np.ndarray, real: np.ndarray, contacts: ContactSet,
    load: np.ndarray | None = None, hook: HookPull | None = None,
) -> tuple[np.ndarray, ContactSet]:
    """Candidate real pose, and the contacts with their distances predicted there.

    The QP's rows (``contact_qp_kernels.qp_rows``): the contacts linearised about ``real`` (with
    friction, ``friction_sides`` rows per contact, the linearised cone's sides), and with
    ``hook`` the hook's spring: the real TCP's height over the passive face is ``cmd[2, 3] +
    cmd[2, :3] · e_t`` (the passive frame's z row of the real origin), its stretch ``s >= that −
    depth`` and ``s >= 0`` a 7th variable of stiffness ``hook.stiffness``.
    """
    e0 = _deformation_of(cmd, real)
    tables = model.tables
    a, b, a_n, b_n = kernels.qp_rows(
        cmd, real, e0, contacts.normals_passive, contacts.points_passive, contacts.distances, model.friction,
        tables.cos_flat, tables.sin_flat, hook is not None, 0.0 if hook is None else float(cmd[2, 3] - hook.depth))
    k, hessian, zero = _weights(model, hook)
    q = zero if load is None else (load if hook is None else np.append(load, 0.0))
    if len(a) == 0:
        e = q / k
    else:
        try:
            e = _solve_qp(k, q, a, b, model.solver, hessian)[0][:6]
        except ContactQPError:  # contradictory small penetrations: only forbid deepening them
            relaxed = b.copy()
            sides = (len(a) - (2 if hook is not None else 0)) // max(len(contacts), 1)
            relaxed[:sides * len(contacts)] += np.repeat(np.minimum(contacts.distances, 0.0), sides)
            e = _solve_qp(k, q, a, relaxed, model.solver, hessian)[0][:6]
    return kernels.apply(cmd, e), ContactSet(contacts.kinds, contacts.points_passive, contacts.normals_passive,
                                             a_n @ e - b_n)


def _weights(model: ContactModel, hook: HookPull | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The QP's stiffness (6,) or (7,) with the hook's, its diagonal matrix and a zero load of that
    size, made once per model and hook stiffness (kept in ``model.tables.weights``; read-only but
    the matrix, which daqp wants writable and only reads)."""
    key = None if hook is None else hook.stiffness
    weights = model.tables.weights.get(key)
    if weights is None:
        k = model.stiffness if hook is None else _readonly(np.append(model.stiffness, hook.stiffness))
        weights = (k, np.diag(k), _readonly(np.zeros(len(k))))
        if len(model.tables.weights) > 16:
            model.tables.weights.clear()
        model.tables.weights[key] = weights
    return weights


def _deformation_of(cmd: np.ndarray, real: np.ndarray) -> np.ndarray:
    """:func:`_deformation` compiled (``contact_pose_kernels.deformation``), scipy's log map beyond ~154°."""
    e = kernels.deformation(cmd, real)
    return _deformation(cmd, real) if math.isnan(e[3]) else e
