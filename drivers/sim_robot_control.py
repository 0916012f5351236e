"""The simulated arm's controller, per control period (a base class of ``SimRobot``).

``SimRobotControl`` holds what :class:`~orbitree.drivers.sim_robot.SimRobot` does in each control
period of ``step``: the explicit Euler step of the joints (``_advance``, with the joint range's
protective stop), the joint velocity each motion mode asks for (``speed_l``'s ramp and watchdog,
``servo_l``'s braking cap, the ``move_l`` / ``move_j`` trackers on their trapezoids), the damped
least squares with the singular-zone protective stop (``_dls``) and the clipping to the joint
and TCP speed limits. The modes and limits are described in the docstring of
:mod:`orbitree.drivers.sim_robot`, where the commands that start them are. The methods work on
the attributes ``SimRobot.__init__`` sets (``_q``, ``_qd``, ``_mode``, ``_limits``, ...) and its
``_pose_and_jacobian``, ``_in_range``, ``protective_stop`` and ``trigger_protective_stop``.
"""

from __future__ import annotations

import enum
import math

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_robot_svd import speed_period, thin_svd, undamped_dls
from orbitree.skills import kinematics as kin
from orbitree.skills import se3


class _Mode(enum.Enum):
    IDLE = "idle"
    STOPPING = "stopping"
    SPEED = "speed"
    SERVO = "servo"
    MOVE_L = "move_l"
    MOVE_J = "move_j"


_TRACKING_GAIN = 20.0  # 1/s, feedback of the move_l / move_j trackers
_DONE_POSITION = 1e-5  # m
_DONE_ANGLE = 1e-4  # rad


class SimRobotControl:
    """The simulated arm's per-period integration and motion modes; mixed into ``SimRobot``."""

    def _command_time(self) -> float:
        return self._command_period or self._step_dt

    def _tcp_scale(self, twist: np.ndarray) -> float:
        """One factor <= 1 that brings ``twist`` within the TCP linear and angular limits."""
        linear, angular = _norm(twist[:3]), _norm(twist[3:])
        factor = 1.0
        if linear > self._limits.tcp_speed:
            factor = self._limits.tcp_speed / linear
        if angular > self._limits.tcp_angular_speed:
            factor = min(factor, self._limits.tcp_angular_speed / angular)
        return factor

    def _advance(self, h: float) -> None:
        if self._mode is _Mode.IDLE and not any(self._qd.tolist()):  # ndarray.any's test, on floats
            self._t += h  # at rest: nothing to integrate
            return
        tcp2base, jacobian = self._pose_and_jacobian(self._table)
        stopped = self.protective_stop
        if self._mode is _Mode.SPEED and not stopped:
            # the ramp here, the rest of the period compiled where it is undamped (same bits)
            twist = self._speed_twist(h)
            limits = self._limits
            period = speed_period(jacobian, twist, self._singular_threshold, self._speed_limit, limits.tcp_speed,
                                  limits.tcp_angular_speed, self._qd, self._q, limits.joint_acceleration * h, h)
            q, qd = period if period is not None else self._integrate(h, self._dls(jacobian, twist), jacobian)
        else:
            qd_des = np.zeros_like(self._q) if stopped else self._desired_velocity(h, tcp2base, jacobian)
            q, qd = self._integrate(h, qd_des, jacobian)
        if not self._in_range(q):
            self.trigger_protective_stop("joint position limit")
            at_limit = (q < self._lower) | (q > self._upper)
            qd[at_limit] = 0.0
            q = np.clip(q, self._lower, self._upper)
        self._q, self._qd = q, qd
        self._t += h
        if self._mode is _Mode.STOPPING and not any(qd.tolist()):
            self._mode = _Mode.IDLE

    def _integrate(self, h: float, qd_des: np.ndarray, jacobian: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q, q̇)`` after the period: ``qd_des`` within the speed limits, the change of ``q̇`` within
        the acceleration limit, the Euler step."""
        if any(qd_des.tolist()):
            qd_des = self._limit_speed(qd_des, jacobian)
        change = _scaled(qd_des - self._qd, self._limits.joint_acceleration * h)
        qd = self._qd + change
        return self._q + qd * h, qd

    def _desired_velocity(self, h: float, tcp2base: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        if self._mode is _Mode.SPEED:
            return self._speed_velocity(h, jacobian)
        if self._mode is _Mode.SERVO:
            return self._servo_velocity(h, tcp2base, jacobian)
        if self._mode is _Mode.MOVE_L:
            return self._move_l_velocity(h, tcp2base, jacobian)
        if self._mode is _Mode.MOVE_J:
            return self._move_j_velocity(h)
        return np.zeros_like(self._q)

    def _dls(self, jacobian: np.ndarray, twist: np.ndarray) -> np.ndarray:
        """Joint velocity for a TCP twist; protective stop (and zero) if the exact solution needs
        a joint faster than its limit while the arm is near a singularity."""
        undamped = undamped_dls(jacobian, twist, self._singular_threshold)  # outside the zone: compiled
        if undamped is not None:
            return undamped
        svd = thin_svd(jacobian)  # once for the test and the solution (np.linalg.svd's, compiled)
        if svd[1][-1] < self._singular_threshold:
            exact = kin.dls_from_svd(svd, twist)
            ratio = float(np.max(np.abs(exact) / self._speed_limit))
            if ratio > 1.0:
                self.trigger_protective_stop(
                    f"near a singularity a joint would need {ratio:.1f} x its speed limit"
                )
                return np.zeros_like(self._q)
        # kin.dls_from_svd(svd, twist, damping, singular_threshold=...) on the controller's own
        # checked values: the same damping schedule and the same array operations
        u, sigma, vt = svd
        lam = kin.scheduled_damping(sigma[-1].item(), self._damping, self._singular_threshold)
        denominator = sigma**2 + lam**2
        if min(denominator.tolist()) <= 1e-300:
            return kin.dls_from_svd(svd, twist, self._damping, singular_threshold=self._singular_threshold)
        return vt.T @ (sigma / denominator * (u.T @ twist))

    def _speed_velocity(self, h: float, jacobian: np.ndarray) -> np.ndarray:
        return self._dls(jacobian, self._speed_twist(h))

    def _speed_twist(self, h: float) -> np.ndarray:
        """The reference twist of this period: the command ramped at the acceleration (the
        watchdog's zero command past its timeout); STOPPING once both are zero."""
        timeout = self._watchdog_timeout or 3.0 * self._command_time()
        if self._t - self._cmd_time > timeout + 1e-12:
            self._twist_cmd = np.zeros(6)
        change = self._twist_cmd - self._twist_ref
        step_size = self._twist_acc * h
        factor = 1.0
        for part in (change[:3], change[3:]):
            norm = _norm(part)
            if norm > step_size:
                factor = min(factor, step_size / norm)
        self._twist_ref = self._twist_ref + factor * change
        if not any(self._twist_ref.tolist()) and not any(self._twist_cmd.tolist()):
            self._mode = _Mode.STOPPING
        return self._twist_ref

    def _servo_velocity(self, h: float, tcp2base: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        error = se3.pose_error(tcp2base, self._target)
        remaining = max(self._cmd_time + self._command_time() - self._t, h)
        scale = self._tcp_scale(error / remaining)
        qd = self._dls(jacobian, error * (scale / remaining))
        # Cap the speed so that every joint can still brake before the target.
        displacement = qd * (remaining / scale)
        brake = np.sqrt(2.0 * self._limits.joint_acceleration * np.abs(displacement))
        return kin.uniform_scale(qd, np.maximum(brake, 1e-12))[0]

    def _move_l_velocity(self, h: float, tcp2base: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        elapsed = self._t - self._cmd_time
        s, rate = self._path_rate(elapsed, h)
        reference = np.eye(4)
        turn = Rotation.from_rotvec(s * self._move_delta[3:]).as_matrix()
        reference[:3, :3] = turn @ self._move_start[:3, :3]
        reference[:3, 3] = self._move_start[:3, 3] + s * self._move_delta[:3]
        error = se3.pose_error(tcp2base, reference)
        if (
            elapsed >= self._profile.duration
            and np.linalg.norm(error[:3]) < _DONE_POSITION
            and np.linalg.norm(error[3:]) < _DONE_ANGLE
        ):
            self._mode, self._move_active = _Mode.IDLE, False
            return np.zeros_like(self._q)
        twist = rate * self._move_delta + _TRACKING_GAIN * error
        return self._dls(jacobian, twist * self._tcp_scale(twist))

    def _move_j_velocity(self, h: float) -> np.ndarray:
        elapsed = self._t - self._cmd_time
        travel = self._q_goal - self._q_start
        if elapsed >= self._profile.duration and np.max(np.abs(self._q_goal - self._q)) < 1e-6:
            self._mode, self._move_active = _Mode.IDLE, False
            return np.zeros_like(self._q)
        s, rate = self._path_rate(elapsed, h)
        return rate * travel + _TRACKING_GAIN * (self._q_start + s * travel - self._q)

    def _path_rate(self, elapsed: float, h: float) -> tuple[float, float]:
        """Path fraction now and its mean rate over the next period (exact feed-forward)."""
        s_now = self._profile.fraction(elapsed)
        s_next = self._profile.fraction(elapsed + h)
        return s_now, (s_next - s_now) / h

    def _limit_speed(self, qd: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        """Scale ``qd`` by one factor into the joint speed limits, then the TCP speed limits."""
        # kin.uniform_scale(qd, self._speed_limit) on the limits' floats (checked > 0 by SimRobotLimits)
        quotients = [bound / m for bound, m in zip(self._speed_limit.tolist(), map(abs, qd.tolist()), strict=True)
                     if m > bound]
        if quotients:
            qd = qd * min(quotients)
        return qd * self._tcp_scale(jacobian @ qd)


def _scaled(values: np.ndarray, limit: float) -> np.ndarray:
    """``kin.uniform_scale(values, limit)[0]`` for a 1-D float array and a float limit > 0 (the
    joints' acceleration times the period): the same quotients, minimum and product; ``values``
    itself, not a copy, when nothing is over the limit."""
    quotients = [limit / m for m in map(abs, values.tolist()) if m > limit]
    return values * min(quotients) if quotients else values


def _norm(vector: np.ndarray) -> float:
    """``np.linalg.norm`` of a 1-D float array, without its generality (hot path; same bits)."""
    return math.sqrt(vector.dot(vector))
