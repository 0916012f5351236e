"""The target's state as the JPL vision system sent it ([JPL] in the README's Sources): about twice
a second, a time-tagged position, orientation quaternion, linear and angular velocity, and their
covariance.

The simulated sensor measures the truth at its ``rate`` (on the tick grid: the first tick at or
after each due time; the time tag is that tick's time, the instant measured), adds noise drawn
from the 12x12 covariance it reports, and delivers the message ``latency`` seconds later (on the
first tick at or after then). Noise: ``e ~ N(0, Σ)`` with the state's error ordered as
(position m, attitude rad, velocity m/s, angular velocity rad/s), all in world axes; the
attitude error is a rotation vector on the left, ``q_measured = exp(e_att) ⊗ q_true``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

Truth = Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]]  # () -> body2world (4, 4), v (3,), w (3,)


@dataclass(frozen=True)
class TargetState:
    """One message: world frame, the body's centre of mass; ``quaternion`` (x, y, z, w) body to world."""

    stamp: float  # s, mission time the state was measured at
    position: np.ndarray  # (3,) m
    quaternion: np.ndarray  # (4,)
    velocity: np.ndarray  # (3,) m/s
    angular_velocity: np.ndarray  # (3,) rad/s
    covariance: np.ndarray  # (12, 12): position, attitude (rotation vector), velocity, angular velocity

    def pose(self) -> np.ndarray:
        """body2world (4, 4)."""
        out = np.eye(4)
        out[:3, :3] = Rotation.from_quat(self.quaternion).as_matrix()
        out[:3, 3] = self.position
        return out

    @property
    def matrix(self) -> np.ndarray:
        """body2world (4, 4), as the views show a stamped pose."""
        return self.pose()

    def twist(self) -> np.ndarray:
        """(6,): velocity, angular velocity (world)."""
        return np.concatenate([self.velocity, self.angular_velocity])


def diagonal_covariance(sigma_position: float, sigma_attitude: float, sigma_velocity: float,
                        sigma_angular_velocity: float) -> np.ndarray:
    """(12, 12) covariance of independent errors with these standard deviations per axis."""
    sigmas = np.repeat([sigma_position, sigma_attitude, sigma_velocity, sigma_angular_velocity], 3)
    return np.diag(sigmas**2)


class StateSensor:
    """Samples ``truth`` every ``1/rate`` s, delivers each message ``latency`` s later."""

    def __init__(self, truth: Truth, rate: float, latency: float, covariance: np.ndarray,
                 rng: np.random.Generator) -> None:
        if rate <= 0.0 or latency < 0.0:
            raise ValueError(f"need rate > 0 and latency >= 0, got {rate}, {latency}")
        covariance = np.asarray(covariance, float)
        if covariance.shape != (12, 12) or not np.allclose(covariance, covariance.T):
            raise ValueError("the covariance is a symmetric (12, 12) matrix")
        self._truth, self.period, self.latency = truth, 1.0 / rate, latency
        self.covariance = covariance
        # a factor L with L Lᵀ = Σ (Σ may be singular: a sensor exact on some axis)
        values, vectors = np.linalg.eigh(covariance)
        if values.min() < -1e-12 * max(values.max(), 1e-300):
            raise ValueError("the covariance is not positive semi-definite")
        self._factor = vectors * np.sqrt(np.clip(values, 0.0, None))
        self._rng = rng
        self._next = 0.0
        self._queue: deque[tuple[float, TargetState]] = deque()

    def measure(self, now: float) -> TargetState:
        """A noisy measurement of the truth now (stamped ``now``)."""
        pose, v, w = self._truth()
        e = self._factor @ self._rng.standard_normal(12)
        attitude = Rotation.from_rotvec(e[3:6]) * Rotation.from_matrix(pose[:3, :3])
        return TargetState(now, pose[:3, 3] + e[:3], attitude.as_quat(), np.asarray(v) + e[6:9],
                           np.asarray(w) + e[9:], self.covariance)

    def poll(self, now: float, tolerance: float = 1e-9) -> list[TargetState]:
        """Measure if one is due, and return the messages that have arrived by ``now`` (oldest first)."""
        if now >= self._next - tolerance:
            self._queue.append((now + self.latency, self.measure(now)))
            while self._next <= now + tolerance:
                self._next += self.period
        out = []
        while self._queue and self._queue[0][0] <= now + tolerance:
            out.append(self._queue.popleft()[1])
        return out
