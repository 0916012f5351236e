"""The arm controller's damped least squares and speed scaling on its own checked values, its
compiled SVD, and the kinematics' tool check kept for the last tool: the same joint velocities as
kin.dls_from_svd and the same SVD as numpy's, bit for bit; bad settings refused when the arm is
built, a bad tool refused after a good one."""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.drivers.sim_robot import UR10E_HOME_Q, SimRobot
from orbitree.drivers.sim_robot_control import _scaled
from orbitree.drivers.sim_robot_svd import matches_numpy, thin_svd, undamped_dls
from orbitree.skills import kinematics as kin


@pytest.mark.parametrize("threshold", [0.0, 0.05, 10.0])  # never damped, the usual, always damped
def test_controller_dls_equals_dls_from_svd_bit_for_bit(threshold: float) -> None:
    robot = SimRobot(damping=0.05, singular_threshold=threshold)
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(40):
        q = UR10E_HOME_Q + rng.normal(0.0, 0.6, 6)
        jacobian = kin.geometric_jacobian(robot._table, q, robot._tool)
        twist = rng.normal(0.0, 0.05, 6)
        svd = np.linalg.svd(jacobian, full_matrices=False)
        expected = kin.dls_from_svd(svd, twist, 0.05, singular_threshold=threshold)
        if svd[1][-1] < threshold and np.max(np.abs(kin.dls_from_svd(svd, twist)) / robot._speed_limit) > 1.0:
            continue  # the singular zone's protective stop, not the solution
        assert robot._dls(jacobian, twist).tobytes() == expected.tobytes()
        compared += 1
    assert compared >= 30 and not robot.protective_stop


@pytest.mark.parametrize("setting", [{"damping": -0.1}, {"singular_threshold": float("nan")}])
def test_bad_damping_settings_are_refused_when_the_arm_is_built(setting: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be finite and >= 0"):
        SimRobot(**setting)


def test_a_bad_tool_is_refused_after_a_good_one_was_kept() -> None:
    table = SimRobot()._table
    tool = np.eye(4)
    tool[2, 3] = 0.2
    good = kin.pose_and_jacobian(table, UR10E_HOME_Q, tool)
    again = kin.pose_and_jacobian(table, UR10E_HOME_Q, tool.copy())  # the same values: not checked again
    assert good[0].tobytes() == again[0].tobytes() and good[1].tobytes() == again[1].tobytes()
    bad = tool.copy()
    bad[:3, :3] *= 2.0
    with pytest.raises(ValueError, match="tool rotation block"):
        kin.pose_and_jacobian(table, UR10E_HOME_Q, bad)
    tool[0, 0] = np.nan  # changed in place after being kept: checked again
    with pytest.raises(ValueError, match="tool must be finite"):
        kin.pose_and_jacobian(table, UR10E_HOME_Q, tool)


def test_controller_scaling_equals_uniform_scale_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    robot = SimRobot()
    jacobian = kin.geometric_jacobian(robot._table, UR10E_HOME_Q, robot._tool)
    scaled = 0
    for _ in range(200):
        values = rng.normal(0.0, 0.02, 6) * rng.choice([0.1, 1.0, 100.0])
        limit = 8.0 * 0.002
        expected, factor = kin.uniform_scale(values, limit)
        scaled += factor < 1.0
        assert _scaled(values, limit).tobytes() == expected.tobytes()
        qd, _ = kin.uniform_scale(values, robot._speed_limit)
        assert robot._limit_speed(values, jacobian).tobytes() == (qd * robot._tcp_scale(jacobian @ qd)).tobytes()
    assert 20 < scaled < 180


def test_compiled_svd_is_numpys_bit_for_bit_on_the_arms_jacobians() -> None:
    assert matches_numpy(count=50, seed=4)
    robot = SimRobot()
    rng = np.random.default_rng(8)
    for k in range(300):
        q = UR10E_HOME_Q + rng.normal(0.0, 0.8, 6)
        if k % 10 == 0:
            q[4] = 0.0  # the wrist singularity (q5 = 0): a zero singular value
        jacobian = kin.geometric_jacobian(robot._table, q, robot._tool)
        expected, got = np.linalg.svd(jacobian, full_matrices=False), thin_svd(jacobian)
        for a, b in zip(expected, got, strict=True):
            assert a.tobytes() == b.tobytes() and a.flags.c_contiguous and b.flags.c_contiguous
        twist = rng.normal(0.0, 0.05, 6)  # and a product with them sums as numpy's did
        assert (got[2].T @ (got[0].T @ twist)).tobytes() == (expected[2].T @ (expected[0].T @ twist)).tobytes()


def test_compiled_undamped_dls_is_the_controllers_numpy_expression_and_leaves_the_damped_zone_to_it() -> None:
    robot = SimRobot(damping=0.05, singular_threshold=0.05)
    rng = np.random.default_rng(11)
    taken = declined = 0
    for k in range(200):
        q = UR10E_HOME_Q + rng.normal(0.0, 0.8, 6)
        if k % 8 == 0:
            q[4] = rng.normal(0.0, 0.01)  # near the wrist singularity: the damped zone
        jacobian = kin.geometric_jacobian(robot._table, q, robot._tool)
        twist = rng.normal(0.0, 0.05, 6)
        u, sigma, vt = np.linalg.svd(jacobian, full_matrices=False)
        got = undamped_dls(jacobian, twist, 0.05)
        if sigma[-1] < 0.05:
            assert got is None
            declined += 1
            continue
        assert got is not None and got.flags.c_contiguous
        assert got.tobytes() == (vt.T @ (sigma / (sigma**2 + 0.0**2) * (u.T @ twist))).tobytes()
        assert got.tobytes() == kin.dls_from_svd((u, sigma, vt), twist, 0.05, singular_threshold=0.05).tobytes()
        taken += 1
    assert taken >= 150 and declined >= 20
    assert undamped_dls(jacobian, np.zeros(6, dtype=int), 0.05) is None  # not a float twist: numpy's path


def _speed_run(seed: int) -> list[bytes]:
    """The joints of an arm driven by drawn speed_l commands (slow, fast: every limit binding),
    period by period."""
    robot = SimRobot(damping=0.05, singular_threshold=0.05, period=0.002)
    rng = np.random.default_rng(seed)
    states = []
    for k in range(150):
        if k % 25 != 24:  # a pause now and then: the watchdog's ramp to rest
            robot.speed_l(rng.normal(0.0, (0.05, 0.6, 3.0)[k % 3], 6), acceleration=(0.5, 5.0)[k % 2])
        robot.step(0.008)
        states.append(robot.q.tobytes() + robot._qd.tobytes())
    return states


def test_compiled_speed_period_moves_the_arm_as_the_controllers_numpy_code(monkeypatch) -> None:
    from orbitree.drivers import sim_robot_control, sim_robot_svd

    assert sim_robot_svd.period_matches_numpy(count=300, seed=6)
    compiled = [_speed_run(seed) for seed in (1, 2)]
    monkeypatch.setattr(sim_robot_control, "speed_period", lambda *args: None)
    assert compiled == [_speed_run(seed) for seed in (1, 2)]
