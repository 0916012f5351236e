"""The COMPLY integral force law against a stiff pad: the wrench error goes to zero at the rate the
gain sets, the transform then keeps its value (exactly, with a dead band over sensor noise), the
offsets stay within their bounds without winding up, and the transform is the seed's matrix to
first order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from orbitree.skills import grapple as gr

DT = 0.028  # s, the seed's control period
STIFFNESS = np.array([5000.0, 5000.0, 20000.0, 300.0, 300.0, 100.0])  # N/m, N·m/rad: the pad's spring, pad axes
PRELOAD = (0.0, 0.0, 10.0, 0.0, 0.0, 0.0)  # press the Velcro with 10 N along the pad normal


def _felt(offset: np.ndarray, nominal: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The wrench the tool feels (pad axes) with the tool at ``nominal + offset``: a spring to
    ``rest`` on every axis, unilateral along the normal z (the pad pushes, never pulls before it
    sticks)."""
    wrench = STIFFNESS * (rest - (nominal + offset))
    wrench[2] = max(0.0, wrench[2])
    return wrench


def _params(**kwargs) -> gr.ComplyParams:
    gains = tuple(gr.comply_gain(k, DT, 0.3) for k in STIFFNESS)
    return gr.ComplyParams(gain=gains, target_wrench=PRELOAD, **kwargs)


NOMINAL = np.array([0.004, -0.003, -0.005, 0.02, -0.01, 0.03])  # tracking left it 5 mm in, 4 mm and 1.7° off


def test_the_force_error_converges_to_zero_against_a_stiff_pad_and_the_transform_then_holds():
    params, state = _params(), gr.ComplyState.zero()
    rest = np.zeros(6)
    errors = []
    for _ in range(60):
        error = _felt(state.offset, NOMINAL, rest) - PRELOAD
        errors.append(np.abs(error).max())
        state = gr.comply_step(state, error + PRELOAD, DT, params)
    assert errors[0] == pytest.approx(90.0)  # 20 kN/m × 5 mm − 10 N
    assert errors[-1] < 1e-6  # N / N·m: the error shrinks ×0.7 per sample
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(errors))  # monotone
    # 0.5 mm of penetration carries the 10 N preload; the tangential and angular offsets cancel NOMINAL
    expected = [-0.004, 0.003, 0.005 - 10.0 / 20000.0, -0.02, 0.01, -0.03]
    np.testing.assert_allclose(state.offset, expected, atol=1e-9)
    held = state.offset.copy()
    for _ in range(100):
        state = gr.comply_step(state, _felt(state.offset, NOMINAL, rest), DT, params)
    assert np.abs(state.offset - held).max() < 1e-10  # m, rad: kept once the forces are nulled
    transform = gr.comply_transform(state)
    assert transform[2, 3] == pytest.approx(0.0045, abs=1e-9)


def test_with_a_dead_band_sensor_noise_leaves_the_kept_transform_exactly_in_place_and_without_one_walks_it():
    held = np.array([0.01, -0.004, 0.0045, 0.02, 0.0, -0.01])  # after a grapple; the pad no longer resists
    drift = {}
    for band in (0.0, 1.5):
        rng = np.random.default_rng(0)
        params, state = _params(force_dead_band=band, torque_dead_band=band / 10), gr.ComplyState(held.copy())
        for _ in range(300):
            noise = np.concatenate([rng.normal(0.0, 0.3, 3), rng.normal(0.0, 0.03, 3)])  # N, N·m (1σ)
            state = gr.comply_step(state, np.asarray(PRELOAD) + noise, DT, params)
        drift[band] = np.abs(state.offset - held).max()
    assert drift[1.5] == 0.0
    assert drift[0.0] > 5e-4  # a random walk of the integrated noise (m or rad)


def test_the_offsets_stop_at_their_bound_and_leave_it_without_windup():
    params = _params(limit=(0.05, 0.05, 0.05, 0.2, 0.2, 0.2))
    state = gr.ComplyState.zero()
    nominal = np.array([0.0, 0.0, -0.0005, 0.0, 0.0, 0.0])  # in contact with the preload
    pulled = np.array([-0.08, 0.0, 0.0, 0.0, 0.0, 0.0])  # the pad dragged 80 mm along x: beyond the bound
    for _ in range(200):
        state = gr.comply_step(state, _felt(state.offset, nominal, pulled), DT, params)
    assert state.offset[0] == -0.05
    assert _felt(state.offset, nominal, pulled)[0] == pytest.approx(-5000.0 * 0.03)  # 150 N it cannot null
    state = gr.comply_step(state, _felt(state.offset, nominal, np.zeros(6)), DT, params)  # the pad back at rest
    assert state.offset[0] > -0.05  # leaves the bound at the next sample: nothing wound up beyond it
    for _ in range(44):
        state = gr.comply_step(state, _felt(state.offset, nominal, np.zeros(6)), DT, params)
    assert abs(state.offset[0]) < 1e-6


def test_the_transform_is_the_seeds_matrix_to_first_order():
    state = gr.ComplyState(np.array([0.01, -0.02, 0.003, 1e-3, -2e-3, 1.5e-3]))
    seed = gr.comply_transform(state, first_order=True)
    np.testing.assert_allclose(seed[:3, :3], [[1, -1.5e-3, -2e-3], [1.5e-3, 1, -1e-3], [2e-3, 1e-3, 1]])
    exact = gr.comply_transform(state)
    assert np.abs(exact - seed).max() < 5e-6  # second order in the angles
    np.testing.assert_allclose(exact[:3, :3] @ exact[:3, :3].T, np.eye(3), atol=1e-12)


def test_comply_inputs_are_checked_with_the_value():
    with pytest.raises(ValueError, match="gain must be > 0 on every axis"):
        gr.ComplyParams(gain=(1e-3, 1e-3, 0.0, 1e-3, 1e-3, 1e-3))
    with pytest.raises(ValueError, match=r"wrench must have shape \(6,\)"):
        gr.comply_step(gr.ComplyState.zero(), np.zeros(3), DT, _params())
    with pytest.raises(ValueError, match="fraction must be in"):
        gr.comply_gain(1000.0, DT, 2.5)
