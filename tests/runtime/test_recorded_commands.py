"""The commands journalled by the recording robot carry numpy's rounding of their arrays."""

from __future__ import annotations

import numpy as np

from orbitree.runtime.devices import _rounded


def test_recorded_arrays_are_np_round_to_6_decimals_bit_for_bit() -> None:
    """``_rounded`` is ``np.round(a, 6)`` to the bit: random twists of every scale, exact halves of
    the sixth decimal (rounded to even), signed zeros and non-finite values; other dtypes too."""
    rng = np.random.default_rng(4)
    for scale in (1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e12):
        values = rng.normal(0.0, scale, 60000)
        values[:2000] = (rng.integers(-10**7, 10**7, 2000) + 0.5) / 1e6
        assert np.array_equal(_rounded(values).view(np.int64), np.round(values, 6).view(np.int64))
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -4e-7, 4e-7, 2.5e-6, 3.5e-6])
    assert np.array_equal(_rounded(special), np.round(special, 6), equal_nan=True)
    assert np.array_equal(np.signbit(_rounded(special)), np.signbit(np.round(special, 6)))
    ints = np.arange(6)
    assert _rounded(ints).dtype == ints.dtype and np.array_equal(_rounded(ints), ints)
    halves = np.float32([0.1234565, 1.5e-6])
    assert _rounded(halves).dtype == np.float32 and np.array_equal(_rounded(halves), np.round(halves, 6))
