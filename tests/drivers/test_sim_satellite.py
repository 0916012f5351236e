"""Satellite targets in the simulated world: the gimbal's friction, the free body under the
gravity gradient, wrenches and pads acting on the body's motion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_robot import SimRobot
from orbitree.drivers.sim_satellite import Fixture, SatelliteBody
from orbitree.drivers.sim_world import SimWorld
from orbitree.language.world_spec import RobotSpec, start_configuration
from orbitree.skills import rigid_body as rb
from orbitree.skills.orbit import MU_EARTH, gravity_gradient_torque
from orbitree.skills.satellite import gimbal_spin_down, gimbal_step, gimbal_stop_time, pad_contact_force

RPM = 2 * math.pi / 60
INERTIA = np.diag([18.0, 18.0, 20.0])


def _gimbal(rate_rpm: float, viscous: float = 0.02, coulomb: float = 0.01, **kw) -> SatelliteBody:
    pose = np.eye(4)
    pose[:3, 3] = [1.0, 0.0, 0.5]
    return SatelliteBody("sat", 159.0, INERTIA, pose, np.array([0, 0, 1.0]), rate_rpm * RPM, "gimbal",
                         viscous, coulomb, **kw)


def test_gimbal_friction_spin_down_matches_the_closed_form_and_stops_at_its_time():
    body = _gimbal(3.0)
    times, rates = [], []
    for k in range(1, 60_001):  # 600 s at 100 Hz
        body.step(0.01)
        if k % 500 == 0:
            times.append(k * 0.01)
            rates.append(body.omega)
    expected = gimbal_spin_down(3.0 * RPM, 20.0, 0.02, 0.01, np.array(times))
    assert np.max(np.abs(np.array(rates) - expected)) < 1e-12
    stop = gimbal_stop_time(3.0 * RPM, 20.0, 0.02, 0.01)
    assert stop == pytest.approx(487.55, abs=0.01)  # (I/c) ln(1 + c ω0 / τc)
    assert rates[times.index(485.0)] > 0.0 and rates[times.index(490.0)] == 0.0
    # independently: the ODE integrated numerically up to just before the stop
    sol = solve_ivp(lambda _t, w: [(-0.02 * w[0] - 0.01) / 20.0], (0, 400), [3.0 * RPM], rtol=1e-11, atol=1e-13,
                    t_eval=[100.0, 200.0, 400.0])
    assert np.allclose(sol.y[0], [rates[times.index(t)] for t in (100.0, 200.0, 400.0)], atol=1e-9)


def test_gimbal_sticks_under_a_torque_below_coulomb_and_breaks_away_above_it():
    assert gimbal_step(0.0, 0.0, 20.0, 0.02, 0.01, 0.009, 1.0) == (0.0, 0.0)
    _, omega = gimbal_step(0.0, 0.0, 20.0, 0.0, 0.01, 0.03, 1.0)
    assert omega == pytest.approx((0.03 - 0.01) / 20.0, rel=1e-12)
    # a spin reversed by a torque: stops, then turns the other way under the net torque
    _, omega = gimbal_step(0.0, 0.01, 20.0, 0.0, 0.01, -0.05, 10.0)
    t_stop = 0.01 * 20.0 / 0.06
    assert omega == pytest.approx(-(0.05 - 0.01) / 20.0 * (10.0 - t_stop), rel=1e-9)


def test_a_wrench_on_the_gimbal_changes_its_spin_by_the_angular_impulse_over_the_axis_inertia():
    body = _gimbal(2.0, viscous=0.0, coulomb=0.0)
    pad = np.array([1.0, 0.5, 0.5])  # on the body, 0.5 m from the axis along y
    force = np.array([30.0, 0.0, 5.0])  # 30 N against the spin (ω z × r y points to -x... so +x slows)
    before = body.omega
    for _ in range(10):
        body.apply_wrench(force, pad)
        body.step(0.01)
    torque_z = np.cross(pad - [1.0, 0, 0.5], force)[2]  # -15 N·m
    assert body.omega - before == pytest.approx(torque_z * 0.1 / 20.0, rel=1e-12)
    assert body.omega < before
    assert np.allclose(body.pose()[:3, 3], [1.0, 0.0, 0.5])  # the gimbal holds its centre


def test_a_wrench_on_a_free_body_changes_its_momentum_by_the_impulse():
    body = SatelliteBody("sat", 159.0, INERTIA, np.eye(4), np.array([0.3, 0.2, 1.0]), 2 * RPM, "free")
    momentum0 = body.angular_momentum()
    force, point, dt = np.array([0.0, 20.0, 0.0]), np.array([0.4, 0.0, 0.1]), 0.01
    for _ in range(50):
        body.apply_wrench(force, point + body.pose()[:3, 3])
        body.step(dt)
    # the moment arm moves with the centre (it drifts 1 cm): its torque is not constant; take the sum
    assert body.velocity() == pytest.approx(force * 0.5 / 159.0, rel=1e-12)
    assert body.impulse[:3] == pytest.approx(force * 0.5)
    assert body.angular_momentum() - momentum0 == pytest.approx(body.impulse[3:], abs=1e-9)
    arm_torque = np.linalg.norm(np.cross(point, force))
    assert np.linalg.norm(body.impulse[3:]) == pytest.approx(arm_torque * 0.5, rel=1e-9)


def test_a_free_body_under_gravity_gradient_follows_the_rigid_body_skill():
    r = 6_928_000.0
    n = math.sqrt(MU_EARTH / r**3)

    def radius(t: float) -> np.ndarray:
        return r * np.array([math.cos(n * t), math.sin(n * t), 0.0])

    inertia = np.array([[6206.0, 48.16, 78.52], [48.16, 3541.0, -29.22], [78.52, -29.22, 7087.0]])  # ETS-VII
    attitude0 = Rotation.from_euler("xyz", [20, -10, 35], degrees=True)
    pose = np.eye(4)
    pose[:3, :3] = attitude0.as_matrix()
    body = SatelliteBody("ets7", 2552.0, inertia, pose, np.array([0, 0, 1.0]), 0.01, "free", radius_vector=radius)
    dt, steps = 0.5, 2000  # 1000 s
    for _ in range(steps):
        body.step(dt)

    def gg(t: float, attitude: Rotation, _w: np.ndarray) -> np.ndarray:
        return gravity_gradient_torque(attitude.inv().apply(radius(t)), inertia)

    reference = rb.propagate(rb.AttitudeState.of(0.0, attitude0, np.array([0, 0, 0.01])), inertia, 1000.0, dt, gg)
    torque_free = rb.propagate(rb.AttitudeState.of(0.0, attitude0, np.array([0, 0, 0.01])), inertia, 1000.0, dt)
    error = (body.attitude.attitude * reference.attitude.inv()).magnitude()
    effect = (torque_free.attitude * reference.attitude.inv()).magnitude()
    assert error < 1e-6  # the world's step holds r at mid-step; the skill samples it per RK4 stage
    assert effect > 1e-3  # the gravity gradient mattered: 1000 times the difference
    assert np.allclose(body.attitude.w, reference.w, atol=1e-9)
    assert np.linalg.norm(body.gravity_gradient()) > 0.0


def test_pad_contact_pushes_back_only_on_the_disc_and_rubs_against_sliding():
    force, depth = pad_contact_force(np.array([0.01, 0, -0.004]), np.zeros(3), 0.05, 5000.0, 100.0, 0.5)
    assert depth == pytest.approx(0.004) and force == pytest.approx([0, 0, 20.0])
    assert not pad_contact_force(np.array([0.06, 0, -0.004]), np.zeros(3), 0.05, 5000.0, 100.0, 0.5)[0].any()
    assert not pad_contact_force(np.array([0.0, 0, 0.001]), np.zeros(3), 0.05, 5000.0, 100.0, 0.5)[0].any()
    assert not pad_contact_force(np.array([0.0, 0, -0.5]), np.zeros(3), 0.05, 5000.0, 100.0, 0.5)[0].any()
    sliding, _ = pad_contact_force(np.array([0, 0, -0.004]), np.array([0.1, 0, 0]), 0.05, 5000.0, 0.0, 0.5)
    assert sliding == pytest.approx([-10.0, 0, 20.0])


def _arm_at(world: SimWorld, name: str, tcp2world: np.ndarray, base: np.ndarray) -> SimRobot:
    from orbitree.language.quantities import Pose

    xyz = tcp2world[:3, 3]
    rpy = Rotation.from_matrix(tcp2world[:3, :3]).as_euler("xyz", degrees=True)
    bxyz, brpy = base[:3, 3], Rotation.from_matrix(base[:3, :3]).as_euler("xyz", degrees=True)
    spec = RobotSpec(start_tcp=Pose(xyz=tuple(xyz), rpy=tuple(rpy)), base=Pose(xyz=tuple(bxyz), rpy=tuple(brpy)))
    robot = SimRobot(name, q0=start_configuration(spec, {}), period=0.002)
    world.add_robot(robot, base2world=base)
    return robot


def _base(xyz, yaw_deg) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = Rotation.from_euler("z", yaw_deg, degrees=True).as_matrix()
    out[:3, 3] = xyz
    return out


def test_a_tool_pressed_onto_a_pad_engages_the_velcro_and_the_arm_despins_the_satellite():
    world = SimWorld()
    pad2body = np.eye(4)
    pad2body[:3, :3] = Rotation.from_euler("x", -90, degrees=True).as_matrix()  # z: +y, outward
    pad2body[:3, 3] = [0, 0.5, 0]
    body = _gimbal(0.5, fixtures={"pad": Fixture("pad", pad2body, radius=0.05, stiffness=5000.0, damping=100.0)})
    world.add_satellite(body)
    tcp = np.eye(4)
    tcp[:3, :3] = Rotation.from_euler("x", 90, degrees=True).as_matrix()  # tool z: -y, into the pad
    tcp[:3, 3] = [1.0, 0.5 - 0.005, 0.5]  # 5 mm into the pad: 25 N, above the 20 N that engages
    robot = _arm_at(world, "left", tcp, _base([1.0, 1.25, 0.0], -90))
    assert np.allclose(world.tcp_pose("left"), tcp, atol=1e-6)
    momentum0 = body.axis_inertia * body.omega
    for _ in range(5000):  # 10 s
        world.step(0.002)
    contact = world.pad_contact("left", "sat", "pad")
    assert contact is not None and contact.attached and contact.events[0][0] == "engaged"
    assert abs(body.omega) < 0.02 * 0.5 * RPM  # held by the arm: the spin is gone
    # the arm took the momentum: the axial angular impulse of the contact equals the momentum lost
    # (to the friction's share: under 2 %)
    lost = body.axis_inertia * body.omega - momentum0
    assert body.impulse[5] == pytest.approx(lost, rel=0.02)
    assert contact.peak_n > 20.0  # the wrist felt it: now the tether rests near its engaged 25 N
    assert np.linalg.norm(robot.read().wrench[:3]) == pytest.approx(25.0, rel=0.05)


def test_a_velcro_pulled_harder_than_its_hold_force_tears_open():
    world = SimWorld()
    body = _gimbal(0.0, fixtures={"pad": Fixture("pad", np.eye(4), radius=0.05, hold_force=30.0)})
    body.fixtures["pad"] = Fixture("pad", np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.5], [0, 0, 0, 1.0]]),
                                   radius=0.05, hold_force=30.0)  # on top, z up
    world.add_satellite(body)
    tcp = np.eye(4)
    tcp[:3, :3] = Rotation.from_euler("x", 180, degrees=True).as_matrix()  # tool z down
    tcp[:3, 3] = [1.0, 0.0, 1.0 - 0.006]  # 6 mm in: 30 N, engages
    robot = _arm_at(world, "arm", tcp, _base([0.5, 0.0, 0.3], 0))
    world.step(0.002)
    assert world.pad_contact("arm", "sat", "pad").attached
    for _ in range(500):  # pull straight up at 50 mm/s (a speed command lives one period: renewed)
        robot.speed_l(np.array([0, 0, 0.05, 0, 0, 0]), acceleration=2.0)
        world.step(0.002)
    contact = world.pad_contact("arm", "sat", "pad")
    assert not contact.attached and [e[0] for e in contact.events] == ["engaged", "released"]
    assert contact.events[1][2] > 30.0


def test_two_arms_in_one_world_stand_on_their_bases_and_move_independently():
    world = SimWorld()
    left_tcp, right_tcp = np.eye(4), np.eye(4)
    left_tcp[:3, :3] = Rotation.from_euler("x", 90, degrees=True).as_matrix()
    left_tcp[:3, 3] = [1.0, 0.6, 0.5]
    right_tcp[:3, :3] = Rotation.from_euler("x", -90, degrees=True).as_matrix()
    right_tcp[:3, 3] = [1.0, -0.6, 0.5]
    left = _arm_at(world, "left", left_tcp, _base([1.0, 1.25, 0.0], -90))
    right = _arm_at(world, "right", right_tcp, _base([1.0, -1.25, 0.0], 90))
    assert np.allclose(world.tcp_pose("left"), left_tcp, atol=1e-6)
    assert np.allclose(world.tcp_pose("right"), right_tcp, atol=1e-6)
    # each reports its own base frame: the same world pose is a different base pose
    assert not np.allclose(left.read().tcp2base, right.read().tcp2base, atol=1e-3)
    for _ in range(500):  # 1 s: left up at 50 mm/s (its base z is the world's z)
        left.speed_l(np.array([0, 0, 0.05, 0, 0, 0]), acceleration=5.0)
        world.step(0.002)
    rise = world.tcp_pose("left")[2, 3] - 0.5
    assert rise == pytest.approx(0.05, abs=0.001)
    assert np.allclose(world.tcp_pose("right"), right_tcp, atol=1e-9)
    assert world.time == pytest.approx(1.0)
