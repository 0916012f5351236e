"""URRobot at the ur_rtde boundary: fakes record every call and refuse any method name (or
argument count) that the installed ur_rtde classes do not have."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import dashboard_client
import numpy as np
import pytest
import rtde_control
import rtde_receive
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import Robot
from orbitree.drivers.ur_robot import (
    URCommandError,
    URConnectionError,
    URNotReadyError,
    URRobot,
    pose_from_ur,
    pose_to_ur,
    wrench_base_to_tcp,
)

HOST = "192.168.56.101"


# -- fakes ---------------------------------------------------------------------------------


def _split_params(signature: str) -> list[str]:
    """Top-level comma split of a pybind11 parameter list (types contain brackets)."""
    params, depth, current = [], 0, ""
    for char in signature:
        depth += char in "[(<"
        depth -= char in "])>"
        if char == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        params.append(current.strip())
    return params


def _arities(method: Any) -> list[tuple[int, int]]:
    """(required, total) positional counts, without self, of each pybind11 overload."""
    name = method.__name__
    lines = [ln.split(". ", 1)[-1] for ln in (method.__doc__ or "").splitlines()]
    found = []
    for line in lines:
        if line.startswith(f"{name}(self") and "->" in line:
            inner = line[len(name) + 1 : line.rindex(")", 0, line.index("->"))]
            params = _split_params(inner)[1:]
            found.append((sum("=" not in p for p in params), len(params)))
    return found


class RecordingFake:
    """Records ``(method, args)`` for every call to a method the real ur_rtde class has."""

    spec: type = object

    def __init__(self, results: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.results = results or {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(self.spec, name):
            raise AttributeError(f"{self.spec.__name__} has no method {name!r}")
        arities = _arities(getattr(self.spec, name))

        def method(*args: Any) -> Any:
            assert any(req <= len(args) <= tot for req, tot in arities), (
                f"{name}{args}: ur_rtde accepts {arities} positional arguments"
            )
            self.calls.append((name, args))
            result = self.results.get(name, True)
            return result(*args) if callable(result) else result

        return method

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class FakeControl(RecordingFake):
    spec = rtde_control.RTDEControlInterface

    def __init__(self, host: str, frequency: float) -> None:
        super().__init__()
        self.host, self.frequency = host, frequency
        self.connected = True
        self.progress = -1

    def isConnected(self) -> bool:
        return self.connected

    def getAsyncOperationProgress(self) -> int:
        return self.progress


class FakeReceive(RecordingFake):
    spec = rtde_receive.RTDEReceiveInterface

    def __init__(self, host: str, frequency: float) -> None:
        super().__init__()
        self.host, self.frequency = host, frequency
        self.connected = True
        self.protective_stopped = False
        self.emergency_stopped = False
        self.tcp_pose = [0.4, -0.1, 0.3, 0.0, 0.0, 0.0]
        self.q = [0.1, -1.2, 1.3, -1.6, -1.5, 0.2]
        self.qd = [0.0, 0.01, 0.0, 0.0, 0.0, -0.02]
        self.tcp_speed = [0.01, 0.0, -0.02, 0.0, 0.0, 0.1]
        self.tcp_force = [0.0] * 6

    def isConnected(self) -> bool:
        return self.connected

    def isProtectiveStopped(self) -> bool:
        return self.protective_stopped

    def isEmergencyStopped(self) -> bool:
        return self.emergency_stopped

    def getActualTCPPose(self) -> list[float]:
        return list(self.tcp_pose)

    def getActualQ(self) -> list[float]:
        return list(self.q)

    def getActualQd(self) -> list[float]:
        return list(self.qd)

    def getActualTCPSpeed(self) -> list[float]:
        return list(self.tcp_speed)

    def getActualTCPForce(self) -> list[float]:
        return list(self.tcp_force)


class FakeDashboard(RecordingFake):
    spec = dashboard_client.DashboardClient

    def __init__(self, host: str, remote: bool = True) -> None:
        super().__init__({"connect": None, "disconnect": None, "isInRemoteControl": remote})
        self.host = host


class Rig:
    """Builds a URRobot wired to fakes and keeps the fakes for assertions."""

    def __init__(self, remote: bool = True, **kwargs: Any) -> None:
        self.control: FakeControl | None = None
        self.receive: FakeReceive | None = None
        self.dashboard: FakeDashboard | None = None
        self.remote = remote
        self.sleeps: list[float] = []
        self.receive_setup: Any = None
        self.fk_pose: list[float] | None = None
        self.robot = URRobot(
            "arm",
            HOST,
            control_factory=self._control,
            receive_factory=self._receive,
            dashboard_factory=self._dashboard,
            clock=lambda: 12.5,
            sleep=self.sleeps.append,
            **kwargs,
        )

    def _control(self, host: str, frequency: float) -> FakeControl:
        self.control = FakeControl(host, frequency)
        # the controller's forward kinematics: the pose the receive stream settles on
        self.control.results["getForwardKinematics"] = lambda: list(self.fk_pose or self.receive.tcp_pose)
        return self.control

    def _receive(self, host: str, frequency: float) -> FakeReceive:
        self.receive = FakeReceive(host, frequency)
        if self.receive_setup is not None:
            self.receive_setup(self.receive)
        return self.receive

    def _dashboard(self, host: str) -> FakeDashboard:
        self.dashboard = FakeDashboard(host, self.remote)
        return self.dashboard

    def ready(self) -> tuple[URRobot, FakeControl, FakeReceive]:
        self.robot.setup()
        assert self.control is not None and self.receive is not None
        return self.robot, self.control, self.receive


def _pose(rotvec: list[float], position: list[float]) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    pose[:3, 3] = position
    return pose


# -- lifecycle -----------------------------------------------------------------------------


def test_init_connects_to_nothing() -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("__init__ must not connect")

    robot = URRobot(
        "arm", HOST, control_factory=refuse, receive_factory=refuse, dashboard_factory=refuse
    )
    assert isinstance(robot, Robot)
    assert not robot.is_connected()
    robot.stop()  # nothing of ours can move before setup: a no-op, not an error
    robot.shutdown()


def test_importing_the_module_does_not_import_ur_rtde() -> None:
    code = "import sys, orbitree.drivers.ur_robot; print('rtde_control' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_setup_checks_remote_control_then_connects_at_the_given_frequency() -> None:
    rig = Rig(frequency=125.0)
    robot, control, receive = rig.ready()
    assert rig.dashboard is not None and rig.dashboard.host == HOST
    assert rig.dashboard.names() == ["connect", "isInRemoteControl", "disconnect"]
    assert (receive.host, receive.frequency) == (HOST, 125.0)
    assert (control.host, control.frequency) == (HOST, 125.0)
    assert control.calls == []  # connecting sends no motion command
    assert robot.is_connected()


def test_setup_makes_the_missions_tool_the_controllers_tcp() -> None:
    tool = _pose([0.0, 0.0, np.pi / 2], [0.0, 0.0, 0.2])  # 200 mm out, turned 90 deg about z
    rig = Rig(tcp_offset=tool)
    _, control, _ = rig.ready()
    assert [name for name, _ in control.calls] == ["setTcp", "getForwardKinematics"]
    np.testing.assert_allclose(control.calls[0][1][0], [0.0, 0.0, 0.2, 0.0, 0.0, np.pi / 2], atol=1e-12)
    assert rig.sleeps == []  # the stream already reported the tool


def test_setup_returns_only_once_the_stream_reports_the_tool_not_the_flange() -> None:
    tool = _pose([0.0, 0.0, 0.0], [0.0, 0.0, 0.2])
    rig = Rig(tcp_offset=tool)
    rig.fk_pose = [0.4, -0.1, 0.1, 0.0, 0.0, 0.0]  # the tool, 200 mm below the flange
    stale = iter(range(3))  # three packets sampled before setTcp was applied

    def settle(receive: FakeReceive) -> None:
        def pose() -> list[float]:
            return receive.tcp_pose if next(stale, None) is not None else rig.fk_pose
        receive.getActualTCPPose = pose  # type: ignore[method-assign]

    rig.receive_setup = settle
    robot, _, _ = rig.ready()
    assert rig.sleeps == [0.002] * 3
    np.testing.assert_allclose(robot.read().tcp2base[:3, 3], [0.4, -0.1, 0.1], atol=1e-12)


def test_setup_fails_clearly_and_disconnects_when_the_stream_never_reports_the_tool() -> None:
    rig = Rig(tcp_offset=_pose([0.0, 0.0, 0.0], [0.0, 0.0, 0.2]))
    rig.fk_pose = [0.4, -0.1, 0.1, 0.0, 0.0, 0.0]
    with pytest.raises(URCommandError) as info:
        rig.robot.setup()
    message = str(info.value)
    assert HOST in message and "setTcp" in message and "200.0 mm" in message and "after 1 s" in message
    assert len(rig.sleeps) == 500  # 1 s of 2-ms polls
    assert not rig.robot.is_connected()
    assert rig.control is not None and "disconnect" in rig.control.names()


def test_setup_refuses_when_not_in_remote_control() -> None:
    rig = Rig(remote=False)
    with pytest.raises(URNotReadyError) as info:
        rig.robot.setup()
    message = str(info.value)
    assert HOST in message and "remote control" in message
    assert "Local to Remote" in message and "check_remote_control=False" in message
    assert rig.receive is None and rig.control is None  # nothing connected


def test_setup_skips_the_dashboard_when_told_to() -> None:
    rig = Rig(check_remote_control=False)
    rig.ready()
    assert rig.dashboard is None


@pytest.mark.parametrize(
    ("flag", "words"),
    [("protective_stopped", "protective-stopped"), ("emergency_stopped", "emergency-stopped")],
)
def test_setup_refuses_a_stopped_arm_and_releases_the_receive_link(flag: str, words: str) -> None:
    rig = Rig()
    rig.receive_setup = lambda receive: setattr(receive, flag, True)
    with pytest.raises(URNotReadyError) as info:
        rig.robot.setup()
    assert HOST in str(info.value) and words in str(info.value)
    assert rig.control is None  # the control script was never uploaded
    assert rig.receive is not None and rig.receive.names() == ["disconnect"]


def test_setup_wraps_a_failed_connection_with_the_host() -> None:
    def unreachable(host: str, frequency: float) -> Any:
        raise RuntimeError("Connection refused")

    rig = Rig()
    rig.robot._control_factory = unreachable
    with pytest.raises(URConnectionError, match=rf"{HOST}.*Connection refused"):
        rig.robot.setup()
    assert rig.receive is not None and rig.receive.names() == ["disconnect"]


def test_shutdown_stops_stops_the_script_disconnects_and_is_idempotent() -> None:
    robot, control, receive = Rig().ready()
    robot.speed_l(np.zeros(6))
    robot.shutdown()
    assert control.calls[1:] == [("speedStop", (10.0,)), ("stopScript", ()), ("disconnect", ())]
    assert receive.calls == [("disconnect", ())]
    robot.shutdown()
    assert len(control.calls) == 4 and len(receive.calls) == 1
    with pytest.raises(URConnectionError, match="setup"):
        robot.read()


def test_shutdown_still_disconnects_when_the_link_is_already_down() -> None:
    robot, control, receive = Rig().ready()
    control.connected = False
    robot.shutdown()
    # no stopScript on a dead link: the real ur_rtde then waits 300 s for the script to stop
    # (measured against the emulator, tests/drivers/test_ur_emulator.py)
    assert control.names() == ["disconnect"]
    assert receive.names() == ["disconnect"]


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


# -- reconnection --------------------------------------------------------------------------


def test_reconnect_backs_off_exponentially_and_gives_up() -> None:
    rig = Rig(reconnect_attempts=4, reconnect_initial_delay=0.1, reconnect_max_delay=0.3)
    robot, control, receive = rig.ready()
    receive.connected = False
    receive.results["reconnect"] = False
    with pytest.raises(URConnectionError, match=rf"{HOST} after 4 attempts"):
        robot.reconnect()
    assert receive.names() == ["reconnect"] * 4
    assert rig.sleeps == pytest.approx([0.1, 0.2, 0.3])  # doubled, capped, none after the last
    assert "reconnect" not in control.names()  # its link was up


def test_reconnect_succeeds_on_the_third_attempt_and_forgets_the_old_mode() -> None:
    rig = Rig(reconnect_initial_delay=0.05)
    robot, control, _ = rig.ready()
    robot.speed_l(np.zeros(6))
    control.connected = False
    attempts = []

    def reconnect() -> bool:
        attempts.append(1)
        if len(attempts) == 2:
            raise RuntimeError("Connection reset by peer")  # counts as a failed attempt
        control.connected = len(attempts) >= 3
        return control.connected

    control.results["reconnect"] = reconnect
    robot.reconnect()
    assert len(attempts) == 3 and rig.sleeps == pytest.approx([0.05, 0.1])
    assert robot.is_connected()
    control.calls.clear()
    robot.servo_l(_pose([0, 0, 0], [0.4, 0, 0.3]))
    assert control.names() == ["servoL"]  # the re-uploaded script runs no speed thread


def test_reconnect_before_setup_is_an_error() -> None:
    with pytest.raises(URConnectionError, match="setup"):
        Rig().robot.reconnect()


def test_the_fakes_only_define_methods_ur_rtde_has() -> None:
    own = {"names", "spec"}
    for fake in (FakeControl, FakeReceive, FakeDashboard):
        defined = {n for n in vars(fake) if not n.startswith("_")} - own
        assert all(hasattr(fake.spec, name) for name in defined), (fake, defined)
