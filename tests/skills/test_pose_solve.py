"""The poses' compiled solve: numpy's bits, numpy's errors, numpy's call for anything else."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import pose_solve, solve_kernel
from orbitree.skills.pose_solve import solve_poses


def _poses(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    poses = []
    for rotation in Rotation.random(count, random_state=seed):
        pose = np.eye(4)
        pose[:3, :3] = rotation.as_matrix()
        pose[:3, 3] = rng.normal(0.0, 0.4, 3)
        poses.append(pose)
    return poses


def test_the_kernel_gives_numpys_bits_and_layout_on_poses_it_was_not_checked_on():
    assert solve_kernel.matches_numpy()
    poses = _poses(300, seed=7)
    for a, b in zip(poses[::2], poses[1::2], strict=True):
        expected = np.linalg.solve(a, b)
        got = solve_kernel.solve(a, b)
        assert got.tobytes() == expected.tobytes()
        assert got.flags.c_contiguous
        assert solve_poses(a, b).tobytes() == expected.tobytes()


def test_read_only_poses_take_numpys_call():
    a, b = _poses(2, seed=3)
    a.flags.writeable = False
    b.flags.writeable = False
    assert solve_poses(a, b).tobytes() == np.linalg.solve(a, b).tobytes()


def test_a_singular_matrix_raises_numpys_error():
    singular = np.eye(4)
    singular[2] = singular[1]
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        solve_poses(singular, np.eye(4))


def test_a_nan_pose_gives_numpys_result_not_an_error():
    a = np.eye(4)
    a[0, 3] = np.nan
    expected = np.linalg.solve(a, np.eye(4))
    got = solve_poses(a, np.eye(4))
    assert np.array_equal(got, expected, equal_nan=True)


def test_other_shapes_and_layouts_take_numpys_call():
    a, b = _poses(2, seed=5)
    fortran = np.asfortranarray(b)
    assert solve_poses(a, fortran).tobytes() == np.linalg.solve(a, fortran).tobytes()
    vector = np.array([1.0, 2.0, 3.0, 1.0])
    assert solve_poses(a, vector).tobytes() == np.linalg.solve(a, vector).tobytes()
    stacked = np.stack([a, b])
    assert solve_poses(stacked, stacked).shape == (2, 4, 4)


def test_where_the_check_fails_numpys_call_is_kept(monkeypatch):
    monkeypatch.setattr(pose_solve, "_KERNEL", [None])
    a, b = _poses(2, seed=9)
    assert solve_poses(a, b).tobytes() == np.linalg.solve(a, b).tobytes()
