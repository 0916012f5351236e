"""What the ur_rtde driver (:class:`~orbitree.drivers.ur_robot.URRobot`) and its callers share.

The errors it raises (:class:`URRobotError` and its kinds: not ready, connection, command
refused) and the conversions between a (4, 4) homogeneous pose and UR's pose vector
``[x, y, z, rx, ry, rz]`` (m, axis-angle rad): :func:`pose_to_ur`, :func:`pose_from_ur`.
:mod:`orbitree.drivers.ur_robot` re-exports these names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import DriverDisconnected

_ORTHONORMAL_TOLERANCE = 1e-6


class URRobotError(RuntimeError):
    """Base of the errors URRobot raises."""


class URNotReadyError(URRobotError):
    """The controller is reachable but refuses commands (local mode, protective stop...)."""


class URConnectionError(URRobotError, DriverDisconnected):
    """The controller cannot be reached, the link dropped, or reconnection gave up."""


class URCommandError(URRobotError):
    """ur_rtde returned False for a command: the controller did not accept it."""


def pose_to_ur(tcp2base: np.ndarray) -> list[float]:
    """(4, 4) homogeneous pose → UR pose ``[x, y, z, rx, ry, rz]`` (m, axis-angle rad)."""
    matrix = np.asarray(tcp2base, dtype=float)
    if matrix.shape != (4, 4):
        raise ValueError(f"pose must be a (4, 4) matrix, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"pose must be finite, got {matrix.tolist()}")
    rotation = matrix[:3, :3]
    error = np.abs(rotation.T @ rotation - np.eye(3)).max()
    if error > _ORTHONORMAL_TOLERANCE or np.linalg.det(rotation) < 0:
        raise ValueError(
            f"pose rotation must be orthonormal with det +1 (max |RᵀR - I| = {error:.2e})"
        )
    rotvec = Rotation.from_matrix(rotation).as_rotvec()
    return [float(v) for v in (*matrix[:3, 3], *rotvec)]


def pose_from_ur(pose: Any) -> np.ndarray:
    """UR pose ``[x, y, z, rx, ry, rz]`` → (4, 4) homogeneous pose."""
    values = _vector6(pose, "UR pose")
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_rotvec(values[3:]).as_matrix()
    matrix[:3, 3] = values[:3]
    return matrix


def _vector6(values: Any, what: str) -> np.ndarray:
    vector = np.asarray(values, dtype=float).reshape(-1)
    if vector.shape != (6,):
        raise ValueError(f"{what} must have 6 values, got {vector.shape[0]}")
    if not np.all(np.isfinite(vector)):
        raise ValueError(f"{what} must be finite, got {vector.tolist()}")
    return vector
