"""A process keeps the last few noise tables (a campaign's worker runs the same seeds again): a
kept table is the one a fresh generator draws, shared read-only, and the oldest one goes first."""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.drivers import sim_sensor
from orbitree.drivers.sim_sensor import NOISE_OFFSETS, ImageSensor, noise_table


def test_sensors_of_one_seed_share_the_table_a_fresh_generator_draws() -> None:
    shape = (24, 32)
    first, second = ImageSensor(11), ImageSensor(11)
    draw_a, sign_a = first.standard_normal(shape)
    draw_b, sign_b = second.standard_normal(shape)
    assert first._noise_table is second._noise_table
    expected = np.random.default_rng([11, 2]).standard_normal(24 * 32 + NOISE_OFFSETS, dtype=np.float32)
    assert np.array_equal(first._noise_table, expected)
    # the frames' offsets and signs come from each sensor's own generator: the same sequence
    assert sign_a == sign_b and np.array_equal(draw_a, draw_b)
    with pytest.raises(ValueError, match="read-only"):
        first._noise_table[0] = 0.0


def test_the_oldest_table_is_dropped_beyond_the_kept_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim_sensor, "_NOISE_TABLES", type(sim_sensor._NOISE_TABLES)())
    monkeypatch.setattr(sim_sensor, "NOISE_TABLES_KEPT", 2)
    a = noise_table(1, 100)
    noise_table(2, 100)
    assert noise_table(1, 100) is a  # used again: now the newest
    noise_table(3, 100)  # drops seed 2's, the oldest
    assert list(sim_sensor._NOISE_TABLES) == [(1, 100), (3, 100)]
    fresh = np.random.default_rng([2, 2]).standard_normal(100, dtype=np.float32)
    assert np.array_equal(noise_table(2, 100), fresh)
