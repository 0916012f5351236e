"""The despin profile: its duration is the closed form I·ω0/τ_max (plus one ramp with a jerk limit),
the per-arm force and moment never exceed their bounds, the rate ends at zero for a spin about a
fixed axis and for a tumbling asymmetric body, and the pad's path matches the integrated rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.spatial.transform import Rotation

from orbitree.skills import despin as ds
from orbitree.skills import grasp as gp
from orbitree.skills import rigid_body as rb

TWO_RPM = 2 * 2 * math.pi / 60
MOCKUP = np.diag([22.8, 22.8, 28.6])  # kg·m²: 159 kg, radius 0.6 m, height 0.8 m (see the simulation test)
PADS = np.array([[0.6, 0.0, 0.0], [-0.6, 0.0, 0.0]])


def _spin_momentum() -> np.ndarray:
    return ds.spin_momentum(np.array([0.0, 0.0, TWO_RPM]), np.eye(4), MOCKUP)


def test_the_bang_bang_despin_lasts_i_omega_over_tau_max_with_tau_max_from_the_force_bound():
    grasp = gp.make_grasp(PADS, length=0.0)  # pads take forces only
    torque = ds.max_despin_torque(grasp, [0, 0, 1], max_force=10.0)
    assert torque == pytest.approx(2 * 0.6 * 10.0)  # two arms × lever arm × force
    profile = ds.plan_despin(_spin_momentum(), torque)
    assert profile.duration == pytest.approx(28.6 * TWO_RPM / 12.0)  # 0.499 s
    assert profile.rate_about_axis(0.0, 28.6) == pytest.approx(TWO_RPM)
    assert profile.rate_about_axis(profile.duration, 28.6) == pytest.approx(0.0, abs=1e-12)


def test_a_jerk_limit_adds_one_ramp_and_a_short_despin_becomes_a_triangle():
    momentum = _spin_momentum()  # 5.99 N·m·s
    profile = ds.plan_despin(momentum, 4.0, jerk_limit=10.0)
    assert profile.ramp == pytest.approx(0.4)
    assert profile.duration == pytest.approx(28.6 * TWO_RPM / 4.0 + 0.4)
    assert profile.rate_about_axis(profile.duration, 28.6) == pytest.approx(0.0, abs=1e-12)
    triangle = ds.plan_despin(momentum, 40.0, jerk_limit=10.0)  # |L0| < τ²/j: the peak is never reached
    assert triangle.hold == 0.0
    assert triangle.peak == pytest.approx(math.sqrt(np.linalg.norm(momentum) * 10.0))
    assert triangle.duration == pytest.approx(2 * math.sqrt(np.linalg.norm(momentum) / 10.0))
    times = np.linspace(0.0, triangle.duration, 2001)
    torques = np.array([np.linalg.norm(triangle.torque(t)) for t in times])
    assert torques.max() <= triangle.peak + 1e-12
    assert np.abs(np.diff(torques)).max() <= 10.0 * (times[1] - times[0]) + 1e-9  # the jerk limit holds


def test_no_arm_ever_exceeds_its_force_or_moment_bound_during_the_despin():
    max_force, max_moment = 10.0, 1.5  # N, N·m per arm
    grasp = gp.make_grasp(PADS, length=max_moment / max_force)
    torque = ds.max_despin_torque(grasp, [0, 0, 1], max_force, max_moment)
    profile = ds.plan_despin(_spin_momentum(), torque, jerk_limit=100.0)
    peaks = np.zeros(2)
    for t in np.linspace(0.0, profile.duration, 1001):
        wrenches = ds.despin_wrenches(profile, t, grasp)
        peaks = np.maximum(peaks, [np.linalg.norm(wrenches[:, :3], axis=1).max(),
                                   np.linalg.norm(wrenches[:, 3:], axis=1).max()])
        np.testing.assert_allclose(gp.net_wrench(grasp, wrenches)[3:], profile.torque(t), atol=1e-12)
        assert np.abs(gp.split_wrenches(grasp, wrenches)[1]).max() < 1e-12  # no internal part
    assert peaks[0] <= max_force + 1e-9 and peaks[1] <= max_moment + 1e-9
    assert max(peaks[0] / max_force, peaks[1] / max_moment) == pytest.approx(1.0)  # one of them is reached


def test_the_pads_path_turns_by_the_integrated_rate():
    profile = ds.plan_despin(_spin_momentum(), 6.0, jerk_limit=15.0)
    for t in (0.2, 0.7, profile.duration, profile.duration + 1.0):
        corners = [0.4, profile.duration - 0.4]
        integral, _ = quad(lambda s: profile.rate_about_axis(s, 28.6), 0.0, t, points=corners)
        assert profile.angle_about_axis(t, 28.6) == pytest.approx(integral, rel=1e-9)
    pad = np.eye(4)
    pad[:3, 3] = [1.8, 0.0, 0.4]
    centre = np.array([1.2, 0.0, 0.4])
    end = ds.despin_pad_pose(profile, profile.duration, pad, centre, 28.6)
    turned = profile.angle_about_axis(profile.duration, 28.6)
    expected = centre + 0.6 * np.array([math.cos(turned), math.sin(turned), 0.0])
    np.testing.assert_allclose(end[:3, 3], expected, atol=1e-12)


def test_a_tumbling_asymmetric_body_is_brought_to_rest_by_the_torque_against_its_momentum():
    ets7 = np.array([[6206.0, 48.16, 78.52], [48.16, 3541.0, -29.22], [78.52, -29.22, 7087.0]])  # ETS-VII, kg·m²
    attitude = Rotation.from_euler("xyz", [20, -30, 50], degrees=True)
    w_body = TWO_RPM * np.array([0.5, 0.6, 0.62])
    body2world = np.eye(4)
    body2world[:3, :3] = attitude.as_matrix()
    momentum = ds.spin_momentum(attitude.apply(w_body), body2world, ets7)
    profile = ds.plan_despin(momentum, 100.0, jerk_limit=200.0)

    def torque(t, rotation, _w):
        return rotation.inv().apply(profile.torque(t))  # world to body axes

    end = rb.propagate(rb.AttitudeState.of(0.0, attitude, w_body), ets7, profile.duration, dt=0.005, torque=torque)
    assert np.linalg.norm(end.w) < 1e-6  # rad/s, from 0.21
    assert profile.duration == pytest.approx(np.linalg.norm(momentum) / 100.0 + 0.5)


def test_despin_inputs_are_checked():
    with pytest.raises(ValueError, match=r"torque_limit must be finite and > 0, got -1\.0"):
        ds.plan_despin(_spin_momentum(), -1.0)
    with pytest.raises(ValueError, match="cannot make a torque"):  # forces only, axis through both pads
        ds.max_despin_torque(gp.make_grasp(PADS, length=0.0), [1, 0, 0], max_force=10.0)
    assert ds.plan_despin(np.zeros(3), 5.0).duration == 0.0


def test_a_minimum_jerk_move_of_the_found_duration_asks_exactly_max_force_of_the_busiest_arm():
    # the ETS-VII body held at two pads 0.9 m either side of its centre, turned 25 deg about z and
    # moved 200 mm along x: sample the blend's acceleration over the move, distribute the wrench
    inertia = np.array([[6206.0, 48.16, 78.52], [48.16, 3541.0, -29.22], [78.52, -29.22, 7087.0]])
    grasp = gp.make_grasp(np.array([[0.0, 0.9, 0.0], [0.0, -0.9, 0.0]]), length=0.0)
    shift, turn = np.array([0.2, 0.0, 0.0]), np.array([0.0, 0.0, np.radians(25.0)])
    span = ds.min_jerk_duration(grasp, 2552.0, inertia, shift, turn, max_force=15.0)
    tau = np.linspace(0.0, 1.0, 20001)
    blend_acc = (60 * tau - 180 * tau**2 + 120 * tau**3) / span**2  # s''(t) of 10s³ - 15s⁴ + 6s⁵
    forces = [np.linalg.norm(gp.distribute(grasp, np.concatenate([2552.0 * a * shift, a * inertia @ turn]))[:, :3],
                             axis=1).max() for a in blend_acc]
    assert max(forces) == pytest.approx(15.0, rel=1e-6)
    assert span == pytest.approx(27.4, abs=0.3)  # the turn dominates: ~I·α / (2 · 0.9 m)
    # four times the force allowed: half the time
    assert ds.min_jerk_duration(grasp, 2552.0, inertia, shift, turn, 60.0) == pytest.approx(span / 2)
    assert ds.min_jerk_duration(grasp, 2552.0, inertia, np.zeros(3), np.zeros(3), 15.0) == 0.0
    with pytest.raises(ValueError, match="max_force"):
        ds.min_jerk_duration(grasp, 2552.0, inertia, shift, turn, 0.0)
    with pytest.raises(ValueError, match="mass"):
        ds.min_jerk_duration(grasp, 0.0, inertia, shift, turn, 15.0)
