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
* The geometry (search, interpenetration, bisection, the QP's rows) runs in compiled kernels
  (:mod:`orbitree.skills.contact_kernels`; their docstring gives the speed); the QP is daqp's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import daqp
import numpy as np
import quadprog

from orbitree.skills import contact_kernels as kernels
from orbitree.skills.contact_geometry import (
    CompositeBody,
    _readonly,
    clear_of_box,
    invert_pose,
    row_cross,
    seated_tcp2passive,
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
    """(translation m, rotation angle rad) between two poses (``contact_kernels.gap``)."""
    return kernels.gap(start, end)


def _left_jacobian(rotvec: np.ndarray) -> np.ndarray:
    """J_l (3, 3) with ``Exp(ω + δ) ≈ Exp(J_l(ω) δ) Exp(ω)`` (``contact_kernels.left_jacobian``)."""
    return kernels.left_jacobian(*rotvec.tolist())


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


def _penetrates(model: ContactModel, tcp2passive: np.ndarray) -> bool:
    """``contact_geometry.interpenetrate`` at ``tcp2passive`` from the plane distances of every
    edge end at once (all pieces: the per-piece box culling costs more than it saves on so few
    pieces): ``contact_kernels.penetrates``."""
    return kernels.penetrates(tcp2passive[:3, :3], tcp2passive[:3, 3], *model.tables.solid, model.tolerance_m)


def _bisect(model: ContactModel, free: np.ndarray, blocked: np.ndarray) -> float:
    """Largest fraction of the way from ``free`` to ``blocked`` found free, to ~tol / 4
    (``contact_kernels.bisect``; the poses on the way are :func:`_interpolate`'s)."""
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


# ----------------------------------------------------------------------------- the solver


def _qp_step(
    model: ContactModel, cmd: np.ndarray, real: np.ndarray, contacts: ContactSet,
    load: np.ndarray | None = None, hook: HookPull | None = None,
) -> tuple[np.ndarray, ContactSet]:
    """Candidate real pose, and the contacts with their distances predicted there.

    The QP's rows (``contact_kernels.qp_rows``): the contacts linearised about ``real`` (with
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
    q = _ZERO6 if load is None else load
    k = model.stiffness
    if hook is not None:
        k, q = np.append(k, hook.stiffness), np.append(q, 0.0)
    if len(a) == 0:
        e = q / k
    else:
        try:
            e = _solve_qp(k, q, a, b, model.solver)[0][:6]
        except ContactQPError:  # contradictory small penetrations: only forbid deepening them
            relaxed = b.copy()
            sides = (len(a) - (2 if hook is not None else 0)) // max(len(contacts), 1)
            relaxed[:sides * len(contacts)] += np.repeat(np.minimum(contacts.distances, 0.0), sides)
            e = _solve_qp(k, q, a, relaxed, model.solver)[0][:6]
    return kernels.apply(cmd, e), ContactSet(contacts.kinds, contacts.points_passive, contacts.normals_passive,
                                             a_n @ e - b_n)


def _deformation_of(cmd: np.ndarray, real: np.ndarray) -> np.ndarray:
    """:func:`_deformation` compiled (``contact_kernels.deformation``), scipy's log map beyond ~154°."""
    e = kernels.deformation(cmd, real)
    return _deformation(cmd, real) if math.isnan(e[3]) else e


def _settle(
    model: ContactModel, cmd: np.ndarray, real: np.ndarray, load: np.ndarray | None = None,
    hook: HookPull | None = None, found: ContactSet | None = None,
) -> tuple[np.ndarray, ContactSet, int, bool, None]:
    """Real pose for commanded ``cmd`` (passive frame) from the free pose ``real``.

    Returns the pose, its contacts, the QP solves used, whether the pose settled, and None (the
    next step searches its start afresh). ``found``: the contacts at ``real`` if already searched.
    """
    free = cmd if load is None else kernels.apply(cmd, load / model.stiffness)
    for iteration in range(1, model.max_iterations + 1):
        contacts = found if iteration == 1 and found is not None else _search(model, real)[0]
        if len(contacts) == 0 and hook is None:
            candidate, predicted = free, contacts
        else:
            candidate, predicted = _qp_step(model, cmd, real, contacts, load, hook)
        distance, angle = _gap(real, candidate)
        settled = distance < _SETTLED_M and angle < _SETTLED_RAD
        if not _penetrates(model, candidate):
            if len(contacts) == 0 or settled:  # a settled pose is within 1 µm of ``real``
                return candidate, predicted, iteration, True, None
            real = candidate
            continue
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
