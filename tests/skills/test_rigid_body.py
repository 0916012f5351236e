"""Rigid-body attitude dynamics: conservation torque-free, agreement with an independent
high-order integration, nutation where physics has it and not where it has none, a torque's
effect, and the prediction of a grapple pad's frame."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from orbitree.skills import rigid_body as rb

ASYMMETRIC = np.array([[120.0, 3.0, -2.0], [3.0, 90.0, 1.5], [-2.0, 1.5, 60.0]])  # kg·m², with products
TWO_RPM = 2 * 2 * math.pi / 60


def test_torque_free_motion_conserves_energy_and_angular_momentum_to_1e_9_over_1000_s():
    start = rb.AttitudeState.of(0.0, Rotation.from_euler("xyz", [10, -20, 30], degrees=True),
                                np.array([0.05, TWO_RPM, 0.03]))
    end = rb.propagate(start, ASYMMETRIC, 1000.0, dt=0.05)
    assert end.t == pytest.approx(1000.0)
    energy0 = start.kinetic_energy(ASYMMETRIC)
    assert abs(end.kinetic_energy(ASYMMETRIC) - energy0) / energy0 < 1e-9
    momentum0 = start.angular_momentum(ASYMMETRIC)
    assert np.linalg.norm(end.angular_momentum(ASYMMETRIC) - momentum0) / np.linalg.norm(momentum0) < 1e-9
    assert abs(np.linalg.norm(end.q) - 1.0) < 1e-12


def test_attitude_matches_an_independent_high_order_integration():
    w0 = np.array([0.1, -0.2, 0.15])
    inverse = np.linalg.inv(ASYMMETRIC)

    def rhs(_t, y):  # rotation matrix and body rate: Ṙ = R [w]×, I ẇ = -w × I w
        rotation, w = y[:9].reshape(3, 3), y[9:]
        cross = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([(rotation @ cross).ravel(), -inverse @ np.cross(w, ASYMMETRIC @ w)])

    reference = solve_ivp(rhs, (0, 100), np.concatenate([np.eye(3).ravel(), w0]), method="DOP853",
                          rtol=1e-12, atol=1e-12).y[:, -1]
    end = rb.propagate(rb.AttitudeState.of(0.0, Rotation.identity(), w0), ASYMMETRIC, 100.0, dt=0.02)
    error = (end.attitude * Rotation.from_matrix(reference[:9].reshape(3, 3)).inv()).magnitude()
    assert error < 1e-8  # rad
    np.testing.assert_allclose(end.w, reference[9:], atol=1e-10)


def _body_rate_wander(inertia: np.ndarray, w0: np.ndarray) -> float:
    """Largest angle (deg) between the body-frame angular velocity and its starting direction."""
    state, worst = rb.AttitudeState.of(0.0, Rotation.identity(), w0), 0.0
    for _ in range(300):
        state = rb.propagate(state, inertia, 1.0, dt=0.05)
        cos = state.w @ w0 / (np.linalg.norm(state.w) * np.linalg.norm(w0))
        worst = max(worst, math.degrees(math.acos(min(1.0, cos))))
    return worst


def test_an_asymmetric_body_nutates_and_a_symmetric_one_spun_about_its_axis_does_not():
    asymmetric = np.diag([120.0, 90.0, 60.0])
    off_axis = np.array([0.0, 0.02, TWO_RPM])  # spun about the minor axis, 5° off: the polhode shows
    assert _body_rate_wander(asymmetric, off_axis) > 3.0
    symmetric = np.diag([90.0, 90.0, 60.0])
    assert _body_rate_wander(symmetric, np.array([0.0, 0.0, TWO_RPM])) < 1e-9


def test_a_constant_torque_about_a_principal_axis_spins_the_body_up_as_tau_over_i():
    inertia = np.diag([120.0, 90.0, 60.0])

    def torque(_t, _attitude, _w):
        return np.array([0.0, 0.0, 6.0])  # N·m about z: α = 0.1 rad/s²

    rest = rb.AttitudeState.of(0.0, Rotation.identity(), np.zeros(3))
    end = rb.propagate(rest, inertia, 2.0, dt=0.01, torque=torque)
    np.testing.assert_allclose(end.w, [0.0, 0.0, 0.2], atol=1e-12)
    assert end.attitude.magnitude() == pytest.approx(0.5 * 0.1 * 2.0**2, abs=1e-9)  # θ = ½ α t²


def test_a_pads_frame_is_predicted_from_a_time_tagged_estimate():
    inertia = np.diag([120.0, 90.0, 60.0])
    body2world = np.eye(4)
    body2world[:3, 3] = [1.0, 0.5, 0.2]
    pad2body = np.eye(4)
    pad2body[:3, 3] = [0.6, 0.0, 0.0]  # a grapple pad 0.6 m out along x
    twist = np.array([0.01, 0.0, 0.0, 0.0, 0.0, TWO_RPM])  # drifting 1 cm/s, spinning about z
    pad = rb.predict_frame(body2world, twist, inertia, pad2body, horizon=3.0)
    angle = TWO_RPM * 3.0
    expected = np.array([1.0 + 0.03 + 0.6 * math.cos(angle), 0.5 + 0.6 * math.sin(angle), 0.2])
    np.testing.assert_allclose(pad[:3, 3], expected, atol=1e-9)
    np.testing.assert_allclose(pad[:3, :3], Rotation.from_rotvec([0, 0, angle]).as_matrix(), atol=1e-9)


def test_inertia_must_be_symmetric_positive_definite():
    state = rb.AttitudeState.of(0.0, Rotation.identity(), np.zeros(3))
    with pytest.raises(ValueError, match="symmetric"):
        rb.step(state, np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), 0.1)
    with pytest.raises(ValueError, match="positive definite"):
        rb.step(state, np.diag([1.0, -1.0, 1.0]), 0.1)
