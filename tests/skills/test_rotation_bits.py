"""The closed forms of rotation_bits equal scipy's conversions bit for bit (the flagship's results
stay the same with them), and the hot paths that use them still give scipy's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills.capture import envelope_error
from orbitree.skills.pbvs import pbvs_error
from orbitree.skills.rotation_bits import rotation_of_rotvec, rotvec_of_rotation
from orbitree.skills.se3 import interpolate_pose, pose_error, rotvec_from_matrix


def _rotvecs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random rotations, tiny ones (either side of scipy's 1e-3 rad series), near half turns, the
    axis-aligned half turns (each branch of the matrix -> quaternion choice) and the identity."""
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    return np.vstack([Rotation.random(n, rng=rng).as_rotvec(),
                      axes * 10.0 ** rng.uniform(-12, -2, (n, 1)),
                      axes * (np.pi - 10.0 ** rng.uniform(-12, -1, (n, 1))),
                      [[0, 0, 0], [1e-3, 0, 0], [np.pi, 0, 0], [0, np.pi, 0], [0, 0, -np.pi]]])


def test_rotvec_of_rotation_equals_scipy_assume_valid_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for v in _rotvecs(rng, 3000):
        m = Rotation.from_rotvec(v).as_matrix()
        # and a near-rotation (what check_pose lets through: pbvs_error's product of two poses)
        for matrix in (m, m + rng.normal(0.0, 1e-7, (3, 3))):
            expected = Rotation.from_matrix(matrix, assume_valid=True).as_rotvec()
            assert rotvec_of_rotation(matrix).tobytes() == expected.tobytes()


def test_rotation_of_rotvec_equals_scipy_bit_for_bit() -> None:
    rng = np.random.default_rng(8)
    for v in _rotvecs(rng, 3000):
        assert rotation_of_rotvec(v).tobytes() == Rotation.from_rotvec(v).as_matrix().tobytes()


def test_rotvec_from_matrix_takes_scipy_path_for_a_matrix_that_is_not_a_rotation() -> None:
    skewed = Rotation.from_rotvec([0.3, -0.2, 0.1]).as_matrix() * np.array([1.0, 1.0 + 1e-9, 1.0])
    assert rotvec_from_matrix(skewed).tobytes() == Rotation.from_matrix(skewed).as_rotvec().tobytes()
    with pytest.raises(ValueError, match="determinant"):
        rotvec_from_matrix(np.diag([1.0, 1.0, -1.0]))


def _pose(rng: np.random.Generator) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.random(rng=rng).as_matrix()
    pose[:3, 3] = rng.normal(size=3)
    return pose


def test_hot_paths_give_scipys_numbers_bit_for_bit() -> None:
    rng = np.random.default_rng(9)
    for _ in range(300):
        a, b, s = _pose(rng), _pose(rng), float(rng.uniform(-0.5, 1.5))
        rotvec = Rotation.from_matrix(b[:3, :3] @ a[:3, :3].T).as_rotvec()
        assert pose_error(a, b).tobytes() == np.concatenate([b[:3, 3] - a[:3, 3], rotvec]).tobytes()
        theta_u = Rotation.from_matrix(b[:3, :3] @ a[:3, :3].T, assume_valid=True).as_rotvec()
        assert pbvs_error(a, b)[3:].tobytes() == theta_u.tobytes()
        turn = Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).as_rotvec()
        expected = a[:3, :3] @ Rotation.from_rotvec(s * turn).as_matrix()
        assert interpolate_pose(a, b, s)[:3, :3].tobytes() == expected.tobytes()
        docked = _pose(rng)
        tcp2target = np.linalg.solve(b, a)
        relative = tcp2target[:3, :3] @ docked[:3, :3].T
        turn_deg = np.degrees(Rotation.from_matrix(relative, assume_valid=True).as_rotvec())
        error = envelope_error(a, b, docked)
        assert (error.rx_deg, error.ry_deg, error.rz_deg) == tuple(float(v) for v in turn_deg)
