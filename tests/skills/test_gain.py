"""orbitree.skills.gain: limits, slope at zero, monotonicity, constant case, checks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitree.skills.gain import AdaptiveGain


def test_defaults_are_visp_ur_example() -> None:
    gain = AdaptiveGain()
    assert (gain.lambda0, gain.lambda_inf, gain.slope0) == (1.5, 0.4, 30.0)


def test_value_at_zero_is_lambda0() -> None:
    assert AdaptiveGain(1.5, 0.4, 30.0)(0.0) == pytest.approx(1.5, abs=1e-15)


def test_value_at_infinity_tends_to_lambda_inf() -> None:
    gain = AdaptiveGain(1.5, 0.4, 30.0)
    assert gain(math.inf) == pytest.approx(0.4, abs=1e-15)
    assert gain(1.0) == pytest.approx(0.4, abs=1e-10)  # 1.1 · exp(−30/1.1) ≈ 1.6e-12


def test_slope_at_zero_is_minus_slope0() -> None:
    gain = AdaptiveGain(1.5, 0.4, 30.0)
    h = 1e-7
    forward = (gain(h) - gain(0.0)) / h
    assert forward == pytest.approx(-30.0, rel=1e-5)


def test_closed_form_at_a_point() -> None:
    gain = AdaptiveGain(2.0, 0.5, 3.0)
    assert gain(0.2) == pytest.approx(1.5 * math.exp(-3.0 * 0.2 / 1.5) + 0.5, rel=1e-15)


@given(
    st.floats(0.01, 10.0),
    st.floats(0.0, 5.0),
    st.floats(0.1, 100.0),
    st.floats(0.0, 10.0),
    st.floats(0.0, 10.0),
)
def test_monotone_non_increasing_between_the_limits(
    lambda_inf: float, extra: float, slope0: float, x1: float, x2: float
) -> None:
    gain = AdaptiveGain(lambda_inf + extra, lambda_inf, slope0)
    low, high = sorted((x1, x2))
    assert gain(low) >= gain(high)
    assert lambda_inf <= gain(high) <= lambda_inf + extra + 1e-12


def test_strictly_decreasing_on_a_grid_and_vectorised() -> None:
    gain = AdaptiveGain()
    x = np.linspace(0.0, 0.1, 101)
    values = gain(x)
    assert isinstance(values, np.ndarray) and values.shape == x.shape
    assert np.all(np.diff(values) < 0.0)
    assert isinstance(gain(0.3), float)


def test_constant_gain_when_lambda0_equals_lambda_inf() -> None:
    gain = AdaptiveGain.constant(0.7)
    assert gain.is_constant
    for x in (0.0, 1e-9, 0.5, 1e6, math.inf):
        assert gain(x) == 0.7
    np.testing.assert_array_equal(gain(np.array([0.0, 2.0])), [0.7, 0.7])


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        AdaptiveGain().lambda0 = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.3, 0.4, 30.0), r"lambda0 must be >= lambda_inf \(0.4\), got 0.3"),
        ((1.5, 0.0, 30.0), "lambda_inf must be > 0, got 0.0"),
        ((1.5, -0.1, 30.0), "lambda_inf must be > 0, got -0.1"),
        ((1.5, 0.4, 0.0), "slope0 must be > 0, got 0.0"),
        ((math.nan, 0.4, 30.0), "lambda0 must be finite, got nan"),
    ],
)
def test_parameters_are_checked(args: tuple[float, float, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AdaptiveGain(*args)


def test_negative_or_nan_argument_is_rejected() -> None:
    with pytest.raises(ValueError, match="gain argument must be >= 0"):
        AdaptiveGain()(-0.1)
    with pytest.raises(ValueError, match="gain argument must be >= 0"):
        AdaptiveGain()(math.nan)


def test_float_argument_gives_the_array_codes_bits() -> None:
    """A float takes a shorter path than an array (the servo calls the gain every tick): the same
    value, bit for bit, over errors from 0 to far beyond the gain's knee, and at infinity."""
    errors = np.concatenate([[0.0, 1e-300, math.inf], np.random.default_rng(0).exponential(0.05, 20_000),
                             np.geomspace(1e-9, 1e3, 2_000)])
    for gain in (AdaptiveGain(), AdaptiveGain(2.0, 0.3, 12.5), AdaptiveGain.constant(0.7)):
        as_floats = [gain(x) for x in errors.tolist()]
        assert all(type(v) is float for v in as_floats)
        assert np.array(as_floats).tobytes() == gain(errors).tobytes()
        assert [gain(np.float64(x)) for x in errors[:50]] == as_floats[:50]  # numpy scalars: the array path
