"""A satellite in the simulated world: a rigid body with grapple fixtures, on a gimbal or free.

* ``mount="gimbal"``: the laboratory mockup of the JPL dual-arm grappling experiment ([JPL] in
  the README's Sources): its centre stays where it was put and it turns about one axis (its
  ``spin_axis``, body frame, fixed in the world) on a bearing with viscous and Coulomb friction
  (``orbitree.skills.satellite.gimbal_step``). Only the torque about that axis moves it; the
  bearing reacts the rest.
* ``mount="free"``: free-floating. Its attitude follows Euler's equations
  (``orbitree.skills.rigid_body``) in the inertial frame, under the contact torques and, with an
  orbit, the gravity-gradient torque; its centre of mass moves with the contact forces (m a = F).
  With an orbit, the workspace's axes are LVLH (``orbitree.drivers.sim_orbit``), so the attitude
  in the workspace is ``lvlh2inertial(t)ᵀ · body2inertial``; the relative orbital acceleration
  across a workspace (3n²·1 m ≈ 4 µm/s² in low orbit) is left out.

Wrenches: anything may push the body through :meth:`SatelliteBody.apply_wrench` (a force at a
point, world frame, and a pure torque); they accumulate until the next :meth:`step`, which applies
their sum over the step and clears them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills import rigid_body as rb
from orbitree.skills.orbit import gravity_gradient_torque
from orbitree.skills.satellite import check_inertia, gimbal_step


@dataclass(frozen=True)
class Fixture:
    """A grapple pad: ``pad2body`` (4, 4), z its outward normal; a disc of ``radius`` (m); its
    contact: stiffness (N/m) and damping (N·s/m) of the pad and the tool's flexible handle in
    series, Coulomb ``friction``; the Velcro engages when pressed with ``engage_force`` (N) and
    tears open when pulled with more than ``hold_force`` (N) along the normal."""

    name: str
    pad2body: np.ndarray
    radius: float = 0.05
    stiffness: float = 5000.0
    damping: float = 100.0
    friction: float = 0.5
    engage_force: float = 20.0
    hold_force: float = 100.0


InertialToWorld = Callable[[float], np.ndarray]  # t -> (3, 3) rotation inertial -> world axes
RadiusVector = Callable[[float], np.ndarray]  # t -> (3,) inertial position from the Earth's centre, m


@dataclass
class SatelliteBody:
    name: str
    mass: float
    inertia: np.ndarray  # (3, 3) kg·m², body frame about the centre of mass
    body2world: np.ndarray  # (4, 4) at t = 0
    spin_axis: np.ndarray  # (3,) unit, body frame
    spin_rate: float  # rad/s about spin_axis at t = 0 (inertial)
    mount: str = "gimbal"  # or "free"
    viscous: float = 0.0  # N·m·s/rad, gimbal bearing
    coulomb: float = 0.0  # N·m, gimbal bearing
    fixtures: dict[str, Fixture] = field(default_factory=dict)
    inertial2world: InertialToWorld | None = None  # None: the world's axes are inertial
    radius_vector: RadiusVector | None = None  # None: no gravity gradient
    time: float = 0.0
    force: np.ndarray = field(default_factory=lambda: np.zeros(3))  # accumulated, world, N
    torque: np.ndarray = field(default_factory=lambda: np.zeros(3))  # accumulated about the CoM, world, N·m
    impulse: np.ndarray = field(default_factory=lambda: np.zeros(6))  # applied so far: N·s, N·m·s (world)

    def __post_init__(self) -> None:
        if self.mount not in ("gimbal", "free"):
            raise ValueError(f"mount must be 'gimbal' or 'free', got {self.mount!r}")
        if self.mass <= 0.0:
            raise ValueError(f"mass must be positive, got {self.mass}")
        self.inertia = check_inertia(self.inertia)
        axis = np.asarray(self.spin_axis, float)
        self.spin_axis = axis / np.linalg.norm(axis)
        self._r0 = np.array(self.body2world[:3, :3], float)
        self._position = np.array(self.body2world[:3, 3], float)
        self._velocity = np.zeros(3)
        self.angle = 0.0  # gimbal: turned about the axis since t = 0
        self.omega = float(self.spin_rate)  # gimbal: rate about the axis
        self.axis_inertia = float(self.spin_axis @ self.inertia @ self.spin_axis)
        body2inertial = self._world2inertial(0.0) @ self._r0
        self.attitude = rb.AttitudeState.of(0.0, Rotation.from_matrix(body2inertial),
                                            self.spin_rate * self.spin_axis)

    # -- state ---------------------------------------------------------------------------------
    def _world2inertial(self, t: float) -> np.ndarray:
        return np.eye(3) if self.inertial2world is None else self.inertial2world(t).T

    def rotation(self) -> np.ndarray:
        """body2world rotation (3, 3) now."""
        if self.mount == "gimbal":
            return self._r0 @ Rotation.from_rotvec(self.angle * self.spin_axis).as_matrix()
        return self._world2inertial(self.time).T @ self.attitude.attitude.as_matrix()

    def pose(self) -> np.ndarray:
        """body2world (4, 4) now: the centre of mass and the body's axes."""
        out = np.eye(4)
        out[:3, :3] = self.rotation()
        out[:3, 3] = self._position
        return out

    def angular_velocity(self) -> np.ndarray:
        """(3,) rad/s, world axes (inertial rate: the LVLH frame's own n is not taken out)."""
        if self.mount == "gimbal":
            return self.omega * (self._r0 @ self.spin_axis)
        return self.rotation() @ self.attitude.w

    def velocity(self) -> np.ndarray:
        """Centre of mass velocity (3,) m/s, world."""
        return self._velocity.copy()

    def point_velocity(self, point_world: np.ndarray) -> np.ndarray:
        """Velocity (3,) of the body's point at ``point_world``."""
        return self._velocity + np.cross(self.angular_velocity(), np.asarray(point_world, float) - self._position)

    def spin(self) -> float:
        """|ω|, rad/s."""
        return float(np.linalg.norm(self.angular_velocity()))

    def angular_momentum(self) -> np.ndarray:
        """(3,) kg·m²/s, world axes (gimbal: about the bearing only)."""
        if self.mount == "gimbal":
            return self.axis_inertia * self.angular_velocity()
        return self.rotation() @ (self.inertia @ self.attitude.w)

    def fixture_pose(self, name: str) -> np.ndarray:
        """pad2world (4, 4) of fixture ``name`` now."""
        return self.pose() @ self.fixtures[name].pad2body

    def gravity_gradient(self) -> np.ndarray:
        """Gravity-gradient torque (3,) N·m, body frame, at the body's attitude now; zeros
        without an orbit (for a gimbal: what the bearing reacts)."""
        if self.radius_vector is None:
            return np.zeros(3)
        body2inertial = self._world2inertial(self.time) @ self.rotation()
        return gravity_gradient_torque(body2inertial.T @ self.radius_vector(self.time), self.inertia)

    # -- forces --------------------------------------------------------------------------------
    def apply_wrench(self, force: np.ndarray, point: np.ndarray | None = None,
                     torque: np.ndarray | None = None) -> None:
        """Push the body until the next step: ``force`` (3,) N at ``point`` (3,) m (world; None:
        the centre of mass) and a pure ``torque`` (3,) N·m (world)."""
        f = np.asarray(force, float)
        self.force = self.force + f
        if point is not None:
            self.torque = self.torque + np.cross(np.asarray(point, float) - self._position, f)
        if torque is not None:
            self.torque = self.torque + np.asarray(torque, float)

    def step(self, dt: float) -> None:
        """Advance by ``dt`` under the accumulated wrench (held constant over the step), then clear it."""
        force, torque = self.force, self.torque
        self.impulse = self.impulse + np.concatenate([force, torque]) * dt
        if self.mount == "gimbal":
            axial = float(torque @ (self._r0 @ self.spin_axis))
            self.angle, self.omega = gimbal_step(self.angle, self.omega, self.axis_inertia, self.viscous,
                                                 self.coulomb, axial, dt)
        else:
            self._velocity = self._velocity + force / self.mass * dt
            self._position = self._position + self._velocity * dt
            torque_inertial = self._world2inertial(self.time) @ torque
            mid = self.time + dt / 2
            r_mid = None if self.radius_vector is None else self.radius_vector(mid)

            def total(_t: float, attitude: Rotation, _w: np.ndarray) -> np.ndarray:
                body = attitude.inv().apply(torque_inertial)
                if r_mid is not None:
                    body = body + gravity_gradient_torque(attitude.inv().apply(r_mid), self.inertia)
                return body

            self.attitude = rb.step(self.attitude, self.inertia, dt, total)
        self.time += dt
        self.force, self.torque = np.zeros(3), np.zeros(3)
