"""The compiled chain (skills/kinematics_kernels.py) against the numpy code it replaces, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_robot_config import perturbed_table
from orbitree.skills import kinematics as kin
from orbitree.skills import kinematics_kernels as kk

TABLES = {
    "ur10e": kin.UR10E,
    "ur10e perturbed": perturbed_table(kin.UR10E, np.random.default_rng(7), 2e-3, 2e-3),
    "kr5 (Hayati-Mirmirani joint)": kin.KUKA_KR5_SIXX,
}


def _reference(table: kin.DHTable, q: np.ndarray, tool: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    thetas = np.array([a + o for a, o in zip(q.tolist(), table.theta_offset, strict=True)])
    frames = kk.frames_numpy(kin._fixed_links(table), thetas, tool)
    return frames, kk.jacobian_numpy(frames)


@pytest.mark.parametrize("name", TABLES)
def test_pose_and_jacobian_and_link_frames_give_the_numpy_codes_bits(name: str) -> None:
    table = TABLES[name]
    rng = np.random.default_rng(1)
    assert kk.matches_numpy(kin._fixed_links(table), count=500, seed=3)
    for k in range(1500):
        q = rng.uniform(-2 * np.pi, 2 * np.pi, table.n_joints)
        if k % 5 == 0:
            q[rng.integers(table.n_joints)] = 0.0  # zero angles: signed zeros in the products
        tool = None
        if k % 3:
            tool = np.eye(4)
            tool[:3, :3] = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
            tool[:3, 3] = rng.normal(size=3) * 0.1
        if tool is not None and k % 7 == 1:  # read-only and Fortran-ordered tools reach the kernel
            tool.setflags(write=False)  # as its one compiled signature
        elif tool is not None and k % 7 == 2:
            tool = np.asfortranarray(tool)
        frames, jacobian = _reference(table, q, tool)
        pose, got_jacobian = kin.pose_and_jacobian(table, q, tool)
        assert pose.tobytes() == frames[-1].tobytes()
        assert got_jacobian.tobytes() == jacobian.tobytes()
        assert kin.link_frames(table, q, tool).tobytes() == frames.tobytes()


def test_numpy_code_serves_where_the_kernel_was_found_to_differ(monkeypatch) -> None:
    q = np.array([0.3, -1.2, 1.9, -0.4, 1.1, 0.2])
    compiled = kin.pose_and_jacobian(kin.UR10E, q)
    called = []
    monkeypatch.setattr(kk, "_VERIFIED", [False])
    monkeypatch.setattr(kk, "chain", lambda *args: called.append(args))
    numpy_pose, numpy_jacobian = kin.pose_and_jacobian(kin.UR10E, q)
    assert not called
    assert numpy_pose.tobytes() == compiled[0].tobytes() and numpy_jacobian.tobytes() == compiled[1].tobytes()


def test_kernel_that_rounds_differently_is_refused(monkeypatch) -> None:
    """matches_numpy notices a kernel whose frames are off by one unit in the last place."""
    compiled = kk.chain

    def unfused(fixed, thetas, tool, with_tool, frames, jacobian):
        compiled(fixed, thetas, tool, with_tool, frames, jacobian)
        frames[1:] = kk.frames_numpy(fixed, thetas, tool if with_tool else None)[1:] * (1.0 + 2.0 ** -52)

    monkeypatch.setattr(kk, "chain", unfused)
    assert not kk.matches_numpy(kin._fixed_links(kin.UR10E), count=5)


def test_inputs_are_still_checked() -> None:
    with pytest.raises(ValueError, match="q must have shape"):
        kin.pose_and_jacobian(kin.UR10E, np.zeros(5))
    with pytest.raises(ValueError, match="q must be finite"):
        kin.link_frames(kin.UR10E, np.array([0.0, np.nan, 0, 0, 0, 0]))
    bad = np.eye(4)
    bad[0, 0] = 2.0
    with pytest.raises(ValueError, match="tool rotation block"):
        kin.pose_and_jacobian(kin.UR10E, np.zeros(6), bad)
