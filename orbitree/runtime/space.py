"""The space parts of a simulated world as devices the executive reads every tick: satellite
targets, the orbit and the satellites' state sensors.

* ``SatelliteDevice`` writes ``/target/<name>/spin_rate`` (rad/s, |ω| from the simulation's
  truth: a gimbal mockup's bearing encoder would give it in a laboratory) and, with an orbit,
  ``/target/<name>/gg_torque`` (N·m, body frame: the gravity-gradient torque at the body's
  attitude; a free body feels it, a gimbal's bearing reacts it).
* ``OrbitDevice`` writes ``/orbit/time_utc``, ``/orbit/<body>/r_eci``, ``v_eci``, ``lvlh`` for the
  orbit's target and the ``servicer``, and ``/orbit/relative/<target>`` (6,: the target's position
  m and velocity m/s in the servicer's LVLH frame) with its ``range`` and ``range_rate``.
* ``StateSensorDevice`` writes ``/target/<name>/state`` (an ``orbitree.drivers.state_sensor.
  TargetState``) when a message arrives, not otherwise: its stamp is the measurement's time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orbitree.drivers.sim_orbit import OrbitModel
from orbitree.drivers.sim_satellite import Fixture, SatelliteBody
from orbitree.drivers.state_sensor import StateSensor, diagonal_covariance
from orbitree.language.keys import (
    ORBIT_BODY_STATE,
    ORBIT_TIME_UTC,
    SERVICER,
    orbit_key,
    orbit_relative_key,
    target_key,
)
from orbitree.language.orbit_spec import OrbitSpec
from orbitree.language.world_spec import TargetSpec
from orbitree.skills import orbit as orb


def orbit_model(spec: OrbitSpec) -> OrbitModel:
    """The drivers' orbit from the mission's ``orbit:`` section."""
    if spec.tle is not None:
        return OrbitModel.tle(spec.when(), *spec.tle, np.array(spec.relative0()), target=spec.target)
    k = spec.kepler
    assert k is not None and spec.epoch is not None
    return OrbitModel.kepler(spec.epoch, k.semi_major_axis, k.eccentricity, k.inclination, k.raan,
                             k.arg_perigee, k.true_anomaly, np.array(spec.relative0()), target=spec.target)


def satellite_body(name: str, spec: TargetSpec, orbit: OrbitModel | None) -> SatelliteBody:
    """A ``SatelliteBody`` from a ``kind: satellite`` target (with an orbit: the workspace's axes
    are the servicer's LVLH axes, and the body feels the gravity gradient of the target's orbit)."""
    assert spec.mass is not None
    fixtures = {
        fname: Fixture(fname, f.pose.matrix(), f.radius, f.stiffness, f.damping, f.friction, f.engage_force,
                       f.hold_force)
        for fname, f in spec.fixtures.items()
    }
    spin = spec.spin
    inertial2world = radius = None
    if orbit is not None:
        def inertial2world(t: float) -> np.ndarray:
            r, v = orbit.states(t)[SERVICER]
            return orb.lvlh_frame(r, v).T

        def radius(t: float) -> np.ndarray:
            return orbit.target_state(t)[0]

    return SatelliteBody(
        name, spec.mass, spec.inertia_matrix(), spec.pose.matrix(),
        np.array(spin.axis if spin else (0.0, 0.0, 1.0)), spin.rate if spin else 0.0, spec.mount,
        spec.bearing.viscous, spec.bearing.coulomb, fixtures, inertial2world, radius)


class ReadOnlyDevice:
    """A device that only reads (the world steps elsewhere): nothing to set up, to do after a
    tick, to stop or to shut down."""

    def setup(self) -> None:
        pass

    def after_tick(self, period: float) -> None:
        pass

    def stop(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


@dataclass
class SatelliteDevice(ReadOnlyDevice):
    world: Any  # orbitree.drivers.sim_world.SimWorld
    with_orbit: bool
    name: str = "satellites"
    start: dict[str, float] = field(default_factory=dict)

    def keys(self) -> list[str]:
        out = [target_key(n, "spin_rate") for n in self.world.satellites]
        if self.with_orbit:
            out += [target_key(n, "gg_torque") for n in self.world.satellites]
        return out

    def setup(self) -> None:
        self.start = {n: body.spin() for n, body in self.world.satellites.items()}

    def read(self, now: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, body in self.world.satellites.items():
            out[target_key(name, "spin_rate")] = body.spin()
            if self.with_orbit:
                out[target_key(name, "gg_torque")] = body.gravity_gradient()
        return out

    def summary(self) -> dict[str, Any]:
        """Per satellite: spin at the start and the end (rpm), the impulse the contacts gave it;
        every pad contact's peak force and its Velcro's events."""
        rpm = 60.0 / (2.0 * np.pi)
        sats = {
            name: {"spin_rpm_start": round(self.start.get(name, body.spin()) * rpm, 5),
                   "spin_rpm_end": round(body.spin() * rpm, 5),
                   "contact_impulse": {"force_ns": np.round(body.impulse[:3], 5).tolist(),
                                       "torque_nms": np.round(body.impulse[3:], 5).tolist()}}
            for name, body in self.world.satellites.items()
        }
        pads = [{"robot": c.robot, "target": c.target, "fixture": c.fixture, "peak_force_n": round(c.peak_n, 3),
                 "attached": c.attached, "events": [list(e) for e in c.events]}
                for c in self.world.pads.values() if c.peak_n > 0.0]
        out: dict[str, Any] = {"satellites": sats}
        if pads:
            out["pad_contacts"] = pads
        return out


@dataclass
class OrbitDevice(ReadOnlyDevice):
    model: OrbitModel
    name: str = "orbit"

    def keys(self) -> list[str]:
        target = self.model.target
        out = [ORBIT_TIME_UTC, *(orbit_key(b, k) for b in (target, SERVICER) for k in ORBIT_BODY_STATE)]
        return out + [orbit_relative_key(target, part) for part in ("", "range", "range_rate")]

    def read(self, now: float) -> dict[str, Any]:
        states = self.model.states(now)
        target = self.model.target
        out: dict[str, Any] = {ORBIT_TIME_UTC: self.model.utc(now).isoformat(timespec="milliseconds")}
        for body, key in ((target, "target"), (SERVICER, "servicer")):
            r, v = states[key]
            out[orbit_key(body, "r_eci")] = r
            out[orbit_key(body, "v_eci")] = v
            out[orbit_key(body, "lvlh")] = orb.lvlh_frame(r, v)
        position, velocity = orb.relative_state(*states["servicer"], *states["target"])
        distance = float(np.linalg.norm(position))
        out[orbit_relative_key(target)] = np.concatenate([position, velocity])
        out[orbit_relative_key(target, "range")] = distance
        out[orbit_relative_key(target, "range_rate")] = float(position @ velocity) / distance if distance else 0.0
        return out


@dataclass
class StateSensorDevice(ReadOnlyDevice):
    target: str
    sensor: StateSensor
    name: str = ""
    delivered: int = 0

    def __post_init__(self) -> None:
        self.name = self.name or f"{self.target}_state_sensor"

    def keys(self) -> list[str]:
        return [target_key(self.target, "state")]

    def read(self, now: float) -> dict[str, Any]:
        arrived = self.sensor.poll(now)
        self.delivered += len(arrived)
        return {target_key(self.target, "state"): arrived[-1]} if arrived else {}


def state_sensor(world: Any, name: str, spec: TargetSpec, seed: int, index: int) -> StateSensor:
    """The sensor of satellite ``name`` (``targets.<name>.state_sensor``), its noise drawn from the run's seed."""
    s = spec.state_sensor
    assert s is not None
    body: SatelliteBody = world.satellites[name]

    def truth() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return body.pose(), body.velocity(), body.angular_velocity()

    covariance = diagonal_covariance(s.sigma_position, s.sigma_attitude, s.sigma_velocity,
                                     s.sigma_angular_velocity)
    return StateSensor(truth, s.rate, s.latency, covariance, np.random.default_rng([seed, index, 7]))


def space_devices(world: Any, targets: dict[str, TargetSpec], orbit: OrbitSpec | None, seed: int) -> list[Any]:
    """Put the satellites and the orbit into ``world``; the devices that write their keys."""
    model = orbit_model(orbit) if orbit is not None else None
    world.orbit = model
    devices: list[Any] = []
    satellites = [(i, n, t) for i, (n, t) in enumerate(targets.items()) if t.kind == "satellite"]
    for _, name, spec in satellites:
        world.add_satellite(satellite_body(name, spec, model))
    if satellites:
        devices.append(SatelliteDevice(world, model is not None))
    for i, name, spec in satellites:
        if spec.state_sensor is not None:
            devices.append(StateSensorDevice(name, state_sensor(world, name, spec, seed, i)))
    if model is not None:
        devices.append(OrbitDevice(model))
    return devices


__all__ = ["OrbitDevice", "SatelliteDevice", "StateSensorDevice", "space_devices"]
