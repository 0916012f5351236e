"""The compiled samples-and-filter of the wrist sensor equal their numpy statement bit for bit
(FTSensor's readings, hence every compliant run, stay the same)."""

from __future__ import annotations

import numpy as np

from orbitree.drivers.sim_ft import UR10E_FT, FTSensor
from orbitree.drivers.sim_ft_kernel import filter_samples


def _numpy_filter(start, new, count, h, span, offset, draws, noise, noisy, limit, output, alpha):
    """The numpy statement the kernel replaces (FTSensor.advance before the kernel)."""
    fractions = np.minimum(np.arange(1, count + 1) * h / span, 1.0)
    raw = start + (new - start) * fractions[:, None] + offset
    if noisy:
        raw = raw + draws * noise
    samples = np.minimum(np.maximum(raw, -limit), limit)
    out = output.tolist()
    for sample in samples.tolist():
        out = [o + alpha * (x - o) for o, x in zip(out, sample, strict=True)]
    return np.array(out)


def test_kernel_equals_the_numpy_statement_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    limit = np.repeat([100.0, 10.0], 3)
    for trial in range(2000):
        count = int(rng.integers(1, 7))
        h = 0.002
        span = float(rng.uniform(0.5, 1.2)) * count * h
        start, new = rng.normal(0, 60, 6), rng.normal(0, 60, 6)  # beyond the range at times: clipped
        offset, noise, output = rng.normal(0, 3, 6), rng.uniform(0.1, 9, 6), rng.normal(0, 50, 6)
        draws, noisy = rng.normal(size=(count, 6)), bool(trial % 3)
        alpha = float(rng.uniform(0.05, 1.0))
        args = (start, new, count, h, span, offset, draws, noise, noisy, limit, output, alpha)
        before = output.copy()
        assert filter_samples(*args).tobytes() == _numpy_filter(*args).tobytes()
        assert np.array_equal(output, before)  # the output before is not changed


def test_sensor_readings_follow_the_kernel_through_a_run_of_ticks() -> None:
    sensor, reference = FTSensor(UR10E_FT, np.random.default_rng(5)), FTSensor(UR10E_FT, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    wrench = np.zeros(6)
    output = None
    for tick in range(1, 200):
        wrench = wrench + rng.normal(0, 4, 6)
        t = tick * 0.008
        sensor.advance(t, wrench)
        # the reference sensor: the same generator draws, through the numpy statement
        new = np.asarray(wrench, dtype=float)
        if output is None:
            reference._true = new.copy()
            output = np.clip(new + reference.offset, -reference._limit, reference._limit)
        count = int(np.floor((t - reference._t) / reference._h + 1e-9))
        span = max(t - reference._t, 1e-12)
        reference.offset = reference.offset + reference._rng.normal(0.0, 1.0, 6) * reference._walk * np.sqrt(count)
        draws = reference._rng.normal(0.0, 1.0, (count, 6))
        output = _numpy_filter(reference._true, new, count, reference._h, span, reference.offset, draws,
                               reference._raw_noise, True, reference._limit, output, reference._alpha)
        reference._t += count * reference._h
        reference._true = new
        assert sensor.reading().tobytes() == output.tobytes()


def test_drift_and_filter_is_the_drift_step_then_the_filter_on_the_draws_after_it() -> None:
    from orbitree.drivers.sim_ft_kernel import drift_and_filter

    rng = np.random.default_rng(8)
    limit = np.repeat([100.0, 10.0], 3)
    for _ in range(500):
        count = int(rng.integers(1, 7))
        span = float(rng.uniform(0.5, 1.2)) * count * 0.002
        start, new = rng.normal(0, 60, 6), rng.normal(0, 60, 6)
        offset, noise, output = rng.normal(0, 3, 6), rng.uniform(0.1, 9, 6), rng.normal(0, 50, 6)
        walk, draws = rng.uniform(0.0, 0.01, 6), rng.normal(size=(count + 1, 6))
        alpha = float(rng.uniform(0.05, 1.0))
        drifted = offset + draws[0] * walk * np.sqrt(count)  # FTSensor.advance's numpy statement
        got_offset, got_output = drift_and_filter(start, new, count, 0.002, span, offset, draws, walk,
                                                  float(np.sqrt(count)), noise, limit, output, alpha)
        assert got_offset.tobytes() == drifted.tobytes()
        expected = _numpy_filter(start, new, count, 0.002, span, drifted, draws[1:], noise, True, limit, output,
                                 alpha)
        assert got_output.tobytes() == expected.tobytes()
