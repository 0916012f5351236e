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

Where things live: this module holds the stepping solver (:func:`solve_contact`,
:func:`clear_motion`) and re-exports the rest, so that all of it imports from
``orbitree.skills.contact``: the model, its construction and what it does at one pose (contact
search, interpenetration, bisection, one QP step) in ``contact_model.py``; the pose algebra, the
linearisation and the QP in ``contact_qp.py``; the bodies in ``contact_geometry.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from orbitree.skills import contact_kernels as kernels
from orbitree.skills.contact_geometry import invert_pose
from orbitree.skills.contact_model import (  # re-exported: the model lives there
    DEFAULT_STIFFNESS,
    STRUCTURAL_LEVER_M,
    STRUCTURAL_STIFFNESS_N_PER_M,
    ContactModel,
    HookPull,
    _bisect,
    _find_contacts,
    _penetrates,
    _qp_step,
    _search,
    find_contacts,
    interpenetrates,
    sirom_contact_model,
    structural_stiffness,
)
from orbitree.skills.contact_qp import (  # re-exported: the linearisation and the QP live there
    ContactKind,
    ContactQPError,
    ContactSet,
    QPSolution,
    _deformation,
    _gap,
    _interpolate,
    apply_deformation,
    deformation,
    linearise_contacts,
    solve_deformation,
)
from orbitree.skills.se3 import check_fixed_pose, check_pose, check_vector

__all__ = [
    "DEFAULT_STIFFNESS",
    "STRUCTURAL_LEVER_M",
    "STRUCTURAL_STIFFNESS_N_PER_M",
    "ContactKind",
    "ContactModel",
    "ContactQPError",
    "ContactResult",
    "ContactSet",
    "HookPull",
    "QPSolution",
    "apply_deformation",
    "clear_motion",
    "deformation",
    "find_contacts",
    "interpenetrates",
    "linearise_contacts",
    "sirom_contact_model",
    "solve_contact",
    "solve_deformation",
    "structural_stiffness",
]

_SETTLED_M = 1e-6
_SETTLED_RAD = 1e-5


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


# ----------------------------------------------------------------------------- the solver


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


_LAST_INVERSE: list[tuple[bytes, np.ndarray]] = []  # [(a passive2base's bytes, its inverse)]


def _passive_inverse(passive2base: np.ndarray) -> np.ndarray:
    """``invert_pose(passive2base)``, read-only, kept for the last pose inverted: the passive body
    mostly stands still, and the broad phase and the solver of a tick invert the same pose."""
    key = np.asarray(passive2base, dtype=float).tobytes()
    if _LAST_INVERSE and _LAST_INVERSE[0][0] == key:
        return _LAST_INVERSE[0][1]
    inverse = invert_pose(passive2base)
    inverse.flags.writeable = False
    _LAST_INVERSE[:] = [(key, inverse)]
    return inverse


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
    caller's are those it passes to :func:`solve_contact`). Compiled: ``contact_broad_kernels.motion_clear``.
    """
    has_start = previous_commanded_tcp2base is not None
    return kernels.motion_clear(_passive_inverse(passive2base), previous_real_tcp2base,
                                previous_commanded_tcp2base if has_start else previous_real_tcp2base, has_start,
                                commanded_tcp2base, model.tables.active_vertices, model.tables.passive_bounds,
                                model.margin_m, model.active.radius)


def solve_contact(
    model: ContactModel,
    commanded_tcp2base: np.ndarray,
    passive2base: np.ndarray,
    previous_real_tcp2base: np.ndarray,
    previous_commanded_tcp2base: np.ndarray | None = None,
    load: np.ndarray | None = None,
    hook: HookPull | None = None,
    *,
    trusted: bool = False,
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
    real pose. ``trusted``: the three TCP poses are the caller's own valid (4, 4) float arrays (a
    simulator passing back what its kinematics and the previous solve gave), not checked again.
    """
    if load is not None:
        load = check_vector(load, 6, "load").astype(float)
        if not load.any():
            load = None
    if trusted:
        commanded, previous = commanded_tcp2base, previous_commanded_tcp2base
    else:
        commanded = check_pose(commanded_tcp2base, "commanded_tcp2base")
        previous_real_tcp2base = check_pose(previous_real_tcp2base, "previous_real_tcp2base")
        previous = None if previous_commanded_tcp2base is None else check_pose(
            previous_commanded_tcp2base, "previous_commanded_tcp2base")
    # the passive body mostly stands still: its pose checked once (check_pose's result and errors)
    passive2base = check_fixed_pose(passive2base, "passive2base")
    base2passive = _passive_inverse(passive2base)
    real = base2passive @ previous_real_tcp2base
    found, inside = _search(model, real)  # the first step's first search, and the check
    if inside:
        raise ValueError("previous_real_tcp2base interpenetrates the passive body; start the "
                         "contact model from a free pose")
    start = real if previous is None else base2passive @ previous
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
    n_active = int(np.count_nonzero(contacts.distances <= model.tolerance_m))  # the count, without a reduction
    tension = 0.0 if hook is None else hook.stiffness * max(0.0, float(real[2, 3]) - hook.depth)
    return ContactResult(real_tcp2base, wrench, contacts, n_active, iterations, converged, tension)
