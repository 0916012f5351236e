"""scipy's rotation conversions on one rotation, bit for bit, on Python floats (for hot paths).

``Rotation.from_matrix(R, assume_valid=True).as_rotvec()`` and
``Rotation.from_rotvec(v).as_matrix()`` cost 10-12 µs a call on one rotation, nearly all of it
scipy's array-API dispatch around a few dozen floating-point operations. The functions here make
the same operations in the same order on Python floats (IEEE doubles, the C library's ``sqrt``,
``atan2``, ``sin`` and ``cos``, as scipy's compiled backend uses), so their results are equal to
scipy's to the bit, at about a tenth of the cost:

- matrix -> quaternion: the largest of ``R00, R11, R22, trace`` picks the well-conditioned
  formula (Markley's method, the first maximum on ties), then the quaternion is divided by its
  norm;
- quaternion -> rotation vector: the quaternion with ``w >= 0`` (sign rules of scipy's canonical
  form), ``θ = 2 atan2(|xyz|, w)``, the vector ``θ / sin(θ/2) · xyz`` (a series below 1e-3 rad);
- rotation vector -> quaternion -> matrix: ``sin(θ/2)/θ`` (a series below 1e-3 rad), then the
  usual quadratic form of the quaternion.

tests/skills/test_rotation_bits.py compares them with scipy bit for bit on random, small-angle
and near-half-turn rotations, so a scipy that changed its arithmetic would be noticed there.
Unchecked inputs: ``matrix`` must be a proper rotation (3, 3) (scipy's ``assume_valid``), the
vector a finite (3,).
"""

from __future__ import annotations

import math

import numpy as np


def rotvec_of_rotation(matrix: np.ndarray) -> np.ndarray:
    """``Rotation.from_matrix(matrix, assume_valid=True).as_rotvec()`` (3,) to the bit, for one
    proper rotation matrix (3, 3)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = matrix.tolist()
    trace = m00 + m11 + m22
    case, largest = 0, m00  # the first of the four largest, as numpy's and scipy's argmax
    if m11 > largest:
        case, largest = 1, m11
    if m22 > largest:
        case, largest = 2, m22
    if trace > largest:
        case = 3
    if case == 0:
        x, y, z, w = 1 - trace + 2 * m00, m10 + m01, m20 + m02, m21 - m12
    elif case == 1:
        x, y, z, w = m01 + m10, 1 - trace + 2 * m11, m21 + m12, m02 - m20
    elif case == 2:
        x, y, z, w = m02 + m20, m12 + m21, 1 - trace + 2 * m22, m10 - m01
    else:
        x, y, z, w = m21 - m12, m02 - m20, m10 - m01, 1 + trace
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    if w < 0 or (w == 0 and (x < 0 or (x == 0 and (y < 0 or (y == 0 and z < 0))))):
        x, y, z, w = -x, -y, -z, -w  # the canonical cover: 0 <= angle <= pi
    angle = 2 * math.atan2(math.sqrt(x * x + y * y + z * z), w)
    if angle <= 1e-3:
        angle2 = angle * angle
        scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    else:
        scale = angle / math.sin(angle / 2)
    return np.array([scale * x, scale * y, scale * z])


def rotation_of_rotvec(rotvec: np.ndarray) -> np.ndarray:
    """``Rotation.from_rotvec(rotvec).as_matrix()`` (3, 3) to the bit, for one rotation vector (3,)."""
    vx, vy, vz = np.asarray(rotvec, dtype=float).tolist()
    angle = math.sqrt(vx * vx + vy * vy + vz * vz)
    if angle <= 1e-3:
        angle2 = angle * angle
        scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    else:
        scale = math.sin(angle / 2) / angle
    x, y, z, w = scale * vx, scale * vy, scale * vz, math.cos(angle / 2)
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    return np.array([[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                     [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
                     [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]])
