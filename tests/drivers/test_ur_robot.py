"""URRobot at the ur_rtde boundary, its link: construction, setup's checks and connections, shutdown,
reconnection (the fakes, tests/drivers/ur_fakes.py, record every call and refuse any method name
or argument count that the installed ur_rtde classes do not have). Its commands and reads:
tests/drivers/test_ur_robot_commands.py."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from orbitree.drivers.interfaces import Robot
from orbitree.drivers.ur_robot import (
    URCommandError,
    URConnectionError,
    URNotReadyError,
    URRobot,
)
from tests.drivers.ur_fakes import HOST, FakeControl, FakeDashboard, FakeReceive, Rig, _pose

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
