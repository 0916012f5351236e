"""The contact model keeps the inverse of the last passive pose it inverted: the same values as
invert_pose, read-only, and a moved passive body gets its own."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills.contact import _passive_inverse
from orbitree.skills.contact_geometry import invert_pose


def _pose(rotvec: list[float], xyz: list[float]) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = Rotation.from_rotvec(rotvec).as_matrix(), xyz
    return pose


def test_kept_inverse_is_invert_pose_and_follows_a_moved_body() -> None:
    passive = _pose([0.1, -0.2, 0.3], [0.4, 0.1, -0.2])
    first = _passive_inverse(passive)
    assert first.tobytes() == invert_pose(passive).tobytes()
    assert _passive_inverse(passive.copy()) is first  # the same pose, another array: kept
    with pytest.raises(ValueError, match="read-only"):
        first[0, 3] = 1.0
    moved = passive.copy()
    moved[0, 3] += 1e-12
    second = _passive_inverse(moved)
    assert second is not first and second.tobytes() == invert_pose(moved).tobytes()
