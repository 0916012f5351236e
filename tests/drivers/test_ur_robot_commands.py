"""URRobot at the ur_rtde boundary, its commands and reads: the motion commands and modes, stops,
rejected commands and bad inputs, the watchdog, the state read (pose, force in the TCP frame) and
the pose conversions (fakes: tests/drivers/ur_fakes.py). Its link: tests/drivers/test_ur_robot.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orbitree.drivers.ur_robot import (
    URCommandError,
    URConnectionError,
    URRobot,
    pose_from_ur,
    pose_to_ur,
    wrench_base_to_tcp,
)
from tests.drivers.ur_fakes import HOST, Rig, _pose

# -- commands ------------------------------------------------------------------------------


def test_speed_l_sends_the_twist_acceleration_and_one_rtde_period() -> None:
    robot, control, _ = Rig().ready()
    robot.speed_l(np.array([0.01, -0.02, 0.03, 0.0, 0.1, -0.2]), acceleration=0.3)
    assert control.calls == [("speedL", ([0.01, -0.02, 0.03, 0.0, 0.1, -0.2], 0.3, 0.002))]
    xd = control.calls[0][1][0]
    assert isinstance(xd, list) and all(type(v) is float for v in xd)


def test_servo_l_sends_the_ur_pose_and_servo_parameters() -> None:
    robot, control, _ = Rig(servo_time=0.008, servo_lookahead_time=0.05, servo_gain=500).ready()
    robot.servo_l(_pose([0.0, 0.0, math.pi / 2], [0.4, -0.1, 0.3]))
    ((name, args),) = control.calls
    assert name == "servoL"
    assert args[0] == pytest.approx([0.4, -0.1, 0.3, 0.0, 0.0, math.pi / 2])
    assert args[1:] == (0.5, 0.5, 0.008, 0.05, 500.0)


def test_move_l_sends_position_and_axis_angle_asynchronously() -> None:
    axis = np.array([1.0, 1.0, 1.0]) / math.sqrt(3.0)
    tcp2base = _pose(list(2.0 * math.pi / 3.0 * axis), [0.5, 0.2, 0.05])
    # 120 degrees about (1, 1, 1) permutes the axes: x -> y -> z -> x.
    assert tcp2base[:3, :3] @ [1, 0, 0] == pytest.approx([0, 1, 0])
    robot, control, _ = Rig().ready()
    robot.move_l(tcp2base, speed=0.1, acceleration=0.5)
    ((name, args),) = control.calls
    assert name == "moveL"
    expected_rotvec = 2.0 * math.pi / 3.0 / math.sqrt(3.0)
    assert args[0] == pytest.approx([0.5, 0.2, 0.05, *[expected_rotvec] * 3])
    assert args[1:] == (0.1, 0.5, True)


def test_move_j_sends_joints_with_defaults_asynchronously() -> None:
    robot, control, _ = Rig().ready()
    robot.move_j(np.array([0.0, -1.57, 1.57, -1.57, -1.57, 0.0]))
    assert control.calls == [("moveJ", ([0.0, -1.57, 1.57, -1.57, -1.57, 0.0], 1.05, 1.4, True))]


def test_motion_done_waits_for_a_new_negative_progress_value() -> None:
    robot, control, _ = Rig().ready()
    assert robot.motion_done()  # nothing started
    control.progress = -1
    robot.move_l(_pose([0, 0, 0], [0.4, 0, 0.3]))
    # trace: progress -1 (move thread not started yet) -> 0 (running) -> -2 (finished)
    assert not robot.motion_done()
    control.progress = 0
    assert not robot.motion_done()
    assert robot.read().moving
    control.progress = -2
    assert robot.motion_done() and not robot.read().moving
    # the next move finishes on -1: a stale -2 must not count as done
    robot.move_j(np.zeros(6))
    assert not robot.motion_done()
    control.progress = -1
    assert robot.motion_done()


def test_mode_switches_stop_the_previous_streaming_mode_first() -> None:
    robot, control, _ = Rig().ready()
    pose = _pose([0, 0, 0], [0.4, 0, 0.3])
    robot.speed_l(np.zeros(6))
    robot.speed_l(np.zeros(6))
    robot.servo_l(pose)
    robot.servo_l(pose)
    robot.move_l(pose)
    robot.speed_l(np.zeros(6))
    assert control.names() == [
        "speedL",
        "speedL",
        "speedStop",
        "servoL",
        "servoL",
        "servoStop",
        "moveL",
        "stopL",  # the move is still running: stop it before streaming
        "speedL",
    ]
    assert control.calls[2] == ("speedStop", (10.0,))
    assert control.calls[7] == ("stopL", (10.0, False))


def test_streaming_after_a_finished_move_needs_no_stop() -> None:
    robot, control, _ = Rig().ready()
    robot.move_l(_pose([0, 0, 0], [0.4, 0, 0.3]))
    control.progress = -2
    robot.servo_l(_pose([0, 0, 0], [0.4, 0, 0.3]))
    assert control.names() == ["moveL", "servoL"]


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("speed", ("speedStop", (10.0,))),
        ("servo", ("servoStop", (10.0,))),
        ("move_l", ("stopL", (10.0, False))),
        ("move_j", ("stopJ", (2.0, False))),
        ("idle", ("stopL", (10.0, False))),
    ],
)
def test_stop_uses_the_stop_of_the_active_mode(start: str, expected: tuple) -> None:
    robot, control, _ = Rig().ready()
    pose = _pose([0, 0, 0], [0.4, 0, 0.3])
    start_commands = {
        "speed": lambda: robot.speed_l(np.zeros(6)),
        "servo": lambda: robot.servo_l(pose),
        "move_l": lambda: robot.move_l(pose),
        "move_j": lambda: robot.move_j(np.zeros(6)),
        "idle": lambda: None,
    }
    start_commands[start]()
    control.calls.clear()
    robot.stop()
    assert control.calls == [expected]
    assert robot.motion_done()  # ur_rtde kills the move thread without a finish signal


def test_zero_ft_zeroes_the_sensor() -> None:
    robot, control, _ = Rig().ready()
    robot.zero_ft()
    assert control.calls == [("zeroFtSensor", ())]


def test_a_rejected_command_raises_with_the_call() -> None:
    robot, control, _ = Rig().ready()
    control.results["speedL"] = False
    with pytest.raises(URCommandError, match=r"speedL.*192\.168\.56\.101"):
        robot.speed_l(np.zeros(6))


def test_commands_on_a_dropped_link_raise_and_send_nothing() -> None:
    robot, control, receive = Rig().ready()
    control.connected = False
    with pytest.raises(URConnectionError, match="reconnect"):
        robot.speed_l(np.zeros(6))
    assert control.calls == []
    receive.connected = False
    with pytest.raises(URConnectionError, match="receive"):
        robot.read()


def test_bad_inputs_are_refused_before_reaching_the_arm() -> None:
    robot, control, _ = Rig().ready()
    with pytest.raises(ValueError, match="6 values"):
        robot.speed_l(np.zeros(5))
    with pytest.raises(ValueError, match="finite"):
        robot.move_j(np.array([0, 0, np.nan, 0, 0, 0]))
    skewed = np.eye(4)
    skewed[0, 1] = 0.1
    with pytest.raises(ValueError, match="orthonormal"):
        robot.move_l(skewed)
    assert control.calls == []


def test_out_of_range_servo_settings_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="servo_gain"):
        URRobot("arm", HOST, servo_gain=50)
    with pytest.raises(ValueError, match="servo_lookahead_time"):
        URRobot("arm", HOST, servo_lookahead_time=0.5)


def test_watchdog_is_armed_at_setup_and_kicked_on_read() -> None:
    robot, control, _ = Rig(watchdog_hz=25.0).ready()
    assert control.calls == [("setWatchdog", (25.0,))]
    robot.read()
    assert control.calls[-1] == ("kickWatchdog", ())


# -- state ---------------------------------------------------------------------------------


def test_read_converts_pose_and_rotates_the_force_into_the_tcp_frame() -> None:
    robot, _, receive = Rig().ready()
    # TCP rotated +90 degrees about base z: TCP x = base y, TCP y = -base x.
    receive.tcp_pose = [0.4, -0.1, 0.3, 0.0, 0.0, math.pi / 2]
    receive.tcp_force = [1.0, 0.0, 0.0, 0.0, 0.0, 2.0]  # base orientation
    state = robot.read()
    assert state.stamp == 12.5
    assert state.tcp2base[:3, 3] == pytest.approx([0.4, -0.1, 0.3])
    assert state.tcp2base[:3, :3] @ [1, 0, 0] == pytest.approx([0, 1, 0], abs=1e-12)
    # +1 N along base x is -1 N along TCP y; the torque about z is unchanged.
    assert state.wrench == pytest.approx([0.0, -1.0, 0.0, 0.0, 0.0, 2.0], abs=1e-12)
    assert state.q == pytest.approx(receive.q) and state.qd == pytest.approx(receive.qd)
    assert state.tcp_twist == pytest.approx(receive.tcp_speed)  # base frame, as UR reports it
    assert not state.protective_stop and not state.moving


def test_force_of_a_tool_pointing_down() -> None:
    robot, _, receive = Rig().ready()
    # The usual UR pose: tool z along base -z (rx = pi). Contact pushes the tool up (+z base),
    # which is -z in the TCP frame; a torque about base x stays about TCP x.
    receive.tcp_pose = [0.5, 0.0, 0.2, math.pi, 0.0, 0.0]
    receive.tcp_force = [0.0, 3.0, 10.0, 0.5, 0.0, 0.0]
    receive.protective_stopped = True
    state = robot.read()
    assert state.wrench == pytest.approx([0.0, -3.0, -10.0, 0.5, 0.0, 0.0], abs=1e-12)
    assert state.protective_stop


def test_wrench_rotation_preserves_magnitudes() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        tcp2base = _pose(list(rng.normal(size=3)), list(rng.normal(size=3)))
        wrench = rng.normal(size=6)
        in_tcp = wrench_base_to_tcp(wrench, tcp2base)
        assert tcp2base[:3, :3] @ in_tcp[:3] == pytest.approx(wrench[:3])
        assert np.linalg.norm(in_tcp[3:]) == pytest.approx(np.linalg.norm(wrench[3:]))


def test_pose_round_trip() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        tcp2base = _pose(list(rng.uniform(-3, 3, size=3)), list(rng.normal(size=3)))
        assert pose_from_ur(pose_to_ur(tcp2base)) == pytest.approx(tcp2base, abs=1e-12)
