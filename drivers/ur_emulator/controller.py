"""The emulated controller: a :class:`SimRobot` stepped at 500 Hz in a thread, the RTDE registers,
robot / safety / program state, and the program that runs (ur_rtde's control script, see
``rtde_script``).

Every cycle (``period``, 2 ms): the program reads the input registers and acts on the arm, the
arm is stepped, the RTDE watchdog is checked, and the outputs are published (``snapshot``) for
the RTDE connections, which are woken through ``cycle_event``. The cycle keeps wall time: when
the thread wakes late it steps the arm by the time that passed (at most ``MAX_CATCH_UP``), so
the arm's clock is the controller's uptime.

What stops the program (``runtime_state`` STOPPED, the arm decelerates): a protective stop,
an emergency stop, the RTDE watchdog, dashboard ``stop``, ``power off``, ur_rtde's stop-script
command, and a command the emulator cannot run (an error message names it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_robot import SimRobot
from orbitree.skills import kinematics as kin
from orbitree.skills.se3 import wrench_tcp_to_base

_log = logging.getLogger(__name__)

PERIOD = 0.002  # s, the e-Series controller cycle
MAX_CATCH_UP = 0.05  # s: a thread late by more than this loses the rest (the arm's time slips)
URCONTROL_VERSION = (5, 15, 1, 0)

# robot_mode / safety_mode / runtime_state values (RTDE guide, ur_rtde enums)
ROBOT_MODE_POWER_OFF, ROBOT_MODE_IDLE, ROBOT_MODE_RUNNING = 3, 5, 7
SAFETY_NORMAL, SAFETY_PROTECTIVE_STOP, SAFETY_ROBOT_EMERGENCY_STOP = 1, 3, 7
STOPPED, PLAYING = 1, 2
JOINT_RUNNING = 253
ROBOT_MODE_NAMES = {3: "POWER_OFF", 5: "IDLE", 7: "RUNNING"}
SAFETY_MODE_NAMES = {1: "NORMAL", 3: "PROTECTIVE_STOP", 7: "ROBOT_EMERGENCY_STOP"}


def pose_to_vector(tcp2base: np.ndarray) -> list[float]:
    """(4, 4) -> UR pose [x, y, z, rx, ry, rz]."""
    return [*map(float, tcp2base[:3, 3]), *map(float, Rotation.from_matrix(tcp2base[:3, :3]).as_rotvec())]


def vector_to_pose(pose: Any) -> np.ndarray:
    values = np.asarray(pose, dtype=float).reshape(6)
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_rotvec(values[3:]).as_matrix()
    matrix[:3, 3] = values[:3]
    return matrix


class URController:
    """State of one emulated UR e-Series controller around ``robot`` (see the module notes).

    ``remote_control``: the pendant's Local/Remote switch (scripts from the network are ignored
    in local mode, as on PolyScope 5). ``unlock_delay``: a protective stop can be unlocked only
    this long after it happened (5 s on PolyScope). All methods are thread-safe.
    """

    def __init__(self, robot: SimRobot, *, period: float = PERIOD, remote_control: bool = True,
                 powered: bool = True, unlock_delay: float = 5.0, version: tuple[int, ...] = URCONTROL_VERSION,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.robot = robot
        self.period = float(period)
        self.version = tuple(version)
        self.remote_control = remote_control
        self.unlock_delay = float(unlock_delay)
        self._clock = clock
        self.lock = threading.RLock()
        self.cycle_event = threading.Condition(self.lock)
        self.cycles = 0
        self.powered = powered
        self.brakes_released = powered
        self.emergency_stop = False
        self.runtime_state = STOPPED
        self.program: Any = None  # the running program (rtde_script.ControlScript) or None
        self.loaded_program = ""  # dashboard 'load'
        self.messages: deque[str] = deque(maxlen=200)  # the controller log (textmsg, errors)
        self.int_in = [0] * 48
        self.double_in = [0.0] * 48
        self.bits_in = 0  # input bit registers 64..127
        self.int_out = [0] * 48
        self.double_out = [0.0] * 48
        self.bits_out = 0  # output bit registers 64..127
        self.other_inputs: dict[str, object] = {}
        self.payload = (0.0, (0.0, 0.0, 0.0))
        self.watchdog: tuple[str, float, str] | None = None  # (variable, min frequency, action)
        self._input_stamps: dict[str, float] = {}
        self._pstop_since: float | None = None
        self._history: deque[np.ndarray] = deque(maxlen=1000)
        self._started = clock()
        self._thread: threading.Thread | None = None
        self._running = False
        self.snapshot: dict[str, object] = {}
        self.on_cycle: Callable[[], None] | None = None  # called in every cycle, under the lock
        self._publish()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="ur-emulator-controller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        with self.lock:
            self.cycle_event.notify_all()

    def _loop(self) -> None:
        next_at = self._clock()
        last = next_at
        while self._running:
            now = self._clock()
            if now < next_at:
                time.sleep(next_at - now)
                now = self._clock()
            elapsed = min(now - last, MAX_CATCH_UP)
            last = now
            next_at += self.period
            if next_at < now - MAX_CATCH_UP:  # far behind: realign rather than burst
                next_at = now + self.period
            try:
                self.cycle(max(elapsed, 1e-6))
            except Exception:  # a bug here must not kill the controller silently
                _log.exception("ur emulator: controller cycle failed")
                with self.lock:
                    self.end_program("internal error in the emulator (see the log)")

    def cycle(self, dt: float) -> None:
        """One controller cycle of ``dt`` seconds (tests call it directly, without the thread)."""
        with self.lock:
            now = self._clock()
            self._check_watchdog(now)
            if self.program is not None and self.runtime_state == PLAYING:
                self.program.cycle()
            self.robot.step(dt)
            if self.robot.protective_stop and self._pstop_since is None:
                self._pstop_since = now
                reason = self.robot.protective_stop_reason
                self.log(f"C204A0: protective stop: {reason}")
                self.end_program(f"protective stop ({reason})")
            self._publish()
            if self.on_cycle is not None:
                self.on_cycle()
            self.cycles += 1
            self.cycle_event.notify_all()

    # -- state ------------------------------------------------------------------------------

    def log(self, message: str) -> None:
        self.messages.append(message)
        _log.info("ur emulator: %s", message)

    @property
    def robot_mode(self) -> int:
        if not self.powered:
            return ROBOT_MODE_POWER_OFF
        return ROBOT_MODE_RUNNING if self.brakes_released else ROBOT_MODE_IDLE

    @property
    def safety_mode(self) -> int:
        if self.emergency_stop:
            return SAFETY_ROBOT_EMERGENCY_STOP
        return SAFETY_PROTECTIVE_STOP if self.robot.protective_stop else SAFETY_NORMAL

    def can_run(self) -> str | None:
        """Why a program cannot start now, or None."""
        if self.robot_mode != ROBOT_MODE_RUNNING:
            return f"the robot is {ROBOT_MODE_NAMES[self.robot_mode]}, not RUNNING (power on, brake release)"
        if self.safety_mode != SAFETY_NORMAL:
            return f"safety mode is {SAFETY_MODE_NAMES[self.safety_mode]}"
        return None

    def run_program(self, program: Any) -> bool:
        """Replace the running program by ``program`` and start it, if the robot can run."""
        with self.lock:
            if self.program is not None:
                self.end_program("replaced by a new program")
            why = self.can_run()
            if why is not None:
                self.log(f"program not started: {why}")
                return False
            self.program = program
            self.watchdog = None
            self.runtime_state = PLAYING
            program.start()
            self._publish()
            return True

    def end_program(self, reason: str) -> None:
        """Stop the running program (the arm decelerates), as the controller does on an error."""
        with self.lock:
            if self.program is not None:
                self.log(f"program stopped: {reason}")
                self.program.stopped()
            self.program = None
            self.watchdog = None
            self.runtime_state = STOPPED
            self.robot.stop()
            self._publish()

    def trigger_protective_stop(self, reason: str = "triggered") -> None:
        with self.lock:
            self.robot.trigger_protective_stop(reason)

    def unlock_protective_stop(self) -> str | None:
        """None when unlocked, else why not."""
        with self.lock:
            if not self.robot.protective_stop:
                return None
            since = self._clock() - (self._pstop_since or self._clock())
            if since < self.unlock_delay:
                return (f"Cannot unlock protective stop until {self.unlock_delay:g}s after occurrence. "
                        "Always inspect cause of protective stop before unlocking")
            self.robot.unlock_protective_stop()
            self._pstop_since = None
            return None

    def set_emergency_stop(self, pressed: bool) -> None:
        with self.lock:
            self.emergency_stop = pressed
            if pressed:
                self.end_program("emergency stop")
                self.powered = self.brakes_released = False

    def power(self, on: bool) -> None:
        with self.lock:
            if not on:
                self.end_program("power off")
                self.brakes_released = False
            self.powered = on and not self.emergency_stop

    def release_brakes(self) -> None:
        with self.lock:
            if self.powered:
                self.brakes_released = True

    # -- RTDE inputs ------------------------------------------------------------------------

    def write_inputs(self, values: dict[str, object]) -> None:
        """Values of an input data package (names from ``protocol.INPUTS``)."""
        with self.lock:
            now = self._clock()
            for name, value in values.items():
                self._input_stamps[name] = now
                if name.startswith("input_int_register_"):
                    self.int_in[int(name.rsplit("_", 1)[1])] = int(value)  # type: ignore[call-overload]
                elif name.startswith("input_double_register_"):
                    self.double_in[int(name.rsplit("_", 1)[1])] = float(value)  # type: ignore[arg-type]
                elif name.startswith("input_bit_register_"):
                    bit = int(name.rsplit("_", 1)[1]) - 64
                    self.bits_in = (self.bits_in | (1 << bit)) if value else (self.bits_in & ~(1 << bit))
                else:
                    self.other_inputs[name] = value

    def set_watchdog(self, variable: str, min_frequency: float, action: str = "stop") -> None:
        """URScript ``rtde_set_watchdog``: ``action`` when ``variable`` is not updated for 1/f s."""
        with self.lock:
            if min_frequency <= 0:
                self.watchdog = None
                return
            self.watchdog = (variable, float(min_frequency), action)
            self._input_stamps[variable] = self._clock()  # armed from now

    def _check_watchdog(self, now: float) -> None:
        if self.watchdog is None or self.program is None:
            return
        variable, frequency, action = self.watchdog
        age = now - self._input_stamps.get(variable, now)
        if age > 1.0 / frequency and action != "ignore":
            self.end_program(f"RTDE input watchdog: {variable} not updated for {age * 1e3:.0f} ms "
                             f"(minimum {frequency:g} Hz)")

    # -- outputs ----------------------------------------------------------------------------

    def joint_history(self, steps: int) -> np.ndarray:
        with self.lock:
            if not self._history:
                return self.robot.read().q
            return self._history[-1 - min(max(steps, 0), len(self._history) - 1)]

    def _publish(self) -> None:
        state = self.robot.read()
        self._history.append(state.q)
        pose = pose_to_vector(state.tcp2base)
        force_base = wrench_tcp_to_base(state.wrench, state.tcp2base)
        running = self.runtime_state == PLAYING
        safety = self.safety_mode
        status_bits = (1 << 0) if safety == SAFETY_NORMAL else 0
        if safety == SAFETY_PROTECTIVE_STOP:
            status_bits |= 1 << 2
        if safety == SAFETY_ROBOT_EMERGENCY_STOP:
            status_bits |= (1 << 6) | (1 << 7)
        q, qd = [float(v) for v in state.q], [float(v) for v in state.qd]
        elbow = kin.link_frames(self.robot.table, state.q)[3][:3, 3]
        gravity_tool = state.tcp2base[:3, :3].T @ np.array([0.0, 0.0, 9.81])
        snap: dict[str, object] = {
            "timestamp": self._clock() - self._started,
            "target_q": q, "target_qd": qd, "target_qdd": [0.0] * 6,
            "target_current": [0.0] * 6, "target_moment": [0.0] * 6,
            "actual_q": q, "actual_qd": qd,
            "actual_current": [0.0] * 6, "actual_current_window": [0.0] * 6,
            "actual_current_as_torque": [0.0] * 6, "joint_control_output": [0.0] * 6,
            "actual_TCP_pose": pose, "actual_TCP_speed": [float(v) for v in state.tcp_twist],
            "actual_TCP_force": [float(v) for v in force_base],
            "target_TCP_pose": pose, "target_TCP_speed": [float(v) for v in state.tcp_twist],
            "joint_temperatures": [30.0] * 6, "actual_joint_voltage": [48.0] * 6 if self.powered else [0.0] * 6,
            "ft_raw_wrench": [float(v) for v in state.wrench],
            "payload_inertia": [0.0] * 6,
            "actual_digital_input_bits": 0, "actual_execution_time": 0.3,
            "robot_mode": self.robot_mode,
            "joint_mode": [JOINT_RUNNING] * 6,
            "safety_mode": safety, "safety_status": safety,
            "actual_tool_accelerometer": [float(v) for v in gravity_tool],
            "speed_scaling": 1.0, "target_speed_fraction": 1.0, "actual_momentum": 0.0,
            "actual_main_voltage": 48.0, "actual_robot_voltage": 48.0 if self.powered else 0.0,
            "actual_robot_current": 0.8 if self.powered else 0.0,
            "actual_digital_output_bits": 0,
            "runtime_state": self.runtime_state,
            "elbow_position": [float(v) for v in elbow],
            "elbow_velocity": [0.0, 0.0, 0.0],
            "robot_status_bits": (1 if self.powered else 0) | (2 if running else 0),
            "safety_status_bits": status_bits,
            "analog_io_types": 0, "standard_analog_input0": 0.0, "standard_analog_input1": 0.0,
            "standard_analog_output0": 0.0, "standard_analog_output1": 0.0, "io_current": 0.0,
            "tool_mode": 0, "tool_analog_input_types": 0, "tool_analog_input0": 0.0, "tool_analog_input1": 0.0,
            "tool_output_current": 0.0, "tool_temperature": 30.0, "tcp_force_scalar": float(np.linalg.norm(
                force_base[:3])), "tool_output_voltage": 0,
            "payload": self.payload[0], "payload_cog": list(self.payload[1]),
            "output_bit_registers0_to_31": 0, "output_bit_registers32_to_63": 0,
            "input_bit_registers0_to_31": int(self.other_inputs.get("input_bit_registers0_to_31", 0)),  # type: ignore[call-overload]
            "input_bit_registers32_to_63": int(self.other_inputs.get("input_bit_registers32_to_63", 0)),  # type: ignore[call-overload]
            "script_control_line": 0,
        }
        snap["output_int_register_"] = tuple(self.int_out)
        snap["output_double_register_"] = tuple(self.double_out)
        snap["input_int_register_"] = tuple(self.int_in)
        snap["input_double_register_"] = tuple(self.double_in)
        snap["output_bit_register_"] = self.bits_out
        snap["input_bit_register_"] = self.bits_in
        self.snapshot = snap

    def outputs(self, names: tuple[str, ...]) -> dict[str, object]:
        """The latest published values of ``names`` (all in ``protocol.OUTPUTS``)."""
        snap = self.snapshot
        return {name: _output(snap, name) for name in names}


def _output(snap: dict[str, object], name: str) -> object:
    value = snap.get(name)
    if value is not None:
        return value
    family, index = name.rsplit("_", 1)
    registers = snap[family + "_"]
    if family.endswith("bit_register"):
        return bool(registers >> (int(index) - 64) & 1)  # type: ignore[operator]
    return registers[int(index)]  # type: ignore[index]
