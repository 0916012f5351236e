"""SE(3) helpers every skill shares: input checks, the cross-product matrix, the adjoint, screw
(twist and wrench) re-expression, the two ways of comparing poses, and interpolation between two.

Poses are (4, 4) homogeneous transforms named ``a2b`` (they map points in frame a to frame b);
twists are ``[v, ω]`` and wrenches ``[f, τ]``, each (6,).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills.rotation_bits import rotation_of_rotvec, rotvec_of_rotation


def check_vector(value: Sequence[float] | np.ndarray, size: int, name: str) -> np.ndarray:
    """``value`` as a finite float array of shape (size,); ValueError naming ``name`` otherwise."""
    array = np.asarray(value, dtype=float)
    if array.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {array.shape}")
    # a short vector on Python floats: a fifth of numpy's cost (hot paths check thousands a second)
    finite = all(map(math.isfinite, array.tolist())) if size <= 16 else np.isfinite(array).all()
    if not finite:
        raise ValueError(f"{name} must be finite, got {array}")
    return array


def vector_norm(vector: Sequence[float] | np.ndarray) -> float:
    """``float(np.linalg.norm(vector))`` of a 1-D vector, the same ``sqrt(x · x)`` bit for bit,
    without the generality that costs numpy's a microsecond a call (for hot paths)."""
    values = np.asarray(vector, dtype=float)
    return math.sqrt(values.dot(values))


def check_pose(value: np.ndarray, name: str) -> np.ndarray:
    """``value`` as a (4, 4) transform with a proper rotation (to 1e-6); ValueError otherwise."""
    pose = np.asarray(value, dtype=float)
    if pose.shape != (4, 4):
        raise ValueError(f"{name} must have shape (4, 4), got {pose.shape}")
    # on Python floats: the checks of one pose cost a few microseconds, not tens (the simulated
    # world checks thousands of poses a second)
    rows = pose.tolist()
    r0, r1, r2, last = rows
    if not all(map(math.isfinite, r0 + r1 + r2 + last)):
        raise ValueError(f"{name} must be finite")
    if max(abs(last[0]), abs(last[1]), abs(last[2]), abs(last[3] - 1.0)) > 1e-9:
        raise ValueError(f"{name} last row must be [0, 0, 0, 1], got {pose[3]}")
    a00, a01, a02 = r0[0], r0[1], r0[2]
    a10, a11, a12 = r1[0], r1[1], r1[2]
    a20, a21, a22 = r2[0], r2[1], r2[2]
    # RᵀR − I (symmetric: six entries) and det R as the columns' triple product
    gram = (a00 * a00 + a10 * a10 + a20 * a20 - 1.0, a01 * a01 + a11 * a11 + a21 * a21 - 1.0,
            a02 * a02 + a12 * a12 + a22 * a22 - 1.0, a00 * a01 + a10 * a11 + a20 * a21,
            a00 * a02 + a10 * a12 + a20 * a22, a01 * a02 + a11 * a12 + a21 * a22)
    det = (a00 * (a11 * a22 - a12 * a21) - a01 * (a10 * a22 - a12 * a20)
           + a02 * (a10 * a21 - a11 * a20))
    if max(map(abs, gram)) > 1e-6 or det < 0.0:
        raise ValueError(f"{name} rotation block is not a proper rotation matrix")
    return pose


_VALID_POSES: dict[bytes, None] = {}


def check_fixed_pose(value: np.ndarray, name: str) -> np.ndarray:
    """:func:`check_pose` for a pose that comes back call after call unchanged (a tool, a goal):
    the same result and errors, the bytes of the poses that passed kept (whether a pose passes
    depends only on its float64 values), so that one passes again at a dictionary's cost."""
    pose = np.asarray(value, dtype=float)
    key = pose.tobytes() if pose.shape == (4, 4) else None
    if key is not None and key in _VALID_POSES:
        return pose
    check_pose(pose, name)
    if len(_VALID_POSES) >= 64:
        _VALID_POSES.clear()
    _VALID_POSES[key] = None
    return pose


def rotation_from_matrix(matrix: np.ndarray) -> Rotation:
    """``Rotation.from_matrix(matrix)`` for one (3, 3) matrix, bit for bit, at a quarter of its cost
    on a proper rotation: scipy's own test (``M Mᵀ`` within 1e-12 of I, ``det M > 0``), which
    costs it three times the conversion, made here on Python floats with a margin; a matrix that
    passes skips it (``assume_valid``: scipy then converts the same matrix the same way); any other
    goes to scipy whole (re-orthogonalised, or refused)."""
    m = np.asarray(matrix, dtype=float)
    if _valid_rotation(m):
        return Rotation.from_matrix(m, assume_valid=True)
    return Rotation.from_matrix(m)


def _valid_rotation(m: np.ndarray) -> bool:
    """Whether scipy's ``from_matrix`` would take (3, 3) float ``m`` as it is: ``M Mᵀ`` within
    1e-13 of I (scipy: 1e-12) and ``det M > 0.5`` (so its ``assume_valid`` gives its result)."""
    if m.shape != (3, 3):
        return False
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = m.tolist()
    worst = max(abs(a00 * a00 + a01 * a01 + a02 * a02 - 1.0), abs(a10 * a10 + a11 * a11 + a12 * a12 - 1.0),
                abs(a20 * a20 + a21 * a21 + a22 * a22 - 1.0), abs(a00 * a10 + a01 * a11 + a02 * a12),
                abs(a00 * a20 + a01 * a21 + a02 * a22), abs(a10 * a20 + a11 * a21 + a12 * a22))
    det = (a00 * (a11 * a22 - a12 * a21) - a01 * (a10 * a22 - a12 * a20)
           + a02 * (a10 * a21 - a11 * a20))
    return worst < 1e-13 and det > 0.5  # NaN fails both


def rotvec_from_matrix(matrix: np.ndarray) -> np.ndarray:
    """``Rotation.from_matrix(matrix).as_rotvec()`` (3,) bit for bit: on a proper rotation (the
    test of :func:`rotation_from_matrix`) scipy's conversion on Python floats
    (:mod:`orbitree.skills.rotation_bits`), on any other scipy's own."""
    m = np.asarray(matrix, dtype=float)
    if _valid_rotation(m):
        return rotvec_of_rotation(m)
    return Rotation.from_matrix(m).as_rotvec()


def rotvec_of(rotation: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) of a rotation matrix (3, 3): ``Rotation.from_matrix(R).as_rotvec()``
    to rounding, in closed form (the log map ``θ/(2 sin θ) · vee(R − Rᵀ)``); near half a turn,
    where that form loses digits, scipy's. Unchecked: for hot paths whose inputs are rotations."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rotation.tolist()
    x, y, z = r21 - r12, r02 - r20, r10 - r01
    cosine = 0.5 * (r00 + r11 + r22 - 1.0)
    if cosine < -0.9:  # beyond ~154 deg: the skew part is small against the angle
        return Rotation.from_matrix(rotation).as_rotvec()
    sine = 0.5 * math.sqrt(x * x + y * y + z * z)
    angle = math.atan2(sine, cosine)
    factor = 0.5 * angle / sine if sine > 1e-12 else 0.5 + angle * angle / 12.0
    return np.array([factor * x, factor * y, factor * z])


def rotation_of(rotvec: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of a rotation vector (3,): ``Rotation.from_rotvec(v).as_matrix()``
    to rounding, in closed form (Rodrigues). Unchecked: for hot paths."""
    x, y, z = np.asarray(rotvec, dtype=float).tolist()
    angle2 = x * x + y * y + z * z
    if angle2 < 1e-16:  # series: sin t / t = 1 - t²/6, (1 - cos t) / t² = 1/2 - t²/24
        a, b = 1.0 - angle2 / 6.0, 0.5 - angle2 / 24.0
    else:
        angle = math.sqrt(angle2)
        half = math.sin(0.5 * angle)
        a, b = math.sin(angle) / angle, 2.0 * half * half / angle2
    bxy, bxz, byz = b * x * y, b * x * z, b * y * z
    return np.array([[1.0 - b * (y * y + z * z), bxy - a * z, bxz + a * y],
                     [bxy + a * z, 1.0 - b * (x * x + z * z), byz - a * x],
                     [bxz - a * y, byz + a * x, 1.0 - b * (x * x + y * y)]])


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
    rotvec = rotvec_from_matrix(target[:3, :3] @ current[:3, :3].T)
    return np.concatenate([target[:3, 3] - current[:3, 3], rotvec])


def pose_distance(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """How far apart two poses (4, 4) are: (translation error norm in m, rotation angle of
    ``R_est^T R_true`` in rad)."""
    dt = float(np.linalg.norm(estimate[:3, 3] - truth[:3, 3]))
    dr = float(rotation_from_matrix(estimate[:3, :3].T @ truth[:3, :3]).magnitude())
    return dt, dr


def interpolate_pose(a: np.ndarray, b: np.ndarray, s: float) -> np.ndarray:
    """The pose ``s`` of the way from ``a`` to ``b`` (4, 4): position linear, rotation by slerp
    (``s`` outside [0, 1] extrapolates)."""
    turn = rotvec_from_matrix(a[:3, :3].T @ b[:3, :3])
    out = np.eye(4)
    out[:3, :3] = a[:3, :3] @ rotation_of_rotvec(s * turn)  # Rotation.from_rotvec(...).as_matrix(), bit for bit
    out[:3, 3] = a[:3, 3] + s * (b[:3, 3] - a[:3, 3])
    return out
