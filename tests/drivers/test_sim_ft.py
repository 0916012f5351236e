"""The simulated wrist sensor against the UR10e datasheet: noise, bias, drift, range, lag; and an
arm built with kinematic errors reporting its nominal pose."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orbitree.drivers.sim_ft import IDEAL_FT, UR10E_FT, FTSensor, FTSensorModel
from orbitree.drivers.sim_robot import UR10E_HOME_Q, SimRobot, perturbed_table
from orbitree.language.world_spec import RobotSpec
from orbitree.runtime.devices import _sim_arm_errors
from orbitree.skills import kinematics as kin

TICK = 0.008  # the flagship's 125 Hz


def readings_at_rest(model: FTSensorModel, seed: int, count: int, zero: bool = True) -> np.ndarray:
    robot = SimRobot(ft=model, period=TICK, seed=seed)
    robot.step(0.2)
    if zero:
        robot.zero_ft()
    out = []
    for _ in range(count):
        robot.step(TICK)
        out.append(robot.read().wrench)
    return np.array(out)


def test_the_wrist_reading_at_rest_has_the_datasheet_noise():
    wrench = readings_at_rest(UR10E_FT, seed=3, count=500)
    std = wrench.std(axis=0)
    # UR10e datasheet precision: ±5.0 N and ±0.2 N·m, read as one standard deviation
    np.testing.assert_allclose(std[:3], 5.0, rtol=0.12)
    np.testing.assert_allclose(std[3:], 0.2, rtol=0.12)
    # zeroed at rest: what is left is noise (and a little drift), centred on zero
    assert np.all(np.abs(wrench.mean(axis=0)[:3]) < 1.0)


def test_the_mission_default_sensor_is_the_ur10e_datasheet_and_ideal_is_exact():
    default = _sim_arm_errors(RobotSpec(), seed=0, index=0)["ft"]
    assert default == UR10E_FT
    assert (default.noise, default.range) == ((5.0, 0.2), (100.0, 10.0))
    ideal = _sim_arm_errors(RobotSpec(ft_sensor="ideal"), seed=0, index=0)["ft"]
    robot = SimRobot(ft=ideal, period=TICK)
    robot.set_external_wrench(np.array([0.0, 3.0, -40.0, 0.1, 0.0, 0.0]))
    robot.step(TICK)
    np.testing.assert_allclose(robot.read().wrench, [0.0, 3.0, -40.0, 0.1, 0.0, 0.0], atol=1e-9)


def test_the_bias_is_drawn_per_run_with_what_accuracy_leaves_over_precision_and_zeroing_removes_it():
    offsets = np.array([FTSensor(UR10E_FT, np.random.default_rng(seed)).offset for seed in range(400)])
    # sqrt(5.5² - 5.0²) = 2.29 N, sqrt(0.5² - 0.2²) = 0.46 N·m
    np.testing.assert_allclose(offsets[:, :3].std(), 2.29, rtol=0.08)
    np.testing.assert_allclose(offsets[:, 3:].std(), 0.458, rtol=0.08)
    quiet = FTSensorModel(bias=UR10E_FT.bias)
    unzeroed = readings_at_rest(quiet, seed=5, count=3, zero=False)
    assert np.linalg.norm(unzeroed[-1, :3]) > 0.5  # the offset of this run shows
    np.testing.assert_allclose(readings_at_rest(quiet, seed=5, count=3)[-1], 0.0, atol=1e-12)


def test_the_offset_drifts_as_a_random_walk_per_root_minute():
    model = FTSensorModel(drift=(1.0, 0.05))
    moved = []
    for seed in range(300):
        sensor = FTSensor(model, np.random.default_rng(seed))
        sensor.advance(0.0, np.zeros(6))
        before = sensor.offset.copy()
        sensor.advance(240.0, np.zeros(6))  # four minutes: 2 N (0.1 N·m) of standard deviation
        moved.append(sensor.offset - before)
    moved = np.array(moved)
    np.testing.assert_allclose(moved[:, :3].std(), 2.0, rtol=0.08)
    np.testing.assert_allclose(moved[:, 3:].std(), 0.1, rtol=0.08)


def test_each_axis_saturates_at_the_datasheet_range():
    robot = SimRobot(ft=FTSensorModel(range=UR10E_FT.range), period=TICK)
    robot.set_external_wrench(np.array([150.0, -30.0, -250.0, 12.0, 0.0, -4.0]))
    robot.step(TICK)
    np.testing.assert_allclose(robot.read().wrench, [100.0, -30.0, -100.0, 10.0, 0.0, -4.0])


def test_a_step_of_force_comes_through_the_first_order_filter_with_its_lag():
    model = FTSensorModel(bandwidth=30.0)
    robot = SimRobot(ft=model, period=0.002)
    robot.read()
    robot.set_external_wrench(np.array([0.0, 0.0, 50.0, 0.0, 0.0, 0.0]))
    alpha = 1.0 - math.exp(-2.0 * math.pi * 30.0 * 0.002)
    seen = []
    for n in range(1, 11):
        robot.step(0.002)
        seen.append(robot.read().wrench[2])
        assert seen[-1] == pytest.approx(50.0 * (1.0 - (1.0 - alpha) ** n), rel=1e-9)
    assert model.lag == pytest.approx(5.3e-3, abs=1e-4)
    assert seen[1] < 0.63 * 50.0 < seen[2]  # 63 % between 4 and 6 ms: the 5.3 ms lag
    assert IDEAL_FT.lag == 0.0


def test_an_arm_built_with_kinematic_errors_reports_its_nominal_pose_while_its_tool_is_elsewhere():
    tool = np.eye(4)
    tool[2, 3] = 0.2
    gaps = []
    for seed in range(50):
        built = perturbed_table(kin.UR10E, np.random.default_rng(seed), 1e-4, math.radians(0.01))
        robot = SimRobot(tool=tool, true_table=built, q0=np.array(UR10E_HOME_Q))
        reported, real = robot.read().tcp2base, robot.tcp2base()
        np.testing.assert_allclose(reported, kin.forward_kinematics(kin.UR10E, robot.read().q, tool))
        gaps.append(np.linalg.norm(real[:3, 3] - reported[:3, 3]))
    # 0.1 mm and 0.01 deg per parameter: the TCP is off by about half a millimetre at home
    assert 0.2e-3 < np.median(gaps) < 0.8e-3
    assert max(gaps) < 1.5e-3
