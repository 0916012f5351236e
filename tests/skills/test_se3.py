"""se3's hot-path helpers give scipy's and numpy's own results bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills.se3 import interpolate_pose, pose_distance, pose_error, rotation_from_matrix, vector_norm


def _products(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = Rotation.random(count, random_state=rng).as_matrix()
    b = Rotation.random(count, random_state=rng).as_matrix()
    return np.einsum("nji,njk->nik", a, b)  # a_i^T b_i: a rotation to rounding


def test_rotation_from_matrix_matches_scipy_bit_for_bit_on_rotations_and_near_rotations() -> None:
    rng = np.random.default_rng(3)
    matrices = _products(3000, 1)
    # a third pushed off the rotations by 1e-16 .. 1e-6: scipy re-orthogonalises those past its
    # 1e-12 test, and so must the helper
    noise = rng.normal(size=matrices.shape) * 10.0 ** rng.uniform(-16, -6, (len(matrices), 1, 1))
    matrices[::3] += noise[::3]
    for m in matrices:
        assert np.array_equal(rotation_from_matrix(m).as_quat(), Rotation.from_matrix(m).as_quat())


@pytest.mark.parametrize("matrix", [np.diag([1.0, 1.0, -1.0]), np.zeros((3, 3))])
def test_rotation_from_matrix_refuses_what_scipy_refuses(matrix: np.ndarray) -> None:
    with pytest.raises(ValueError, match="determinant"):
        Rotation.from_matrix(matrix)
    with pytest.raises(ValueError, match="determinant"):
        rotation_from_matrix(matrix)


def test_interpolate_pose_and_pose_error_keep_scipys_numbers() -> None:
    rng = np.random.default_rng(9)
    for a_rot, b_rot in zip(_products(200, 2), _products(200, 4), strict=True):
        a, b = np.eye(4), np.eye(4)
        a[:3, :3], b[:3, :3] = a_rot, b_rot
        a[:3, 3], b[:3, 3] = rng.normal(size=3), rng.normal(size=3)
        s = float(rng.uniform(-0.2, 1.2))
        turn = Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).as_rotvec()
        expected = np.eye(4)
        expected[:3, :3] = a[:3, :3] @ Rotation.from_rotvec(s * turn).as_matrix()
        expected[:3, 3] = a[:3, 3] + s * (b[:3, 3] - a[:3, 3])
        assert np.array_equal(interpolate_pose(a, b, s), expected)
        rotvec = Rotation.from_matrix(b[:3, :3] @ a[:3, :3].T).as_rotvec()
        assert np.array_equal(pose_error(a, b), np.concatenate([b[:3, 3] - a[:3, 3], rotvec]))
        angle = float(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude())
        assert pose_distance(a, b)[1] == angle


def test_vector_norm_is_numpys_norm_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    for v in rng.normal(size=(500, 6)) * 10.0 ** rng.uniform(-8, 4, (500, 1)):
        assert vector_norm(v[:3]) == float(np.linalg.norm(v[:3]))
        assert vector_norm(v[3:]) == float(np.linalg.norm(v[3:]))
    assert vector_norm([3.0, 4.0]) == 5.0
    assert np.isnan(vector_norm(np.array([np.nan, 0.0, 0.0])))


def test_check_fixed_pose_passes_and_refuses_what_check_pose_does_however_often_asked() -> None:
    """The remembered poses are those that passed, by their values: a pose passes again (the same
    array back), a pose changed in place to an invalid one is refused, an invalid one every time."""
    from orbitree.skills.se3 import check_fixed_pose, check_pose

    rng = np.random.default_rng(5)
    pose = np.eye(4)
    pose[:3, :3] = Rotation.random(random_state=rng).as_matrix()
    pose[:3, 3] = rng.normal(size=3)
    for _ in range(3):
        assert check_fixed_pose(pose, "tool") is pose
    assert np.array_equal(check_fixed_pose(pose.tolist(), "tool"), check_pose(pose.tolist(), "tool"))
    pose[0, 0] += 1e-3  # no longer a rotation: the same array, other values
    for _ in range(2):
        with pytest.raises(ValueError, match="tool rotation block is not a proper rotation"):
            check_fixed_pose(pose, "tool")
    with pytest.raises(ValueError, match=r"tool must have shape \(4, 4\)"):
        check_fixed_pose(np.eye(3), "tool")
    nan = np.eye(4)
    nan[0, 3] = np.nan
    with pytest.raises(ValueError, match="tool must be finite"):
        check_fixed_pose(nan, "tool")
