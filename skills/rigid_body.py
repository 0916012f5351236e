"""Attitude dynamics of a rigid body: Euler's equations with an external torque, quaternion
kinematics, a fixed-step integrator that keeps the quaternion unit, and the prediction of a
body-fixed frame (a grapple pad) from a time-tagged state estimate.

Conventions: the body frame is the principal-or-not frame the inertia is given in, centred on
the centre of mass; ``q`` is a scalar-last unit quaternion (scipy's ``Rotation`` order) taking body
vectors to the world (inertial) frame; ``w`` is the angular velocity in the body frame, rad/s.
Euler: ``I ẇ = τ - w × (I w)``; kinematics: ``q̇ = ½ q ⊗ (w, 0)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills.se3 import check_pose, check_vector

TorqueFn = Callable[[float, Rotation, np.ndarray], np.ndarray]  # (t, attitude, w_body) -> τ body, N·m


def _inertia(inertia: np.ndarray) -> np.ndarray:
    matrix = np.asarray(inertia, float)
    if matrix.shape != (3, 3) or not np.allclose(matrix, matrix.T):
        raise ValueError(f"inertia must be a symmetric (3, 3) matrix, got {matrix.tolist()}")
    if np.linalg.eigvalsh(matrix).min() <= 0.0:
        raise ValueError("inertia must be positive definite")
    return matrix


def angular_acceleration(w: np.ndarray, inertia: np.ndarray, torque: np.ndarray) -> np.ndarray:
    """Euler's equations: ẇ (3,) in the body frame."""
    return np.linalg.solve(inertia, torque - np.cross(w, inertia @ w))


@dataclass(frozen=True)
class AttitudeState:
    t: float
    q: np.ndarray  # (4,) unit quaternion (x, y, z, w), body to world
    w: np.ndarray  # (3,) rad/s, body frame

    @classmethod
    def of(cls, t: float, attitude: Rotation, w: np.ndarray) -> AttitudeState:
        return cls(t, attitude.as_quat(), check_vector(w, 3, "w"))

    @property
    def attitude(self) -> Rotation:
        return Rotation.from_quat(self.q)

    def angular_momentum(self, inertia: np.ndarray) -> np.ndarray:
        """L (3,) in the world frame, kg·m²/s."""
        return self.attitude.apply(inertia @ self.w)

    def kinetic_energy(self, inertia: np.ndarray) -> float:
        return 0.5 * float(self.w @ inertia @ self.w)


def step(state: AttitudeState, inertia: np.ndarray, dt: float, torque: TorqueFn | None = None) -> AttitudeState:
    """One fixed RK4 step of Euler's equations and the quaternion kinematics together; the
    quaternion is renormalised after the step (a projection that keeps it a rotation)."""
    return _step(state, _inertia(inertia), dt, torque)


def _step(state: AttitudeState, inertia: np.ndarray, dt: float, torque: TorqueFn | None) -> AttitudeState:
    # scalar arithmetic: numpy's per-call overhead dominates on 3-vectors (this is ~4x faster)
    (i11, i12, i13), (i21, i22, i23), (i31, i32, i33) = inertia.tolist()
    (n11, n12, n13), (n21, n22, n23), (n31, n32, n33) = np.linalg.inv(inertia).tolist()

    def rate(t: float, y: list[float]) -> list[float]:
        x, yq, z, s, wx, wy, wz = y
        if torque is None:
            tx = ty = tz = 0.0
        else:
            tx, ty, tz = np.asarray(torque(t, Rotation.from_quat([x, yq, z, s]), np.array([wx, wy, wz])), float)
        hx, hy, hz = i11 * wx + i12 * wy + i13 * wz, i21 * wx + i22 * wy + i23 * wz, i31 * wx + i32 * wy + i33 * wz
        rx, ry, rz = tx - (wy * hz - wz * hy), ty - (wz * hx - wx * hz), tz - (wx * hy - wy * hx)
        return [0.5 * (s * wx + yq * wz - z * wy), 0.5 * (s * wy + z * wx - x * wz),
                0.5 * (s * wz + x * wy - yq * wx), -0.5 * (x * wx + yq * wy + z * wz),
                n11 * rx + n12 * ry + n13 * rz, n21 * rx + n22 * ry + n23 * rz, n31 * rx + n32 * ry + n33 * rz]

    t, y = state.t, [*state.q.tolist(), *state.w.tolist()]
    k1 = rate(t, y)
    k2 = rate(t + dt / 2, [a + dt / 2 * b for a, b in zip(y, k1, strict=True)])
    k3 = rate(t + dt / 2, [a + dt / 2 * b for a, b in zip(y, k2, strict=True)])
    k4 = rate(t + dt, [a + dt * b for a, b in zip(y, k3, strict=True)])
    out = np.array([a + dt / 6 * (b + 2 * c + 2 * d + e) for a, b, c, d, e in zip(y, k1, k2, k3, k4, strict=True)])
    return AttitudeState(t + dt, out[:4] / np.linalg.norm(out[:4]), out[4:])


def propagate(state: AttitudeState, inertia: np.ndarray, duration: float, dt: float,
              torque: TorqueFn | None = None) -> AttitudeState:
    """``state`` after ``duration`` seconds in steps of at most ``dt``."""
    inertia = _inertia(inertia)
    steps = max(1, int(np.ceil(abs(duration) / dt - 1e-9)))
    h = duration / steps
    for _ in range(steps):
        state = _step(state, inertia, h, torque)
    return state


def predict_frame(body2world: np.ndarray, twist: np.ndarray, inertia: np.ndarray, frame2body: np.ndarray,
                  horizon: float, dt: float = 0.01) -> np.ndarray:
    """Where a body-fixed frame will be ``horizon`` seconds after a state estimate, torque-free.

    ``body2world`` (4, 4): the body (centre-of-mass) frame at the estimate's time tag; ``twist``
    (6,): the centre of mass's velocity and the angular velocity, both in the world frame;
    ``frame2body`` (4, 4): the frame (a grapple pad) in the body frame. Returns frame2world (4, 4).
    The centre of mass moves in a straight line; the attitude follows Euler's equations.
    """
    pose = check_pose(body2world, "body2world")
    v, w_world = np.split(check_vector(twist, 6, "twist"), 2)
    attitude = Rotation.from_matrix(pose[:3, :3])
    later = propagate(AttitudeState.of(0.0, attitude, attitude.inv().apply(w_world)), inertia, horizon, dt)
    out = np.eye(4)
    out[:3, :3] = later.attitude.as_matrix()
    out[:3, 3] = pose[:3, 3] + v * horizon
    return out @ check_pose(frame2body, "frame2body")
