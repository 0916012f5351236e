"""Following a spinning satellite's pad from 2 Hz state estimates: the seed's δ = Δ·τ/T
interpolation lags by about one state period, aiming it one period ahead removes the lag but for the
chord, and the rigid-body prediction from the latest estimate errs only by the estimate's noise;
a lookahead compensates the arm's own delay; the inertia matters for a tumbling asymmetric body."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import grapple as gr
from orbitree.skills import rigid_body as rb

TWO_RPM = 2 * 2 * math.pi / 60  # rad/s
MOCKUP = np.diag([22.8, 22.8, 28.6])  # kg·m², the 159 kg cylinder of the simulation test
STATE_PERIOD, LATENCY, CONTROL = 0.5, 0.1, 0.028  # s: 2 Hz vision, its delay, the seed's 28 ms loop
RADIUS = 0.6  # m, pad from the spin axis
PAD2BODY = np.array([[0.0, 0.0, 1.0, RADIUS], [0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
CENTRE = np.array([1.2, 0.0, 0.4])  # m, world: the gimbal's pivot


def _true_body(t: float) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_rotvec([0.0, 0.0, TWO_RPM * t]).as_matrix()
    pose[:3, 3] = CENTRE
    return pose


def _estimate(t: float, rng: np.random.Generator | None) -> gr.StateEstimate:
    """The vision message with time tag ``t``; noise 1 mm, 0.1°, 1 mrad/s (1σ) when ``rng`` is given."""
    pose = _true_body(t)
    position, rotation, rate = pose[:3, 3], Rotation.from_matrix(pose[:3, :3]), np.array([0.0, 0.0, TWO_RPM])
    if rng is not None:
        position = position + rng.normal(0.0, 1e-3, 3)
        rotation = Rotation.from_rotvec(rng.normal(0.0, math.radians(0.1), 3)) * rotation
        rate = rate + rng.normal(0.0, 1e-3, 3)
    return gr.StateEstimate.of(t, position, rotation.as_quat(), np.zeros(3), rate)


def _track(method: str, rng: np.random.Generator | None = None, lookahead: float = 0.0,
           duration: float = 12.0) -> np.ndarray:
    """Pad position errors (m) of the tool at each control sample after the first 2 s.

    States are tagged every 0.5 s and arrive 0.1 s later; the arm reaches a command one sample
    after it is computed (the seed's control level sends the joints computed in the previous cycle)."""
    arrivals = {round((k * STATE_PERIOD + LATENCY) / CONTROL): k * STATE_PERIOD
                for k in range(int(duration / STATE_PERIOD) + 1)}
    estimate: gr.StateEstimate | None = None
    prediction: gr.BodyPrediction | None = None
    tracking: gr.SeedTracking | None = None
    commands: list[np.ndarray] = []
    errors = []
    for tick in range(int(duration / CONTROL)):
        now = tick * CONTROL
        if tick in arrivals:
            estimate = _estimate(arrivals[tick], rng)
            if method.startswith("seed"):
                aim = now + (STATE_PERIOD if method == "seed_ahead" else 0.0)
                goal = gr.predicted_pad(gr.predict_body(estimate, MOCKUP, aim), MOCKUP, PAD2BODY)
                tool = commands[-1] if commands else goal
                tracking = gr.seed_tracking_start(tool, goal, STATE_PERIOD, CONTROL)
        if estimate is None:
            continue
        if method.startswith("seed"):
            tracking = gr.seed_tracking_step(tracking)
            command = tracking.commanded2world
        else:
            prediction = gr.predict_body(estimate, MOCKUP, now, previous=prediction)
            command = gr.predicted_pad(prediction, MOCKUP, PAD2BODY, lookahead=lookahead)
        commands.append(command)
        if len(commands) > 1 and now >= 2.0:
            tool = commands[-2]
            errors.append(np.linalg.norm(tool[:3, 3] - (_true_body(now) @ PAD2BODY)[:3, 3]))
    return np.array(errors)


def test_the_seeds_interpolation_lags_the_pad_by_about_one_state_period_at_2_rpm():
    errors = _track("seed")
    lag = RADIUS * TWO_RPM * STATE_PERIOD  # 63 mm: the arc the pad covers in one period
    assert np.mean(errors) == pytest.approx(lag, rel=0.15)
    assert errors.min() > 0.5 * lag  # it never catches up


def test_aiming_the_interpolation_one_state_period_ahead_leaves_only_the_chord():
    errors = _track("seed_ahead")
    sagitta = RADIUS * (1 - math.cos(TWO_RPM * STATE_PERIOD / 2))  # 0.8 mm, the straight line vs the arc
    assert errors.max() < 1.5 * sagitta
    assert errors.max() < 2e-3


def test_the_rigid_body_prediction_with_a_one_sample_lookahead_follows_the_pad_exactly_without_noise():
    assert _track("rigid_body", lookahead=CONTROL).max() < 1e-9


def test_with_noisy_estimates_the_rigid_body_error_is_the_noise_and_the_seeds_is_the_lag():
    seed = _track("seed", np.random.default_rng(1))
    predicted = _track("rigid_body", np.random.default_rng(1), lookahead=CONTROL)
    # noise carried to the pad: 1 mm position, 0.1° × 0.6 m, 1 mrad/s × 0.6 m × up to 0.6 s (1σ each axis)
    per_axis = math.sqrt(1e-3**2 + (math.radians(0.1) * RADIUS) ** 2 + (1e-3 * RADIUS * 0.35) ** 2)
    assert np.sqrt(np.mean(predicted**2)) < 1.5 * math.sqrt(3) * per_axis  # ~2.6 mm, 3-D RMS
    assert np.mean(seed) > 20 * np.sqrt(np.mean(predicted**2))


def test_without_the_lookahead_the_rigid_body_prediction_is_one_control_period_behind():
    late = _track("rigid_body")
    assert np.mean(late) == pytest.approx(RADIUS * TWO_RPM * CONTROL, rel=1e-3)  # 3.5 mm


def test_the_inertia_matters_for_a_tumbling_asymmetric_body():
    ets7 = np.array([[6206.0, 48.16, 78.52], [48.16, 3541.0, -29.22], [78.52, -29.22, 7087.0]])  # ETS-VII, kg·m²
    pad = np.eye(4)
    pad[:3, 3] = [1.0, 0.8, -0.5]
    rate = TWO_RPM * np.array([0.5, 0.6, 0.62]) / np.linalg.norm([0.5, 0.6, 0.62])
    truth_start = rb.AttitudeState.of(0.0, Rotation.identity(), rate)
    estimate = gr.StateEstimate.of(0.0, np.zeros(3), [0, 0, 0, 1], np.zeros(3), rate)
    horizon = STATE_PERIOD + LATENCY
    truth = rb.propagate(truth_start, ets7, horizon, dt=1e-3)
    true_pad = np.eye(4)
    true_pad[:3, :3] = truth.attitude.as_matrix()
    true_pad = true_pad @ pad
    predicted = gr.predicted_pad(gr.predict_body(estimate, ets7, horizon), ets7, pad)
    constant_rate = np.eye(4)
    constant_rate[:3, :3] = Rotation.from_rotvec(rate * horizon).as_matrix()
    constant_rate = constant_rate @ pad
    assert np.linalg.norm(predicted[:3, 3] - true_pad[:3, 3]) < 1e-8
    assert np.linalg.norm(constant_rate[:3, 3] - true_pad[:3, 3]) > 2e-3  # mm-level, growing with the horizon


def test_a_prediction_continued_tick_by_tick_equals_one_from_the_time_tag():
    attitude = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_quat()
    estimate = gr.StateEstimate.of(3.0, [0.1, 0.2, 0.3], attitude, [0.01, 0.0, -0.02], [0.05, -0.1, TWO_RPM])
    inertia = np.diag([120.0, 90.0, 60.0])
    prediction = None
    for now in np.arange(3.1, 4.0, CONTROL):
        prediction = gr.predict_body(estimate, inertia, now, previous=prediction, dt=CONTROL)
    direct = gr.predict_body(estimate, inertia, prediction.t, dt=CONTROL)
    np.testing.assert_allclose(prediction.body2world(), direct.body2world(), atol=1e-7)
    assert prediction.source_t == 3.0


def test_the_seed_step_lands_on_the_goal_after_t_over_tau_samples():
    tool = np.eye(4)
    goal = np.eye(4)
    goal[:3, :3] = Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix()
    goal[:3, 3] = [0.05, -0.02, 0.1]
    tracking = gr.seed_tracking_start(tool, goal, state_period=0.5, control_period=0.025)
    for _ in range(20):
        tracking = gr.seed_tracking_step(tracking)
    np.testing.assert_allclose(tracking.commanded2world, goal, atol=1e-12)


def test_standoff_moves_out_along_the_pad_normal():
    pad = _true_body(0.0) @ PAD2BODY  # normal along world x
    np.testing.assert_allclose(gr.standoff(pad, 0.1)[:3, 3], pad[:3, 3] + [0.1, 0.0, 0.0], atol=1e-12)


def test_bad_estimates_and_periods_are_refused_with_the_value():
    with pytest.raises(ValueError, match="quaternion must be unit"):
        gr.StateEstimate.of(0.0, np.zeros(3), [0, 0, 0, 2], np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match=r"angular_velocity must have shape \(3,\)"):
        gr.StateEstimate.of(0.0, np.zeros(3), [0, 0, 0, 1], np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match=r"state_period must be finite and > 0, got 0\.0"):
        gr.seed_tracking_start(np.eye(4), np.eye(4), 0.0, 0.028)
