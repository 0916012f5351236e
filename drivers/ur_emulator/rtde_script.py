"""What ur_rtde's control script (``rtde_control.script``, uploaded by ``RTDEControlInterface``)
does with the RTDE registers, run by the emulator instead of the URScript itself.

Register protocol (ur_rtde 1.5-1.6; ``o`` = the register offset the client injects into the
script, 0 or 24):

* ``input_int_register_o`` is the command code (0 = none), ``input_int_register_o+1..`` and
  ``input_double_register_o..`` its arguments (positions as in ur_rtde's recipes).
* ``output_int_register_o``: 1 = ready for a command, 2 = done with the command. The client
  waits for 1, writes the command, waits for 2 and clears the command (writes 0); the script
  answers 1 again. Real-time commands (speedL/J, servoL/J, forceMode, ...) answer 1 at once.
* ``output_int_register_o+2``: asynchronous progress: bits 16-23 a write counter, 24-30 an
  operation id (+1 per started operation), bit 15 set while it runs, bits 0-14 its progress.
* ``output_int_register_o+1`` / ``output_double_register_o..o+5``: results (IK, FK, ...).

Each controller cycle runs one pass of the script's main loop; a synchronous move or stop
holds the loop (the command reads done only once the arm has arrived or stopped), as the
blocking URScript call does. Motion runs on :class:`SimRobot`:

* speedL -> ``speed_l`` re-issued every cycle while speeding (the script's speed thread);
  speedJ -> ``speed_l`` of ``J(q)·qd`` re-computed every cycle (the joints follow ``qd`` away
  from singularities; ``a`` is used as the twist ramp).
* servoL -> ``servo_l``; servoJ -> ``servo_l`` to the forward kinematics of ``q``.
* moveL / moveJ (sync and async), moveJ_IK, moveL_FK; stopL / stopJ / speedStop / servoStop ->
  ``stop`` (the arm decelerates at the sim's joint acceleration, whatever ``a`` says).
* forceMode: a damper per compliant axis of the task frame: ``v = (f_measured + f_target) / D``
  with D = 250 N·s/m and 25 N·m·s/rad (the emulator's choice), capped by ``limits``;
  non-compliant axes hold still. Types 0-2 all use the task frame as given.
* zeroFtSensor, setTcp, getInverseKinematics (numerical IK; a pose without solution is a
  runtime error that stops the program, as URScript's ``get_inverse_kin``), poseTrans,
  FK, getTCPOffset, setPayload, the RTDE watchdog (``rtde_set_watchdog``), triggerProtectiveStop.

Any other command (servoC, jog, path moves, teach / freedrive mode, tool contact, joint
torques, external F/T) stops the program with a message naming it: ur_rtde then reports
"RTDE control script is not running!" and its call returns False.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from orbitree.skills import kinematics as kin
from orbitree.skills.se3 import wrench_tcp_to_base

from .controller import pose_to_vector, vector_to_pose

if TYPE_CHECKING:
    from .controller import URController

READY, DONE = 1, 2
REALTIME = {24, 11, 9, 10, 6, 25, 26, 27, 38, 58}  # answered ready at once, never "done"
STOP_SCRIPT = 255
FORCE_DAMPING = np.array([250.0, 250.0, 250.0, 25.0, 25.0, 25.0])

NAMES = {
    1: "moveJ", 2: "moveJ_IK", 3: "moveL", 4: "moveL_FK", 6: "forceMode", 7: "forceModeStop",
    8: "zeroFtSensor", 9: "speedJ", 10: "speedL", 11: "servoJ", 12: "servoC", 15: "speedStop",
    16: "servoStop", 17: "setPayload", 18: "teachMode", 19: "endTeachMode", 20: "forceModeSetDamping",
    21: "forceModeSetGainScaling", 24: "servoL", 25: "toolContact", 26: "getStepTime",
    27: "getActualJointPositionsHistory", 28: "getTargetWaypoint", 29: "setTcp",
    30: "getInverseKinematics", 31: "triggerProtectiveStop", 33: "stopL", 34: "stopJ",
    35: "setWatchdog", 36: "isPoseWithinSafetyLimits", 37: "isJointsWithinSafetyLimits",
    38: "getJointTorques", 39: "poseTrans", 40: "getTCPOffset", 41: "jogStart", 42: "jogStop",
    43: "getForwardKinematics", 44: "getForwardKinematics", 45: "movePath", 46: "getInverseKinematics",
    47: "isSteady", 51: "moveUntilContact", 52: "freedriveMode", 53: "endFreedriveMode",
    54: "getFreedriveStatus", 56: "ftRtdeInputEnable", 57: "enableExternalFtSensor",
    58: "getActualToolFlangePose", 59: "setGravity", 60: "getInverseKinematicsHasSolution",
    61: "getInverseKinematicsHasSolution", 62: "startContactDetection", 63: "stopContactDetection",
    64: "readContactDetection", 65: "setTargetPayload", 255: "stopScript",
}


def is_control_script(text: str) -> bool:
    """True for ur_rtde's control program (what ``RTDEControlInterface`` uploads)."""
    return bool(re.match(r"\s*def\s+rtde_control\s*\(\s*\)\s*:", text))


def register_offset(text: str) -> int:
    """The register offset ur_rtde injected (``global reg_offset_int = 24``), default 0."""
    match = re.search(r"global\s+reg_offset_int\s*=\s*(\d+)", text)
    return int(match.group(1)) if match else 0


class ScriptError(RuntimeError):
    """A URScript runtime error: the program stops."""


class ControlScript:
    """ur_rtde's control program on ``controller`` (see the module notes)."""

    def __init__(self, controller: URController, offset: int = 0) -> None:
        if offset not in (0, 24):
            raise ValueError(f"register offset must be 0 or 24, got {offset}")
        self.ctl = controller
        self.robot = controller.robot
        self.offset = offset
        self.executing = False
        self.waiting: str | None = None  # "move" / "rest": a blocking call holds the loop
        self.move_running = False  # the script's move_thrd
        self.stop_running = False  # the script's stop_thrd
        self.speeding: tuple[int, np.ndarray, float] | None = None  # (0 speedl / 1 speedj, target, a)
        self.servo: np.ndarray | None = None
        self.force: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.wr_count = 0
        self.op_id = 0

    # -- registers --------------------------------------------------------------------------

    def _int(self, i: int) -> int:
        return self.ctl.int_in[i + self.offset]

    def _float(self, i: int) -> float:
        return self.ctl.double_in[i + self.offset]

    def _floats(self, i: int, n: int = 6) -> np.ndarray:
        return np.array(self.ctl.double_in[i + self.offset: i + self.offset + n], dtype=float)

    def _out_int(self, i: int, value: int) -> None:
        self.ctl.int_out[i + self.offset] = int(value)

    def _out_floats(self, i: int, values: np.ndarray | list[float]) -> None:
        for k, value in enumerate(values):
            self.ctl.double_out[i + self.offset + k] = float(value)

    def _progress(self, value: int) -> None:
        """write_async_progress_register of the script."""
        self.wr_count = 0 if self.wr_count >= 127 else self.wr_count + 1
        if value == 0:
            self.op_id = 0 if self.op_id >= 127 else self.op_id + 1
        reg = self.wr_count * 65536 + self.op_id * 16777216
        if value >= 0:
            reg += min(value, 32767) + 32768
        self._out_int(2, reg)

    # -- program ----------------------------------------------------------------------------

    def start(self) -> None:
        self.ctl.log("RTDE Control Script Loaded (emulated)")
        self._progress(-1)  # reset_async_progress
        self._out_int(0, READY)

    def stopped(self) -> None:
        self.speeding = self.servo = self.force = None
        self.move_running = self.stop_running = False
        self.waiting = None

    def cycle(self) -> None:
        """One pass of the main loop, and the threads the script runs."""
        try:
            self._threads()
            if self.waiting is not None:
                if not self._arrived():
                    return
                self.waiting = None
                self._out_int(0, DONE)
            cmd = self._int(0)
            if cmd in REALTIME:
                self._process(cmd)
                self._out_int(0, READY)
            elif cmd == 0:
                self.executing = False
                self._out_int(0, READY)
            elif not self.executing:
                self.executing = True
                if cmd == STOP_SCRIPT:
                    self.ctl.end_program("Received stop script!")
                    return
                self._process(cmd)
                if self.waiting is None:
                    self._out_int(0, DONE)
        except ScriptError as error:
            self.ctl.end_program(f"runtime error: {error}")

    def _arrived(self) -> bool:
        if self.waiting == "move":
            return self.robot.motion_done()
        return not np.any(self.robot.read().qd)

    def _threads(self) -> None:
        robot = self.robot
        if self.move_running and robot.motion_done():
            self.move_running = False
            self._progress(-1)
        if self.stop_running and not np.any(robot.read().qd):
            self.stop_running = False
            self._progress(-1)
        if self.speeding is not None:
            kind, target, acceleration = self.speeding
            twist = target
            if kind == 1:
                twist = kin.geometric_jacobian(robot.table, robot.read().q, robot.tcp2flange) @ target
            robot.speed_l(twist, acceleration)
        if self.force is not None:
            robot.speed_l(self._force_twist(), 10.0)

    def _force_twist(self) -> np.ndarray:
        assert self.force is not None
        frame, selection, wrench, limits = self.force
        state = self.robot.read()
        rotation = vector_to_pose(frame)[:3, :3]
        measured = wrench_tcp_to_base(state.wrench, state.tcp2base)
        measured_task = np.concatenate([rotation.T @ measured[:3], rotation.T @ measured[3:]])
        velocity = (measured_task + wrench) / FORCE_DAMPING
        velocity = np.where(selection != 0, np.clip(velocity, -np.abs(limits), np.abs(limits)), 0.0)
        return np.concatenate([rotation @ velocity[:3], rotation @ velocity[3:]])

    def _stop_async_move(self) -> None:
        if self.move_running:
            self.move_running = False
            self._progress(-1)

    def _start_move(self, kind: str, target: np.ndarray, speed: float, acceleration: float,
                    blocking: bool) -> None:
        self._stop_async_move()
        if speed <= 0 or acceleration <= 0:
            raise ScriptError(f"{kind}: speed and acceleration must be > 0")
        if kind == "j":
            self.robot.move_j(target, speed, acceleration)
        else:
            self.robot.move_l(target, speed, acceleration)
        if self.robot.protective_stop:
            return
        if blocking:
            self.waiting = "move"
        else:
            self.move_running = True
            self._progress(0)

    def _ik(self, pose: np.ndarray, near: np.ndarray | None = None) -> np.ndarray:
        robot = self.robot
        start = robot.read().q if near is None else near
        q, ok = kin.inverse_kinematics(robot.table, vector_to_pose(pose), start, robot.tcp2flange)
        if not ok:
            raise ScriptError(f"get_inverse_kin: no solution for p{[round(float(v), 6) for v in pose]}")
        return q

    def _fk(self, q: np.ndarray, tool: np.ndarray | None = None) -> list[float]:
        return pose_to_vector(kin.forward_kinematics(self.robot.table, q,
                                                     self.robot.tcp2flange if tool is None else tool))

    def _process(self, cmd: int) -> None:  # one branch per command, as the script
        robot, ctl = self.robot, self.ctl
        if cmd in (1, 2, 3, 4):  # moveJ, moveJ_IK, moveL, moveL_FK
            target, speed, acceleration = self._floats(0), self._float(6), self._float(7)
            blocking = self._int(1) != 1
            if cmd == 2:
                target = self._ik(target)
            if cmd == 4:
                target = np.array(self._fk(target))
            goal = target if cmd in (1, 2) else vector_to_pose(target)
            self._start_move("j" if cmd in (1, 2) else "l", goal, speed, acceleration, blocking)
        elif cmd == 6:  # forceMode
            selection = np.array([self._int(k) for k in range(2, 8)])
            self.force = (self._floats(0), selection, self._floats(6), self._floats(12))
            self.speeding = None
        elif cmd == 7:  # forceModeStop
            self.force = None
            robot.stop()
            self.waiting = "rest"
        elif cmd == 8:
            robot.zero_ft()
        elif cmd in (9, 10):  # speedJ, speedL
            self.speeding = (1 if cmd == 9 else 0, self._floats(0), max(self._float(6), 1e-6))
            self.servo = None
        elif cmd in (11, 24):  # servoJ, servoL
            target = self._floats(0)
            pose = vector_to_pose(self._fk(target) if cmd == 11 else target)
            self.speeding = None
            robot.servo_l(pose)
        elif cmd in (15, 16, 33, 34):  # speedStop, servoStop, stopL, stopJ
            self.speeding = self.servo = None
            asynchronous = cmd in (33, 34) and self._int(1) == 1
            self._stop_async_move()
            robot.stop()
            if asynchronous:
                if self.stop_running:
                    self._progress(-1)
                self.stop_running = True
                self._progress(0)
            else:
                self.waiting = "rest"
        elif cmd == 17:
            ctl.payload = (self._float(0), tuple(self._floats(1, 3)))
        elif cmd in (20, 21, 59):  # force-mode damping / gain scaling, gravity: stored by the real one
            ctl.log(f"{NAMES[cmd]}({self._float(0):g}) accepted (no effect on the emulated arm)")
        elif cmd == 26:
            self._out_floats(0, [ctl.period])
        elif cmd == 27:
            self._out_floats(0, ctl.joint_history(self._int(1)))
        elif cmd == 28:
            self._out_floats(0, pose_to_vector(robot.read().tcp2base))
        elif cmd == 29:
            robot.set_tool(vector_to_pose(self._floats(0)))
        elif cmd in (30, 46):
            near = self._floats(6) if cmd == 30 else None
            self._out_floats(0, self._ik(self._floats(0), near))
        elif cmd in (60, 61):
            near = self._floats(6) if cmd == 61 else robot.read().q
            _, ok = kin.inverse_kinematics(robot.table, vector_to_pose(self._floats(0)), near, robot.tcp2flange)
            self._out_int(1, int(ok))
        elif cmd == 31:
            ctl.trigger_protective_stop("triggerProtectiveStop() from the RTDE control script")
        elif cmd == 35:
            frequency = self._float(0)
            ctl.set_watchdog(f"input_int_register_{self.offset}", frequency, "stop")
        elif cmd == 36:
            _, ok = kin.inverse_kinematics(robot.table, vector_to_pose(self._floats(0)), robot.read().q,
                                           robot.tcp2flange)
            self._out_int(1, int(ok))
        elif cmd == 37:
            q = self._floats(0)
            limits = robot.limits
            self._out_int(1, int(bool(np.all(q >= limits.joint_lower) and np.all(q <= limits.joint_upper))))
        elif cmd == 39:
            self._out_floats(0, pose_to_vector(vector_to_pose(self._floats(0)) @ vector_to_pose(self._floats(6))))
        elif cmd == 40:
            self._out_floats(0, pose_to_vector(robot.tcp2flange))
        elif cmd == 43:
            self._out_floats(0, self._fk(robot.read().q))
        elif cmd == 44:
            self._out_floats(0, self._fk(self._floats(0), vector_to_pose(self._floats(6))))
        elif cmd == 47:
            self._out_int(1, int(not np.any(robot.read().qd)))
        elif cmd == 58:
            self._out_floats(0, self._fk(robot.read().q, np.eye(4)))
        elif cmd == 65:
            ctl.payload = (self._float(0), tuple(self._floats(1, 3)))
        else:
            name = NAMES.get(cmd, "unknown command")
            raise ScriptError(f"command {cmd} ({name}) is not emulated")
