"""The contact model's linear algebra, independent of the bodies: deformation and pose, contacts
linearised into ``A e >= b``, and the QP ``min ½ eᵀ K e  s.t.  A e >= b``.

The compliance frame's pose algebra (:func:`deformation`, :func:`apply_deformation`, the
geodesic interpolation and the gap between two poses); :class:`ContactSet` (the determined
contacts at one pose) and their linearisation about the real pose (:func:`linearise_contacts`);
:func:`solve_deformation` (daqp, quadprog as a cross-check) and :class:`QPSolution`. The model
that finds the contacts is ``contact_model.py``; the stepping solver and the model's conventions,
with its sources, ``contact.py``, which re-exports all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import daqp
import numpy as np
import quadprog

from orbitree.skills import contact_kernels as kernels
from orbitree.skills.contact_geometry import _readonly, invert_pose, row_cross
from orbitree.skills.se3 import check_pose, check_vector, rotation_of, rotvec_of

__all__ = [
    "ContactKind",
    "ContactQPError",
    "ContactSet",
    "QPSolution",
    "apply_deformation",
    "deformation",
    "linearise_contacts",
    "solve_deformation",
]

_DAQP_TOL = 1e-10


class ContactKind(IntEnum):
    VERTEX_FACE = 0  # an active vertex on a passive face
    FACE_VERTEX = 1  # a passive vertex on an active face
    EDGE_EDGE = 2  # a convex active edge across a convex passive edge


class ContactQPError(RuntimeError):
    """The contact QP has no solution (contradictory linearised contacts)."""


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
    """(translation m, rotation angle rad) between two poses (``contact_pose_kernels.gap``)."""
    return kernels.gap(start, end)


def _left_jacobian(rotvec: np.ndarray) -> np.ndarray:
    """J_l (3, 3) with ``Exp(ω + δ) ≈ Exp(J_l(ω) δ) Exp(ω)`` (``contact_pose_kernels.left_jacobian``)."""
    return kernels.left_jacobian(*rotvec.tolist())


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


_UNBOUNDED: dict[int, np.ndarray] = {}  # daqp's upper bounds (all +inf) by row count, reused (daqp reads them)


def _solve_qp(k: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray, solver: str,
              hessian: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``hessian``: ``np.diag(k)`` if the caller keeps it (daqp reads it, never writes it)."""
    if solver == "daqp":
        upper = _UNBOUNDED.get(len(b))
        if upper is None:
            upper = _UNBOUNDED[len(b)] = np.full(len(b), np.inf)
        # daqp's default primal tolerance (1e-6) would allow a micrometre of penetration here.
        x, _, flag, info = daqp.solve(np.diag(k) if hessian is None else hessian, -q, np.ascontiguousarray(a),
                                      upper, b, np.zeros(len(b), dtype=np.intc), primal_tol=_DAQP_TOL)
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
