"""Several arms holding one body: the grasp matrix, the split of the arms' wrenches into the part
that moves the body and the internal (squeeze/stretch) part, and the error that nulls the latter.

The docking phase of [JPL] pulls the despun satellite with both arms while "active force control
is used to nullify the force built up due to the dual-arm coordinated motion"; this is that force.

Contacts are rigid grasps at points ``p_i`` (3,) relative to the reference point (the centre of
mass, or a gimbal's pivot), world axes. Each arm applies the wrench ``w_i = [f_i, m_i]`` (6,) to the
body at its point, world axes. The grasp matrix (6, 6n) sums them at the reference point::

    G = [G_1 … G_n],   G_i = [[I, 0], [[p_i]×, I]],   w_net = G w

Forces and moments have different units, so "the smallest set of wrenches that makes ``w_net``" needs
a length ``L``: the distribution minimises ``Σ |f_i|² + |m_i|²/L²``. With ``S = blockdiag(I, L·I)``
per arm it is ``w = S (G S)⁺ w_net``, and the split is the standard closed form::

    w_motion = S (G S)⁺ G w,    w_internal = w − w_motion,    G w_internal = 0

A squeeze along the line between two contacts is internal whatever ``L``; how a pair of opposing
pad moments is split does depend on it (internal forces are not unique, which is why ``L`` is
explicit). Choosing ``L = max_moment / max_force`` spends both capacities evenly.

A mounted body moves only along some directions: ``mobility`` (k, 6) keeps the net-wrench
components that move it (``B G`` in place of ``G`` above). A free body: all six (the default). The
seed's mockup on a gimbal near its centre of mass: the three moments, ``[[0, I]]``; the net force
goes into the pivot, so it counts as internal and is nulled (it only loads the gimbal). A bearing
about a unit axis ``a``: ``[[0, 0, 0, a]]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from orbitree.skills.se3 import skew


@dataclass(frozen=True)
class Grasp:
    """``points`` (n, 3) m, ``length`` L (m, >= 0), ``matrix`` G (6, 6n), ``mobility`` B (k, 6) and
    ``distribution`` S (B G S)⁺ B (6n, 6). ``length = 0`` distributes with forces only (then the
    split is exact only for wrenches without moments); build one with :func:`make_grasp`."""

    points: np.ndarray
    length: float
    matrix: np.ndarray
    mobility: np.ndarray
    distribution: np.ndarray

    @property
    def count(self) -> int:
        return len(self.points)


def make_grasp(points: np.ndarray, length: float | None = None, mobility: np.ndarray | None = None) -> Grasp:
    """The grasp of contacts at ``points`` (n, 3), n >= 2, world axes, m from the reference point.
    ``length`` defaults to the contacts' mean distance from the reference point (1 m if all are on
    it); ``mobility`` (k, 6), 1 <= k <= 6, to the identity (a free body)."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 2:
        raise ValueError(f"points must have shape (n, 3) with n >= 2, got {pts.shape}")
    if not np.isfinite(pts).all():
        raise ValueError("points must be finite")
    if length is None:
        mean = float(np.linalg.norm(pts, axis=1).mean())
        length = mean if mean > 0.0 else 1.0
    length = float(length)
    if not math.isfinite(length) or length < 0.0:
        raise ValueError(f"length must be finite and >= 0, got {length}")
    rows = np.eye(6) if mobility is None else np.asarray(mobility, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != 6 or not 1 <= len(rows) <= 6 or not np.isfinite(rows).all():
        raise ValueError(f"mobility must be a finite (k, 6) array with 1 <= k <= 6, got shape {rows.shape}")
    n = len(pts)
    matrix = np.zeros((6, 6 * n))
    scale = np.ones(6 * n)
    for i, point in enumerate(pts):
        matrix[:3, 6 * i:6 * i + 3] = np.eye(3)
        matrix[3:, 6 * i:6 * i + 3] = skew(point)
        matrix[3:, 6 * i + 3:6 * i + 6] = np.eye(3)
        scale[6 * i + 3:6 * i + 6] = length
    distribution = scale[:, None] * np.linalg.pinv(rows @ matrix * scale[None, :]) @ rows
    return Grasp(pts, length, matrix, rows, distribution)


def _wrenches(grasp: Grasp, wrenches: np.ndarray) -> np.ndarray:
    array = np.asarray(wrenches, dtype=float)
    if array.shape != (grasp.count, 6):
        raise ValueError(f"wrenches must have shape ({grasp.count}, 6), got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("wrenches must be finite")
    return array


def net_wrench(grasp: Grasp, wrenches: np.ndarray) -> np.ndarray:
    """The net wrench (6,) on the body at the reference point, world axes: ``G w``."""
    return grasp.matrix @ _wrenches(grasp, wrenches).reshape(-1)


def distribute(grasp: Grasp, net: np.ndarray) -> np.ndarray:
    """Per-contact wrenches (n, 6) that make the moving part ``B·net`` of ``net`` (6,) with no
    internal part (the weighted minimum-norm solution; what the mount takes is left to it). With
    ``length = 0``, a net moment about the line through two contacts cannot be made by forces
    alone: that component is dropped (least squares)."""
    wrench = np.asarray(net, dtype=float)
    if wrench.shape != (6,) or not np.isfinite(wrench).all():
        raise ValueError(f"net must be a finite (6,) wrench, got {wrench}")
    return (grasp.distribution @ wrench).reshape(grasp.count, 6)


def split_wrenches(grasp: Grasp, wrenches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(motion, internal), each (n, 6): ``motion`` makes the same moving wrench with no internal
    part, ``internal = wrenches − motion`` makes none (``B G · internal = 0``)."""
    array = _wrenches(grasp, wrenches)
    motion = distribute(grasp, grasp.matrix @ array.reshape(-1))
    return motion, array - motion


def squeeze(grasp: Grasp, wrenches: np.ndarray) -> float:
    """The internal force along the line between two contacts, N: positive when the arms press
    the body (compression), negative when they pull it apart (tension)."""
    if grasp.count != 2:
        raise ValueError(f"squeeze is defined for two contacts, got {grasp.count}")
    _, internal = split_wrenches(grasp, wrenches)
    line = grasp.points[1] - grasp.points[0]
    length = float(np.linalg.norm(line))
    if length == 0.0:
        raise ValueError("the two contacts coincide: no line to squeeze along")
    unit = line / length
    return 0.5 * float(internal[0, :3] @ unit - internal[1, :3] @ unit)


def internal_comply_errors(grasp: Grasp, wrenches: np.ndarray, pad2world_rotations: np.ndarray) -> np.ndarray:
    """The error (n, 6) each arm's COMPLY integrator (:func:`orbitree.skills.grapple.comply_step`)
    should null to remove the internal wrench and nothing else: the internal part as the tool
    feels it (the reaction, ``−w_internal``), in each pad's axes.

    ``pad2world_rotations`` (n, 3, 3). Integrated with zero target wrench, each arm yields along
    the internal force it applies; the motion part (despin torque, docking pull) is untouched.
    """
    rotations = np.asarray(pad2world_rotations, dtype=float)
    if rotations.shape != (grasp.count, 3, 3):
        raise ValueError(f"pad2world_rotations must have shape ({grasp.count}, 3, 3), got {rotations.shape}")
    _, internal = split_wrenches(grasp, wrenches)
    felt = -internal
    forces = np.einsum("nji,nj->ni", rotations, felt[:, :3])  # Rᵀ f per pad
    moments = np.einsum("nji,nj->ni", rotations, felt[:, 3:])
    return np.concatenate([forces, moments], axis=1)
