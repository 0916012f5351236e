"""Tests of the simulated UR10e: speeds, limits, moves, stops, watchdog, protective stop, F/T."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import Robot, RobotState
from orbitree.drivers.sim_ft import FTSensorModel
from orbitree.drivers.sim_robot import UR10E_HOME_Q, SimRobot, SimRobotLimits
from orbitree.skills import kinematics as kin
from orbitree.skills import se3

TICK = 0.008  # 125 Hz executive tick; the robot integrates at 2 ms inside each step


def _stream_speed(robot: SimRobot, twist: np.ndarray, seconds: float, a: float = 0.5) -> None:
    for _ in range(round(seconds / TICK)):
        robot.speed_l(twist, a)
        robot.step(TICK)


def _run_until_done(robot: SimRobot, timeout: float) -> float:
    start = robot.time
    while not robot.motion_done() and robot.time - start < timeout:
        robot.step(TICK)
    return robot.time - start


def _direction(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def test_sim_robot_implements_the_robot_protocol_and_starts_at_home() -> None:
    robot = SimRobot()
    assert isinstance(robot, Robot)
    state = robot.read()
    assert isinstance(state, RobotState)
    np.testing.assert_allclose(state.q, UR10E_HOME_Q)
    np.testing.assert_allclose(state.tcp2base, kin.forward_kinematics(kin.UR10E, state.q))
    assert robot.motion_done() and not state.moving and not state.protective_stop


def test_commanded_twist_moves_the_tcp_by_twist_times_time_after_the_ramp() -> None:
    robot = SimRobot()
    twist = np.array([0.05, -0.03, 0.02, 0.0, 0.0, 0.1])
    _stream_speed(robot, twist, 0.2)  # ramp at 0.5 m/s^2 takes 0.1 s
    before = robot.read()
    _stream_speed(robot, twist, 1.0)
    after = robot.read()
    moved = after.tcp2base[:3, 3] - before.tcp2base[:3, 3]
    assert np.linalg.norm(moved - twist[:3]) <= 0.01 * np.linalg.norm(twist[:3])
    turned = Rotation.from_matrix(after.tcp2base[:3, :3] @ before.tcp2base[:3, :3].T).as_rotvec()
    assert np.linalg.norm(turned - twist[3:]) <= 0.01 * np.linalg.norm(twist[3:])
    np.testing.assert_allclose(after.tcp_twist, twist, atol=1e-4)


def test_twist_above_tcp_speed_limit_is_clipped_to_the_limit_with_direction_kept() -> None:
    robot = SimRobot()
    twist = np.array([1.6, 0.8, -0.4, 0.0, 0.0, 0.0])  # 1.83 m/s, limit 1.0 m/s
    _stream_speed(robot, twist, 0.35, a=5.0)
    state = robot.read()
    assert not state.protective_stop
    # Within 0.5 %: one explicit-Euler period of Jacobian change at 1 m/s.
    assert np.linalg.norm(state.tcp_twist[:3]) == pytest.approx(1.0, rel=5e-3)
    assert np.linalg.norm(state.tcp_twist[:3]) <= 1.0 + 1e-9
    np.testing.assert_allclose(_direction(state.tcp_twist[:3]), _direction(twist[:3]), atol=5e-3)
    np.testing.assert_allclose(state.tcp_twist[3:], 0.0, atol=5e-3)


def test_joint_speed_limit_is_respected_for_a_large_rotational_command() -> None:
    robot = SimRobot()
    twist = np.array([0.0, 0.0, 0.0, 0.0, 3.0, 0.0])  # below the TCP limit, too fast for joints
    worst = 0.0
    for _ in range(round(0.6 / TICK)):
        robot.speed_l(twist, 100.0)
        robot.step(TICK)
        worst = max(worst, float(np.max(np.abs(robot.read().qd) / kin.UR10E_MAX_JOINT_SPEED)))
    state = robot.read()
    assert not state.protective_stop
    assert worst == pytest.approx(1.0, abs=1e-9)  # the worst joint runs at, never above, its limit
    assert np.linalg.norm(state.tcp_twist[3:]) < 2.9
    np.testing.assert_allclose(_direction(state.tcp_twist[3:]), [0.0, 1.0, 0.0], atol=5e-3)
    np.testing.assert_allclose(state.tcp_twist[:3], 0.0, atol=5e-3)


def test_move_l_reaches_its_target_within_a_tenth_of_a_millimetre() -> None:
    robot = SimRobot()
    start = robot.read().tcp2base
    target = start.copy()
    target[:3, 3] += [0.15, 0.10, -0.12]
    target[:3, :3] = Rotation.from_rotvec([0.0, 0.2, 0.3]).as_matrix() @ start[:3, :3]
    robot.move_l(target, speed=0.25, acceleration=1.2)
    assert not robot.motion_done() and robot.read().moving
    peak = 0.0
    while not robot.motion_done() and robot.time < 5.0:
        robot.step(TICK)
        peak = max(peak, float(np.linalg.norm(robot.read().tcp_twist[:3])))
    state = robot.read()
    assert robot.motion_done() and not state.moving
    assert np.linalg.norm(state.tcp2base[:3, 3] - target[:3, 3]) < 1e-4
    assert np.linalg.norm(se3.pose_error(state.tcp2base, target)[3:]) < 1e-3
    assert peak <= 0.25 * 1.01


def test_move_j_reaches_its_target_with_all_joints_arriving_together() -> None:
    robot = SimRobot()
    goal = np.asarray(UR10E_HOME_Q) + np.array([0.4, -0.2, 0.3, 0.1, -0.5, 1.0])
    robot.move_j(goal, speed=1.0, acceleration=2.0)
    travel = goal - robot.read().q
    start = robot.read().q
    duration = _run_until_done(robot, 5.0)
    assert robot.motion_done()
    np.testing.assert_allclose(robot.read().q, goal, atol=1e-5)
    # Joint 6 leads (1.0 rad at 1 rad/s, 2 rad/s^2): 1.5 s.
    assert duration == pytest.approx(1.5, abs=0.05)
    robot.move_j(start, speed=1.0, acceleration=2.0)
    robot.step(0.75)  # halfway in time = halfway along the synchronised path
    halfway_fraction = (goal - robot.read().q) / travel
    np.testing.assert_allclose(halfway_fraction, 0.5, atol=0.02)


def test_stop_brings_speed_to_zero_within_v_over_a_max_plus_one_period() -> None:
    robot = SimRobot()
    _stream_speed(robot, np.array([0.0, 0.2, 0.0, 0.0, 0.0, 0.0]), 0.6)
    qd = robot.read().qd
    a_max = robot.limits.joint_acceleration
    bound = float(np.max(np.abs(qd))) / a_max + robot.period
    robot.stop()
    while np.any(robot.read().qd) and robot.time < 10.0:
        robot.step(robot.period)
        if np.any(robot.read().qd):
            # Still decelerating along the same joint-space direction.
            np.testing.assert_allclose(_direction(robot.read().qd), _direction(qd), atol=1e-9)
    elapsed = robot.time - 0.6
    assert not np.any(robot.read().qd)
    assert elapsed <= bound + 1e-9


def test_stop_during_move_l_ends_the_move_and_leaves_the_arm_at_rest() -> None:
    robot = SimRobot()
    target = robot.read().tcp2base.copy()
    target[:3, 3] += [0.2, 0.0, 0.0]
    robot.move_l(target, speed=0.5)
    robot.step(0.4)
    assert robot.read().moving
    robot.stop()
    assert robot.motion_done() and not robot.read().moving
    robot.step(0.5)
    state = robot.read()
    assert not np.any(state.qd)
    assert np.linalg.norm(state.tcp2base[:3, 3] - target[:3, 3]) > 0.01  # stopped short


def test_watchdog_brings_an_unrefreshed_speed_l_to_rest() -> None:
    robot = SimRobot()
    twist = np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0])
    _stream_speed(robot, twist, 0.4)
    robot.step(3 * TICK)  # within the watchdog (3 command periods): still moving
    assert np.linalg.norm(robot.read().tcp_twist[:3]) == pytest.approx(0.1, rel=1e-3)
    robot.step(TICK)
    robot.step(0.2 + TICK)  # ramps down at 0.5 m/s^2 from 0.1 m/s in 0.2 s
    state = robot.read()
    assert not np.any(state.qd)
    assert not state.protective_stop


def test_protective_stop_from_move_j_outside_the_range_ignores_motion_until_unlock() -> None:
    robot = SimRobot()
    q0 = robot.read().q
    robot.move_j(q0 + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 7.0]))
    assert robot.read().protective_stop and robot.motion_done()
    _stream_speed(robot, np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0]), 0.3)
    np.testing.assert_array_equal(robot.read().q, q0)  # commands ignored
    robot.unlock_protective_stop()
    assert not robot.read().protective_stop
    _stream_speed(robot, np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0]), 0.3)
    assert np.linalg.norm(robot.read().q - q0) > 1e-3


def test_protective_stop_when_a_joint_would_leave_its_range() -> None:
    lower = np.asarray(UR10E_HOME_Q) - 2 * np.pi
    lower[5] = UR10E_HOME_Q[5] - 0.02
    robot = SimRobot(limits=SimRobotLimits(joint_lower=tuple(lower)))
    # Tool z points down, so turning about base +z turns joint 6 negative.
    _stream_speed(robot, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.3]), 1.0)
    state = robot.read()
    assert state.protective_stop
    assert np.all(state.q >= lower)
    assert state.q[5] == pytest.approx(lower[5])
    assert not np.any(state.qd)


def test_protective_stop_when_a_cartesian_command_runs_into_a_singularity() -> None:
    q_near_wrist_singularity = np.asarray(UR10E_HOME_Q).copy()
    q_near_wrist_singularity[4] = -0.01  # q5 = 0 aligns the axes of joints 4 and 6
    u, sigma, _ = np.linalg.svd(kin.geometric_jacobian(kin.UR10E, q_near_wrist_singularity))
    assert sigma[-1] < 0.05
    possible = SimRobot(q0=q_near_wrist_singularity)
    # Straight down is a direction the arm can still make: it runs, damped, without a stop.
    _stream_speed(possible, np.array([0.0, 0.0, -0.05, 0.0, 0.0, 0.0]), 0.3)
    assert not possible.read().protective_stop
    assert possible.read().tcp_twist[2] == pytest.approx(-0.05, rel=0.02)
    lost = SimRobot(q0=q_near_wrist_singularity)
    # Along the lost direction even 0.05 needs 0.05 / sigma_min (> 10 rad/s) on some joint.
    _stream_speed(lost, 0.05 * u[:, -1], 0.3)
    state = lost.read()
    assert state.protective_stop
    np.testing.assert_allclose(state.qd, 0.0)
    assert lost.protective_stop_reason is not None


def test_move_l_to_an_unreachable_pose_protective_stops_without_moving() -> None:
    robot = SimRobot()
    target = robot.read().tcp2base.copy()
    target[:3, 3] = [2.5, 0.0, 0.5]
    robot.move_l(target)
    robot.step(0.1)
    assert robot.read().protective_stop and robot.motion_done()
    np.testing.assert_array_equal(robot.read().q, UR10E_HOME_Q)


def test_servo_l_tracks_a_moving_target_and_settles_on_a_fixed_one() -> None:
    robot = SimRobot()
    start = robot.read().tcp2base
    velocity = np.array([0.0, 0.05, -0.02])
    target = start.copy()
    for _ in range(125):  # one second of a target moving at constant speed
        target[:3, 3] += velocity * TICK
        robot.servo_l(target)
        robot.step(TICK)
    assert np.linalg.norm(robot.read().tcp2base[:3, 3] - target[:3, 3]) < 1e-4
    for _ in range(50):  # target stops: the arm settles on it
        robot.servo_l(target)
        robot.step(TICK)
    state = robot.read()
    assert np.linalg.norm(state.tcp2base[:3, 3] - target[:3, 3]) < 1e-6
    assert np.linalg.norm(state.tcp_twist) < 1e-4


def test_external_wrench_is_read_in_tcp_frame_and_zero_ft_removes_it() -> None:
    robot = SimRobot(ft_offset=np.array([1.0, 0.0, -2.0, 0.0, 0.1, 0.0]))
    seen: list[float] = []

    def contact(t: float, tcp2base: np.ndarray, tcp_twist: np.ndarray) -> np.ndarray:
        seen.append(t)
        assert tcp2base.shape == (4, 4) and tcp_twist.shape == (6,)
        return np.array([0.0, 0.0, 5.0, 0.0, 0.0, 0.0])

    robot.set_external_wrench(contact)
    robot.step(TICK)
    np.testing.assert_allclose(robot.read().wrench, [1.0, 0.0, 3.0, 0.0, 0.1, 0.0])
    assert seen[-1] == pytest.approx(TICK)
    robot.zero_ft()
    np.testing.assert_allclose(robot.read().wrench, 0.0, atol=1e-15)
    robot.set_external_wrench(np.array([0.0, 2.0, 5.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(robot.read().wrench, [0.0, 2.0, 0.0, 0.0, 0.0, 0.0])


def test_same_seed_gives_identical_runs_and_noise() -> None:
    def run(seed: int) -> list[RobotState]:
        robot = SimRobot(ft=FTSensorModel(noise=(0.5, 0.02)), seed=seed)
        states = []
        for k in range(40):
            robot.speed_l(np.array([0.02, 0.0, -0.01, 0.0, 0.05, 0.0]) * np.sin(0.1 * k))
            robot.step(TICK)
            states.append(robot.read())
        return states

    first, second, other = run(7), run(7), run(8)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.wrench, b.wrench)
    assert np.std([s.wrench[0] for s in first]) > 0.1
    assert not np.array_equal(first[-1].wrench, other[-1].wrench)


def test_cam2base_is_the_tcp_pose_times_the_camera_mount() -> None:
    tool = np.eye(4)
    tool[2, 3] = 0.2
    cam2tcp = np.eye(4)
    cam2tcp[:3, :3] = Rotation.from_euler("z", 90, degrees=True).as_matrix()
    cam2tcp[:3, 3] = [0.0, 0.08, 0.05]
    robot = SimRobot(tool=tool, cam2tcp=cam2tcp)
    np.testing.assert_allclose(robot.cam2base(), robot.read().tcp2base @ cam2tcp)
    flange2base = kin.forward_kinematics(kin.UR10E, robot.read().q)
    np.testing.assert_allclose(robot.read().tcp2base, flange2base @ tool)


def test_bad_inputs_raise_with_clear_messages() -> None:
    robot = SimRobot()
    with pytest.raises(ValueError, match=r"twist must have shape \(6,\)"):
        robot.speed_l(np.zeros(3))
    with pytest.raises(ValueError, match="acceleration must be finite and > 0"):
        robot.speed_l(np.zeros(6), acceleration=0.0)
    with pytest.raises(ValueError, match="dt must be finite and > 0"):
        robot.step(-0.1)
    with pytest.raises(ValueError, match="outside the joint range"):
        SimRobot(q0=np.full(6, 7.0))


def test_joint_range_check_agrees_with_numpy_comparisons_nan_and_bounds_included() -> None:
    """``_in_range`` is numpy's ``(lo <= q) & (q <= hi)`` over the joints: bounds themselves
    inside, a hair beyond outside, NaN outside; a wrong length still refused."""
    robot = SimRobot()
    lo, hi = np.array(robot._lower_list), np.array(robot._upper_list)
    rng = np.random.default_rng(8)
    cases = [lo.copy(), hi.copy(), np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)]
    cases += list(rng.uniform(lo - 0.5, hi + 0.5, (300, len(lo))))
    with_nan = 0.5 * (lo + hi)
    with_nan[3] = np.nan
    cases.append(with_nan)
    for q in cases:
        assert robot._in_range(q) == bool(((lo <= q) & (q <= hi)).all())
    assert robot._in_range(lo) and not robot._in_range(np.nextafter(hi, np.inf)) and not robot._in_range(with_nan)
    with pytest.raises(ValueError):
        robot._in_range(np.zeros(len(lo) + 1))
