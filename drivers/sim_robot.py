"""Simulated UR10e: the ``Robot`` protocol on the kinematics of ``orbitree.skills.kinematics``.

Time. Nothing moves by itself: the sim world calls ``step(dt)`` once per tick, in lockstep with
the executive, and the arm is integrated (explicit Euler on joint velocities) in control periods
of about ``period`` (default 2 ms, the e-Series 500 Hz). The *command period* is the time one
command covers: ``command_period`` if given, else the ``dt`` of the current ``step``.

Modes (a new command replaces the running one, as on the UR controller):

* ``speed_l(twist, a)``: the reference twist ramps to the command at ``a`` (m/s² linear, rad/s²
  angular, as URScript ``speedl``); joint velocities by damped least squares. Watchdog: without
  a new ``speed_l`` within ``watchdog_timeout`` (default 3 command periods) the command becomes
  zero and the arm ramps to rest at the same ``a``.
* ``servo_l(pose)``: straight line reaching ``pose`` one command period after the call, then
  held; the speed is capped so that the joints can brake within the acceleration limit.
* ``move_l(pose, v, a)``: straight line, trapezoidal profile on the longer of the linear (m) and
  angular (rad) distance, tracked with feed-forward and feedback; done within 10 µm and 1e-4 rad
  after the profile ends. ``move_j(q, v, a)``: trapezoid on the joint with the longest travel,
  the others synchronised. Both are non-blocking (poll ``motion_done``).
* ``stop()``: all joints decelerate together (direction kept) at ``joint_acceleration``; at rest
  after ``max_i |qd_i| / joint_acceleration``, rounded up to a period.

What clips (slower, direction kept, no error), each by one factor on the whole vector:

* a commanded twist (``speed_l``, ``servo_l``, ``move_l`` speed) above the TCP linear limit
  ``tcp_speed`` (default 1.0 m/s, below the UR10e's usual 1.5 m/s safety setting) or the angular
  limit ``tcp_angular_speed`` (default pi rad/s);
* joint velocities above the joint speed limits (UR10e: 120 deg/s base and shoulder, 180 deg/s
  the others), in any mode except the singular case below; then the TCP limits again;
* the change of the joint velocity vector per period, to ``joint_acceleration`` (default 8
  rad/s², an assumption); ``move_j`` speed and acceleration are clipped to the joint limits.

What protective-stops (``protective_stop`` True, the arm decelerates at ``joint_acceleration``,
motion commands are ignored until ``unlock_protective_stop()``):

* a Cartesian command whose exact (undamped) joint velocity exceeds a joint speed limit while the
  arm is near a singularity (smallest singular value of the Jacobian below
  ``singular_threshold``, default 0.05): the UR controller stops rather than bend the path there;
  slower commands in that zone, or along directions still available, run on the damped solution;
* a joint that would leave its range in the next period (held at the range limit meanwhile);
* ``move_j`` outside the joint range, or ``move_l`` to a pose the numerical IK cannot reach from
  the current configuration or reaches only outside the range (at the call; nothing moves);
* ``trigger_protective_stop(reason)`` (fault injection, safety monitor).

Wrench. ``set_external_wrench`` takes a constant (6,) wrench or a callable
``(t, tcp2base, tcp_twist) -> (6,)`` (the contact model), TCP frame. The wrist sensor
(``orbitree.drivers.sim_ft``: ``ft``, a :class:`FTSensorModel`; ideal by default, the UR10e's
datasheet figures in missions) reads it plus ``ft_offset``, with its noise, per-run bias, drift,
saturation and filter lag; ``zero_ft`` removes the offset and the load of that instant.

Kinematics. The controller computes with the nominal table ``table`` and reports the TCP pose
it gives (``read().tcp2base``), as a UR reports the pose its model gives; the arm is built to
``true_table`` (default: the nominal one), so the real TCP (``tcp2base()``, ``cam2base()``,
``read_truth()``: what the world, the camera and the ground truth use) is elsewhere by the
table's errors (:func:`perturbed_table` draws them).

The limits, the home pose, the wrench source's type and :func:`perturbed_table` are in
:mod:`orbitree.drivers.sim_robot_config` (re-exported here); what runs in each control period (the
Euler step, the joint velocity each mode asks for, the clipping and the singular-zone stop) in
:mod:`orbitree.drivers.sim_robot_control` (``SimRobotControl``, a base class of :class:`SimRobot`).
This module holds :class:`SimRobot`: its construction, the commands, the reads and the simulation
hooks.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from orbitree.drivers.interfaces import RobotState
from orbitree.drivers.sim_ft import IDEAL_FT, FTSensor, FTSensorModel
from orbitree.drivers.sim_robot_config import UR10E_HOME_Q, SimRobotLimits, WrenchSource, perturbed_table
from orbitree.drivers.sim_robot_control import SimRobotControl, _Mode
from orbitree.skills import kinematics as kin
from orbitree.skills import se3

__all__ = ["UR10E_HOME_Q", "SimRobot", "SimRobotLimits", "WrenchSource", "perturbed_table"]


class SimRobot(SimRobotControl):
    """A simulated UR10e with a wrist F/T sensor, implementing ``Robot``; see the module notes.

    ``tool`` is ``tcp2flange`` (4, 4), ``cam2tcp`` the camera mount (4, 4); both default to the
    identity. ``q0`` (6,) rad defaults to :data:`UR10E_HOME_Q`.
    """

    def __init__(
        self,
        name: str = "arm",
        *,
        q0: np.ndarray | None = None,
        tool: np.ndarray | None = None,
        cam2tcp: np.ndarray | None = None,
        limits: SimRobotLimits | None = None,
        table: kin.DHTable = kin.UR10E,
        period: float = 0.002,
        command_period: float | None = None,
        watchdog_timeout: float | None = None,
        damping: float = 0.05,
        singular_threshold: float = 0.05,
        ft: FTSensorModel = IDEAL_FT,
        ft_offset: np.ndarray | None = None,
        true_table: kin.DHTable | None = None,
        seed: int | np.random.Generator = 0,
    ) -> None:
        self.name = name
        self._table = table
        self._true_table = table if true_table is None else true_table
        self._limits = limits or SimRobotLimits()
        n = table.n_joints
        self._tool = np.eye(4) if tool is None else se3.check_pose(tool, "tool").copy()
        self._cam2tcp = np.eye(4) if cam2tcp is None else se3.check_pose(cam2tcp, "cam2tcp").copy()
        self._lower = np.array(self._limits.joint_lower, dtype=float)
        self._upper = np.array(self._limits.joint_upper, dtype=float)
        self._speed_limit = np.array(self._limits.joint_speed, dtype=float)
        self._lower_list, self._upper_list = self._lower.tolist(), self._upper.tolist()
        for label, array in (
            ("joint_speed", self._speed_limit),
            ("joint_lower", self._lower),
            ("joint_upper", self._upper),
        ):
            if array.shape != (n,):
                raise ValueError(f"limits.{label} must have {n} entries, got {array.shape}")
        for label, value in (
            ("period", period),
            ("command_period", command_period),
            ("watchdog_timeout", watchdog_timeout),
        ):
            if value is not None and not value > 0.0:
                raise ValueError(f"{label} must be > 0, got {value}")
        self._period = float(period)
        self._command_period = command_period
        self._watchdog_timeout = watchdog_timeout
        self._damping = float(damping)
        self._singular_threshold = float(singular_threshold)
        for label, value in (("damping", self._damping), ("singular_threshold", self._singular_threshold)):
            if not (math.isfinite(value) and value >= 0.0):  # checked once: the controller's DLS trusts them
                raise ValueError(f"{label} must be finite and >= 0, got {value}")
        self._ft_offset = np.zeros(6) if ft_offset is None else np.array(ft_offset, dtype=float)
        self._rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._ft = FTSensor(ft, self._rng)
        self._wrench_source: WrenchSource | np.ndarray | None = None
        self._t = 0.0
        self._step_dt = self._period
        self._q = np.zeros(n)
        self._qd = np.zeros(n)
        self._mode = _Mode.IDLE
        self._move_active = False
        self._pstop_reason: str | None = None
        self._cmd_time = 0.0
        self._twist_cmd = np.zeros(6)
        self._twist_ref = np.zeros(6)
        self._twist_acc = 0.5
        self._target = np.eye(4)
        self._move_start = np.eye(4)
        self._move_delta = np.zeros(6)
        self._q_start = np.zeros(n)
        self._q_goal = np.zeros(n)
        self._profile = kin.TrapezoidProfile(0.0, 1.0, 1.0)
        self._kinematics: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.set_joint_positions(UR10E_HOME_Q if q0 is None else q0)

    # ------------------------------------------------------------------ Robot protocol

    def setup(self) -> None:
        """Nothing to connect in simulation."""

    def shutdown(self) -> None:
        self.stop()

    def read(self) -> RobotState:
        tcp2base, jacobian = self._pose_and_jacobian(self._table)
        twist = jacobian @ self._qd
        self._sense(tcp2base, twist)
        wrench = self._ft.reading()
        return RobotState(
            stamp=self._t,
            q=self._q.copy(),
            qd=self._qd.copy(),
            tcp2base=tcp2base.copy(),
            tcp_twist=twist,
            wrench=wrench,
            protective_stop=self.protective_stop,
            moving=self._move_active,
        )

    def speed_l(self, twist: np.ndarray, acceleration: float = 0.5) -> None:
        command = se3.check_vector(twist, 6, "twist")
        accel = _positive(acceleration, "acceleration")
        if self.protective_stop:
            return
        if self._mode is not _Mode.SPEED:
            self._twist_ref = self._current_twist()
            self._enter(_Mode.SPEED)
        self._cmd_time = self._t
        self._twist_cmd = command * self._tcp_scale(command)
        self._twist_acc = accel

    def servo_l(self, tcp2base: np.ndarray) -> None:
        target = se3.check_pose(tcp2base, "tcp2base")
        if self.protective_stop:
            return
        self._enter(_Mode.SERVO)
        self._target = target.copy()

    def move_l(self, tcp2base: np.ndarray, speed: float = 0.25, acceleration: float = 1.2) -> None:
        goal = se3.check_pose(tcp2base, "tcp2base")
        speed, accel = _positive(speed, "speed"), _positive(acceleration, "acceleration")
        if self.protective_stop:
            return
        q_goal, reached = kin.inverse_kinematics(self._table, goal, self._q, self._tool)
        if not reached:
            self.trigger_protective_stop("move_l: target pose not reachable from here")
            return
        if not self._in_range(q_goal):
            self.trigger_protective_stop("move_l: target needs joints outside their range")
            return
        start = kin.forward_kinematics(self._table, self._q, self._tool)
        delta = se3.pose_error(start, goal)
        linear = kin.TrapezoidProfile(
            float(np.linalg.norm(delta[:3])), min(speed, self._limits.tcp_speed), accel
        )
        angular = kin.TrapezoidProfile(
            float(np.linalg.norm(delta[3:])), min(speed, self._limits.tcp_angular_speed), accel
        )
        self._profile = max(linear, angular, key=lambda p: p.duration)
        self._move_start, self._move_delta, self._target = start, delta, goal.copy()
        self._enter(_Mode.MOVE_L)

    def move_j(self, q: np.ndarray, speed: float = 1.05, acceleration: float = 1.4) -> None:
        q_goal = se3.check_vector(q, self._table.n_joints, "q")
        speed, accel = _positive(speed, "speed"), _positive(acceleration, "acceleration")
        if self.protective_stop:
            return
        if not self._in_range(q_goal):
            self.trigger_protective_stop("move_j: target outside the joint range")
            return
        accel = min(accel, self._limits.joint_acceleration)
        travel = np.abs(q_goal - self._q)
        profiles = [
            kin.TrapezoidProfile(float(d), min(speed, float(v)), accel)
            for d, v in zip(travel, self._speed_limit, strict=True)
        ]
        self._profile = max(profiles, key=lambda p: p.duration)
        self._q_start, self._q_goal = self._q.copy(), q_goal.copy()
        self._enter(_Mode.MOVE_J)

    def motion_done(self) -> bool:
        return not self._move_active

    def stop(self) -> None:
        self._move_active = False
        self._twist_cmd = np.zeros(6)
        if self._mode is not _Mode.IDLE:
            self._mode = _Mode.STOPPING

    def zero_ft(self) -> None:
        tcp2base, jacobian = self._pose_and_jacobian(self._table)
        self._sense(tcp2base, jacobian @ self._qd)
        self._ft.zero()

    @property
    def ft(self) -> FTSensor:
        """The wrist sensor's state (its ``offset``, its ``model``): for tests and reports."""
        return self._ft

    # ------------------------------------------------------------------ simulation hooks

    @property
    def time(self) -> float:
        """Simulated time (s) since construction."""
        return self._t

    @property
    def period(self) -> float:
        return self._period

    @property
    def limits(self) -> SimRobotLimits:
        return self._limits

    @property
    def tcp2flange(self) -> np.ndarray:
        return self._tool.copy()

    def set_tool(self, tcp2flange: np.ndarray) -> None:
        """Make ``tcp2flange`` (4, 4) the TCP (URScript ``set_tcp``): poses read and commanded from
        now on are the new TCP's. The camera stays where it is on the flange; a running motion
        is stopped first, as its target was a pose of the old TCP."""
        tool = se3.check_pose(tcp2flange, "tcp2flange")
        if self._mode is not _Mode.IDLE:
            self.stop()
        self._cam2tcp = np.linalg.solve(tool, self._tool @ self._cam2tcp)
        self._tool = tool.copy()

    @property
    def cam2tcp(self) -> np.ndarray:
        return self._cam2tcp.copy()

    @property
    def table(self) -> kin.DHTable:
        """The link table the controller computes with (what it reports and moves by)."""
        return self._table

    @property
    def true_table(self) -> kin.DHTable:
        """The link table the arm is built to (ground truth: the world, the camera, a laser tracker)."""
        return self._true_table

    @property
    def q(self) -> np.ndarray:
        """The joint angles now (6,), rad."""
        return self._q.copy()

    def read_truth(self) -> tuple[np.ndarray, np.ndarray]:
        """(TCP twist (6,), TCP position (3,)) in the base frame, of the real arm (reports only)."""
        tcp2base, jacobian = self._pose_and_jacobian(self._true_table)
        return jacobian @ self._qd, tcp2base[:3, 3].copy()

    def tcp2base(self) -> np.ndarray:
        """Real TCP pose (4, 4) in the base frame (true kinematics; no sensor read, no noise)."""
        return self._pose_and_jacobian(self._true_table)[0].copy()

    def cam2base(self) -> np.ndarray:
        """Real camera pose (4, 4) in the base frame, for the renderer."""
        return self.tcp2base() @ self._cam2tcp

    @property
    def protective_stop(self) -> bool:
        return self._pstop_reason is not None

    @property
    def protective_stop_reason(self) -> str | None:
        return self._pstop_reason

    def trigger_protective_stop(self, reason: str) -> None:
        """Enter protective stop (kept if already in one): decelerate and ignore motion commands."""
        if self._pstop_reason is None:
            self._pstop_reason = reason
        self.stop()

    def unlock_protective_stop(self) -> None:
        self._pstop_reason = None

    def set_joint_positions(self, q: np.ndarray) -> None:
        """Place the arm at rest at ``q`` (6,) rad, cancelling any motion."""
        joints = se3.check_vector(q, self._table.n_joints, "q")
        if not self._in_range(joints):
            raise ValueError(f"q outside the joint range [{self._lower}, {self._upper}]: {joints}")
        self._q, self._qd = joints.copy(), np.zeros_like(joints)
        self._mode, self._move_active = _Mode.IDLE, False

    def set_external_wrench(self, source: WrenchSource | np.ndarray | None) -> None:
        """The wrench (TCP frame) the F/T sensor sees: constant (6,), callable, or None (zero)."""
        if source is None or callable(source):
            self._wrench_source = source
        else:
            self._wrench_source = se3.check_vector(source, 6, "wrench").copy()

    def step(self, dt: float) -> None:
        """Advance the simulation by ``dt`` seconds in control periods of about ``period``."""
        duration = _positive(dt, "dt")
        count = max(1, round(duration / self._period))
        self._step_dt = duration
        for _ in range(count):
            self._advance(duration / count)

    # ------------------------------------------------------------------ internals

    def _enter(self, mode: _Mode) -> None:
        self._mode = mode
        self._move_active = mode in (_Mode.MOVE_L, _Mode.MOVE_J)
        self._cmd_time = self._t

    def _in_range(self, q: np.ndarray) -> bool:
        # numpy's comparisons, on floats (a NaN is out of range either way): once a period
        values = q.tolist()
        if len(values) != len(self._lower_list):  # zip(strict=True)'s error, as before
            return all(lo <= v <= hi for lo, v, hi in zip(self._lower_list, values, self._upper_list, strict=True))
        return all(map(operator.le, self._lower_list, values)) and all(map(operator.le, values, self._upper_list))

    def _pose_and_jacobian(self, table: kin.DHTable) -> tuple[np.ndarray, np.ndarray]:
        """``kin.pose_and_jacobian(table, q, tool)`` now, computed once per joint state and tool
        (the arm's step, its reads and the world's ground truth all ask at the same joints);
        shared arrays: read them, do not change them."""
        cached = self._kinematics.get(id(table))
        if cached is not None and cached[0] is self._q and cached[1] is self._tool:
            return cached[2], cached[3]
        tcp2base, jacobian = kin.pose_and_jacobian(table, self._q, self._tool)
        self._kinematics[id(table)] = (self._q, self._tool, tcp2base, jacobian)
        return tcp2base, jacobian

    def _current_twist(self) -> np.ndarray:
        return self._pose_and_jacobian(self._table)[1] @ self._qd

    def _sense(self, tcp2base: np.ndarray, twist: np.ndarray) -> None:
        """Bring the wrist sensor up to now with the wrench acting now."""
        self._ft.advance(self._t, self._true_wrench(tcp2base, twist) + self._ft_offset)

    def _true_wrench(self, tcp2base: np.ndarray, twist: np.ndarray) -> np.ndarray:
        if self._wrench_source is None:
            return np.zeros(6)
        if callable(self._wrench_source):
            value = self._wrench_source(self._t, tcp2base, twist)
            return se3.check_vector(value, 6, "external wrench")
        return self._wrench_source.copy()


def _positive(value: float, name: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return number
