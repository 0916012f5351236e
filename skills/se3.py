"""SE(3) helpers every skill shares: input checks, the cross-product matrix, the adjoint, screw
(twist and wrench) re-expression, the two ways of comparing poses, and interpolation between two.

Poses are (4, 4) homogeneous transforms named ``a2b`` (they map points in frame a to frame b);
twists are ``[v, ω]`` and wrenches ``[f, τ]``, each (6,).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])
_I3 = np.eye(3)


def check_vector(value: Sequence[float] | np.ndarray, size: int, name: str) -> np.ndarray:
    """``value`` as a finite float array of shape (size,); ValueError naming ``name`` otherwise."""
    array = np.asarray(value, dtype=float)
    if array.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array}")
    return array


def check_pose(value: np.ndarray, name: str) -> np.ndarray:
    """``value`` as a (4, 4) transform with a proper rotation (to 1e-6); ValueError otherwise."""
    pose = np.asarray(value, dtype=float)
    if pose.shape != (4, 4):
        raise ValueError(f"{name} must have shape (4, 4), got {pose.shape}")
    if not np.isfinite(pose).all():
        raise ValueError(f"{name} must be finite")
    if np.abs(pose[3] - _LAST_ROW).max() > 1e-9:
        raise ValueError(f"{name} last row must be [0, 0, 0, 1], got {pose[3]}")
    rot = pose[:3, :3]
    if np.abs(rot.T @ rot - _I3).max() > 1e-6 or np.linalg.det(rot) < 0.0:
        raise ValueError(f"{name} rotation block is not a proper rotation matrix")
    return pose


def skew(vector: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``[a]×`` (3, 3) of ``vector`` (3,): ``skew(a) @ b == cross(a, b)``."""
    x, y, z = check_vector(vector, 3, "vector")
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def adjoint(a2b: np.ndarray) -> np.ndarray:
    """Adjoint (6, 6) of ``a2b``: maps a rigid-body twist from frame a to frame b.

    Twists are ``[v, ω]``; in frame a, ``v`` is the velocity of the body point at a's origin and
    both halves are in a's axes; likewise in b. ``Ad = [[R, [t]× R], [0, R]]``.
    """
    pose = check_pose(a2b, "a2b")
    rotation, translation = pose[:3, :3], pose[:3, 3]
    result = np.zeros((6, 6))
    result[:3, :3] = rotation
    result[:3, 3:] = skew(translation) @ rotation
    result[3:, 3:] = rotation
    return result


def rotate_screw(rotation: np.ndarray, screw: np.ndarray) -> np.ndarray:
    """A twist or wrench (6,) re-expressed in rotated axes about the same point: both halves
    multiplied by ``rotation`` (3, 3)."""
    return np.concatenate([rotation @ screw[:3], rotation @ screw[3:]])


def wrench_tcp_to_base(wrench_tcp: np.ndarray, tcp2base: np.ndarray) -> np.ndarray:
    """Wrench (6,) at the TCP point, from TCP axes to base axes (force and torque rotated)."""
    wrench = check_vector(wrench_tcp, 6, "wrench_tcp")
    rotation = check_pose(tcp2base, "tcp2base")[:3, :3]
    return rotate_screw(rotation, wrench)


def wrench_base_to_tcp(wrench_base: np.ndarray, tcp2base: np.ndarray) -> np.ndarray:
    """Wrench (6,) at the TCP point, from base axes to TCP axes (force and torque rotated)."""
    wrench = check_vector(np.asarray(wrench_base, dtype=float).reshape(-1), 6, "wrench_base")
    rotation = check_pose(tcp2base, "tcp2base")[:3, :3]
    return rotate_screw(rotation.T, wrench)


def pose_error(current2base: np.ndarray, target2base: np.ndarray) -> np.ndarray:
    """Displacement (6,) from ``current`` to ``target``, both (4, 4) in the base frame.

    ``[p_target - p_current, rotvec(R_target · R_current^T)]``: the twist (base frame) that,
    held for one second, moves the current pose onto the target (exactly in position; in
    rotation about a fixed base-frame axis).
    """
    current = check_pose(current2base, "current2base")
    target = check_pose(target2base, "target2base")
    rotation = Rotation.from_matrix(target[:3, :3] @ current[:3, :3].T)
    return np.concatenate([target[:3, 3] - current[:3, 3], rotation.as_rotvec()])


def pose_distance(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """How far apart two poses (4, 4) are: (translation error norm in m, rotation angle of
    ``R_est^T R_true`` in rad)."""
    dt = float(np.linalg.norm(estimate[:3, 3] - truth[:3, 3]))
    dr = float(Rotation.from_matrix(estimate[:3, :3].T @ truth[:3, :3]).magnitude())
    return dt, dr


def interpolate_pose(a: np.ndarray, b: np.ndarray, s: float) -> np.ndarray:
    """The pose ``s`` of the way from ``a`` to ``b`` (4, 4): position linear, rotation by slerp
    (``s`` outside [0, 1] extrapolates)."""
    turn = Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).as_rotvec()
    out = np.eye(4)
    out[:3, :3] = a[:3, :3] @ Rotation.from_rotvec(s * turn).as_matrix()
    out[:3, 3] = a[:3, 3] + s * (b[:3, 3] - a[:3, 3])
    return out
