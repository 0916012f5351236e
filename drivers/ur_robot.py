"""``URRobot``: the :class:`~orbitree.drivers.interfaces.Robot` protocol over ur_rtde.

Mapping (``c`` = ``rtde_control.RTDEControlInterface``, ``r`` = ``rtde_receive.
RTDEReceiveInterface``, ``d`` = ``dashboard_client.DashboardClient``; all arguments positional):

=====================  ==================================================================
Robot protocol         ur_rtde
=====================  ==================================================================
``setup()``            ``d.connect()``, ``d.isInRemoteControl()``, ``d.disconnect()``;
                       ``r = RTDEReceiveInterface(host, frequency)``,
                       ``r.isProtectiveStopped()``, ``r.isEmergencyStopped()``;
                       ``c = RTDEControlInterface(host, frequency)``;
                       ``c.setTcp(tool)`` if ``tcp_offset``, then ``c.getForwardKinematics()``
                       and ``r.getActualTCPPose()`` until the stream reports the tool (see
                       below); ``c.setWatchdog(hz)`` if ``watchdog_hz``
``read()``             ``r.getActualTCPPose()`` (axis-angle → 4x4), ``r.getActualQ()``,
                       ``r.getActualQd()``, ``r.getActualTCPSpeed()``,
                       ``r.getActualTCPForce()`` (base-oriented → TCP frame),
                       ``r.isProtectiveStopped()``; ``c.kickWatchdog()`` if ``watchdog_hz``
``speed_l(twist, a)``  ``c.speedL([vx, vy, vz, wx, wy, wz], a, speed_time)``
``servo_l(tcp2base)``  ``c.servoL([x, y, z, rx, ry, rz], 0.5, 0.5, servo_time,
                       lookahead_time, gain)`` (speed, acceleration unused by ur_rtde)
``move_l(T, v, a)``    ``c.moveL([x, y, z, rx, ry, rz], v, a, True)``
``move_j(q, v, a)``    ``c.moveJ([q1..q6], v, a, True)``
``motion_done()``      ``c.getAsyncOperationProgress()`` (see below)
``stop()``             speed mode: ``c.speedStop(a_stop)``; servo mode: ``c.servoStop(a_stop)``;
                       after ``move_j``: ``c.stopJ(a_stop_joint, False)``;
                       otherwise ``c.stopL(a_stop, False)``
``zero_ft()``          ``c.zeroFtSensor()``
``reconnect()``        ``r.reconnect()`` / ``c.reconnect()`` while ``isConnected()`` is False,
                       with exponential back-off and a bounded number of attempts
``shutdown()``         ``stop()``, ``c.stopScript()``, ``c.disconnect()``, ``r.disconnect()``
=====================  ==================================================================

Decisions and ur_rtde facts this driver relies on:

* **Mode switches.** ur_rtde's control script runs speedL and servoL in their own controller
  threads; a move or the other streaming mode started while one runs fights it. The driver
  remembers the active mode and calls ``speedStop`` / ``servoStop`` before switching, and
  ``stopL`` before streaming while an asynchronous move is still running.
* **motion_done.** ``getAsyncOperationProgress()`` is 0 (or a step index) while an asynchronous
  move runs and negative once it finished; consecutive finishes alternate between -1 and -2.
  The value is sampled just before each move is sent, and the move counts as done once the
  value is negative *and different* from that sample. This needs no grace period for the move
  thread to start. ``stop()`` kills the move thread without a finish signal, so ``stop()``
  itself marks the motion done. After a protective stop the value does not change; callers
  watch ``RobotState.protective_stop``.
* **Force frame.** ``getActualTCPForce()`` is the wrench at the TCP expressed in the *base*
  frame's orientation (documented in UR's ROS drivers, e.g. ros-industrial-attic/ur_modern_driver
  #318, UniversalRobots/Universal_Robots_ROS2_Driver #1849). The Robot protocol wants the TCP
  frame, so both force and torque are rotated by ``R_tcp2base.T`` of the same reading; the
  moment reference point is left as the controller reports it.
* **Remote control.** ur_rtde's ``isInRemoteControl()`` returns False (with a warning) on
  PolyScope < 5.6, so CB3 arms need ``check_remote_control=False``.
* **Blocking.** Streaming commands and reads return at once. ``move_l`` / ``move_j`` return once
  the controller accepted the move. ``stop()`` waits for the controller to acknowledge the
  stop (a few ms). ``reconnect()`` sleeps between attempts and must not run inside a tick.

The error classes and the pose conversions (:func:`pose_to_ur`, :func:`pose_from_ur`) are in
:mod:`orbitree.drivers.ur_common`, re-exported here. Connecting, the readiness checks,
``shutdown()`` and ``reconnect()`` are ``URRobot``'s base class ``URConnection``'s
(:mod:`orbitree.drivers.ur_connection`); this module holds the commands, the reads and the motion
modes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from orbitree.drivers.interfaces import RobotState
from orbitree.drivers.ur_common import (
    URCommandError,
    URConnectionError,
    URNotReadyError,
    URRobotError,
    _vector6,
    pose_from_ur,
    pose_to_ur,
)
from orbitree.drivers.ur_connection import (
    URConnection,
    _default_control_factory,
    _default_dashboard_factory,
    _default_receive_factory,
)
from orbitree.skills.se3 import wrench_base_to_tcp

__all__ = [
    "URCommandError",
    "URConnectionError",
    "URNotReadyError",
    "URRobot",
    "URRobotError",
    "pose_from_ur",
    "pose_to_ur",
    "wrench_base_to_tcp",
]

# servoL's speed and acceleration are ignored by ur_rtde; these are its examples' values.
_SERVO_UNUSED_SPEED = 0.5
_SERVO_UNUSED_ACCELERATION = 0.5

_Mode = Literal["idle", "speed", "servo", "move_l", "move_j"]


class URRobot(URConnection):
    """A Universal Robots arm driven through ur_rtde (see the module docstring for the mapping).

    ``__init__`` only stores configuration; ``setup()`` connects.

    Parameters
    ----------
    name : robot name used in blackboard keys and messages.
    host : controller IP address or host name.
    frequency : RTDE frequency, Hz (500 on e-Series, 125 on CB3).
    speed_time, servo_time : the ``time`` argument of speedL / servoL, s; default one RTDE
        period. When commanding at a lower tick rate, set ``servo_time`` to the tick period.
    servo_lookahead_time : servoL lookahead, s, within [0.03, 0.2].
    servo_gain : servoL proportional gain, within [100, 2000].
    stop_acceleration : tool deceleration for stopL / speedStop / servoStop, m/s².
    stop_joint_acceleration : joint deceleration for stopJ after a move_j, rad/s².
    check_remote_control : refuse to start unless the pendant is in remote control
        (must be False on CB3 / PolyScope < 5.6, where ur_rtde cannot ask).
    tcp_offset : (4, 4) tool pose in the flange frame; if set, ``setup()`` makes it the
        controller's TCP (``c.setTcp``), so reported TCP poses and TCP commands use the mission's
        ``tool:`` whatever the pendant's installation says.
    watchdog_hz : if set, arm ur_rtde's RTDE watchdog (the controller stops the arm when
        ``read()`` is not called at least this often) and kick it on every ``read()``.
    reconnect_attempts, reconnect_initial_delay, reconnect_max_delay : back-off of
        ``reconnect()``: delays double from the initial one up to the maximum.
    control_factory, receive_factory : ``factory(host, frequency)`` building the ur_rtde
        interfaces; dashboard_factory : ``factory(host)``. Defaults import ur_rtde lazily.
    clock : time source for ``RobotState.stamp``; sleep : used between reconnect attempts.
    """

    def __init__(
        self,
        name: str,
        host: str,
        frequency: float = 500.0,
        *,
        speed_time: float | None = None,
        servo_time: float | None = None,
        servo_lookahead_time: float = 0.1,
        servo_gain: float = 300.0,
        stop_acceleration: float = 10.0,
        stop_joint_acceleration: float = 2.0,
        check_remote_control: bool = True,
        watchdog_hz: float | None = None,
        tcp_offset: np.ndarray | None = None,
        reconnect_attempts: int = 5,
        reconnect_initial_delay: float = 0.1,
        reconnect_max_delay: float = 2.0,
        control_factory: Callable[[str, float], Any] | None = None,
        receive_factory: Callable[[str, float], Any] | None = None,
        dashboard_factory: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        _check_range(name, "frequency", frequency, 1.0, 1000.0)
        _check_range(name, "servo_lookahead_time", servo_lookahead_time, 0.03, 0.2)
        _check_range(name, "servo_gain", servo_gain, 100.0, 2000.0)
        _check_range(name, "reconnect_attempts", reconnect_attempts, 1, 1000)
        self.name = name
        self.host = host
        self.frequency = float(frequency)
        self.speed_time = 1.0 / self.frequency if speed_time is None else float(speed_time)
        self.servo_time = 1.0 / self.frequency if servo_time is None else float(servo_time)
        self.servo_lookahead_time = float(servo_lookahead_time)
        self.servo_gain = float(servo_gain)
        self.stop_acceleration = float(stop_acceleration)
        self.stop_joint_acceleration = float(stop_joint_acceleration)
        self.check_remote_control = check_remote_control
        self.watchdog_hz = watchdog_hz
        self.tcp_offset = None if tcp_offset is None else pose_to_ur(tcp_offset)
        self.reconnect_attempts = int(reconnect_attempts)
        self.reconnect_initial_delay = float(reconnect_initial_delay)
        self.reconnect_max_delay = float(reconnect_max_delay)
        self._control_factory = control_factory or _default_control_factory
        self._receive_factory = receive_factory or _default_receive_factory
        self._dashboard_factory = dashboard_factory or _default_dashboard_factory
        self._clock = clock
        self._sleep = sleep
        self._control: Any = None
        self._receive: Any = None
        self._mode: _Mode = "idle"
        self._move_pending = False
        self._progress_before_move = 0

    # -- state -----------------------------------------------------------------------------

    def read(self) -> RobotState:
        receive = self._require_receive()
        if self.watchdog_hz is not None:
            control = self._require_control()
            if not control.isConnected():
                raise URConnectionError(
                    f"robot {self.name!r}: RTDE control link to {self.host} is down; call reconnect()"
                )
            # False once the control script has stopped (a protective stop ends it): nothing is
            # left for the watchdog to guard, and the state below is still worth reading
            control.kickWatchdog()
        stamp = self._clock()
        tcp2base = pose_from_ur(receive.getActualTCPPose())
        return RobotState(
            stamp=stamp,
            q=_vector6(receive.getActualQ(), "q"),
            qd=_vector6(receive.getActualQd(), "qd"),
            tcp2base=tcp2base,
            tcp_twist=_vector6(receive.getActualTCPSpeed(), "TCP speed"),
            wrench=wrench_base_to_tcp(_vector6(receive.getActualTCPForce(), "wrench"), tcp2base),
            protective_stop=bool(receive.isProtectiveStopped()),
            moving=not self.motion_done(),
        )

    def motion_done(self) -> bool:
        if not self._move_pending:
            return True
        progress = int(self._require_control().getAsyncOperationProgress())
        if progress < 0 and progress != self._progress_before_move:
            self._move_pending = False
        return not self._move_pending

    # -- commands --------------------------------------------------------------------------

    def speed_l(self, twist: np.ndarray, acceleration: float = 0.5) -> None:
        xd = [float(v) for v in _vector6(twist, "twist")]
        self._enter_mode("speed")
        self._command("speedL", xd, float(acceleration), self.speed_time)

    def servo_l(self, tcp2base: np.ndarray) -> None:
        pose = pose_to_ur(tcp2base)
        self._enter_mode("servo")
        self._command(
            "servoL",
            pose,
            _SERVO_UNUSED_SPEED,
            _SERVO_UNUSED_ACCELERATION,
            self.servo_time,
            self.servo_lookahead_time,
            self.servo_gain,
        )

    def move_l(self, tcp2base: np.ndarray, speed: float = 0.25, acceleration: float = 1.2) -> None:
        pose = pose_to_ur(tcp2base)
        self._start_move("move_l", "moveL", pose, speed, acceleration)

    def move_j(self, q: np.ndarray, speed: float = 1.05, acceleration: float = 1.4) -> None:
        joints = [float(v) for v in _vector6(q, "q")]
        self._start_move("move_j", "moveJ", joints, speed, acceleration)

    def stop(self) -> None:
        if self._control is None:
            return  # never connected: nothing of ours can be moving
        mode = self._mode
        if mode == "speed":
            self._command("speedStop", self.stop_acceleration)
        elif mode == "servo":
            self._command("servoStop", self.stop_acceleration)
        elif mode == "move_j":
            self._command("stopJ", self.stop_joint_acceleration, False)
        else:
            self._command("stopL", self.stop_acceleration, False)
        self._mode, self._move_pending = "idle", False

    def zero_ft(self) -> None:
        self._command("zeroFtSensor")

    # -- internals -------------------------------------------------------------------------

    def _start_move(
        self, mode: _Mode, method: str, target: list[float], speed: float, acceleration: float
    ) -> None:
        self._enter_mode(mode)
        self._progress_before_move = int(self._require_control().getAsyncOperationProgress())
        self._command(method, target, float(speed), float(acceleration), True)
        self._mode, self._move_pending = mode, True

    def _enter_mode(self, mode: _Mode) -> None:
        """Leave the current motion mode when the next command needs a different one."""
        current = self._mode
        if current == mode and mode in ("speed", "servo"):
            return
        if current == "speed":
            self._command("speedStop", self.stop_acceleration)
        elif current == "servo":
            self._command("servoStop", self.stop_acceleration)
        elif mode in ("speed", "servo") and not self.motion_done():
            # ur_rtde's moveL/moveJ kill a running async move themselves; streaming does not.
            self._command("stopL", self.stop_acceleration, False)
        self._mode, self._move_pending = mode, False

    def _command(self, method: str, *args: Any) -> Any:
        control = self._require_control()
        if not control.isConnected():
            raise URConnectionError(
                f"robot {self.name!r}: RTDE control link to {self.host} is down; call reconnect()"
            )
        result = getattr(control, method)(*args)
        if result is False:
            raise URCommandError(
                f"robot {self.name!r}: ur_rtde {method}{tuple(args)} was not accepted by "
                f"{self.host} (is the control script running? protective stop?)"
            )
        return result


def _check_range(robot: str, key: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ValueError(f"robot {robot!r}: {key} must be in [{low}, {high}], got {value}")
