"""The wrist force/torque sensor of a simulated UR e-Series arm, as its datasheet describes it.

The UR10e's built-in sensor ("force sensing, tool flange", UR10e technical specifications /
product factsheet, [UR] in the README's Sources): force x-y-z range 100.0 N, precision ±5.0 N,
accuracy ±5.5 N; torque x-y-z range 10.0 N·m, precision ±0.2 N·m, accuracy ±0.5 N·m. How
each figure becomes a part of the model (:data:`UR10E_FT`):

* **noise**: the precision, read as one standard deviation of a reading (UR states no coverage
  factor; one sigma is the cautious reading). White noise at the sample rate goes through the
  filter below, scaled so that what comes out has exactly that standard deviation.
* **bias**: drawn once per run (from the run seed), per axis from N(0, σ_b) with
  σ_b = sqrt(accuracy² − precision²) = 2.3 N and 0.46 N·m: accuracy is the whole error against
  the truth, precision its spread, so what is left over is the offset. ``zero()`` removes it,
  as ``zero_ftsensor()`` does on the controller.
* **drift**: a slow random walk of the offset, ``drift`` per √minute (UR publishes no drift;
  1 N and 0.05 N·m per √min is our assumption, strain gauges warming up on a moving arm).
* **range**: each axis saturates at ±range, before the filter (the electronics clip).
* **filter**: a first-order low-pass at ``bandwidth`` on samples taken at ``rate`` (500 Hz, the
  e-Series controller's cycle). UR publishes no bandwidth for this sensor; 30 Hz (a lag of
  1/(2π·30 Hz) = 5.3 ms) is our assumption.

The true wrench is known at the ends of each simulation step (the contact model solves once per
step); between two ends the sensor sees it change linearly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Pair = tuple[float, float]


@dataclass(frozen=True)
class FTSensorModel:
    """Per-axis figures as (force N, torque N·m) pairs; ``bandwidth`` and ``rate`` in Hz.

    ``noise``: standard deviation of a reading; ``bias``: standard deviation of the per-run
    offset; ``drift``: standard deviation of the offset's random walk after one minute;
    ``range``: saturation (``inf``: none); ``bandwidth``: cut-off of the first-order filter
    (``inf``: none).
    """

    noise: Pair = (0.0, 0.0)
    bias: Pair = (0.0, 0.0)
    drift: Pair = (0.0, 0.0)
    range: Pair = (math.inf, math.inf)
    bandwidth: float = math.inf
    rate: float = 500.0

    def __post_init__(self) -> None:
        for key in ("noise", "bias", "drift"):
            pair = tuple(float(v) for v in getattr(self, key))
            if len(pair) != 2 or not all(math.isfinite(v) and v >= 0.0 for v in pair):
                raise ValueError(f"FTSensorModel.{key} must be two finite numbers >= 0, got {pair}")
            object.__setattr__(self, key, pair)
        limits = tuple(float(v) for v in self.range)
        if len(limits) != 2 or not all(v > 0.0 for v in limits):
            raise ValueError(f"FTSensorModel.range must be two numbers > 0, got {limits}")
        object.__setattr__(self, "range", limits)
        if not self.bandwidth > 0.0 or not (math.isfinite(self.rate) and self.rate > 0.0):
            raise ValueError(f"bandwidth and rate must be > 0 Hz, got {self.bandwidth}, {self.rate}")

    @property
    def lag(self) -> float:
        """Low-frequency lag of the filter, 1 / (2π bandwidth) (s); 0 without a filter."""
        return 0.0 if math.isinf(self.bandwidth) else 1.0 / (2.0 * math.pi * self.bandwidth)


UR10E_FT = FTSensorModel(
    noise=(5.0, 0.2),
    bias=(math.sqrt(5.5**2 - 5.0**2), math.sqrt(0.5**2 - 0.2**2)),
    drift=(1.0, 0.05),
    range=(100.0, 10.0),
    bandwidth=30.0,
)
"""The UR10e's built-in sensor: datasheet noise, bias and range; assumed drift and bandwidth."""

IDEAL_FT = FTSensorModel()
"""A perfect sensor: the true wrench, at once (tests)."""


_NO_DRAWS = np.zeros((0, 6))  # a sensor without noise draws none


def _six(pair: Pair) -> np.ndarray:
    return np.repeat(np.asarray(pair, dtype=float), 3)


class FTSensor:
    """One sensor's state: its offset (bias + drift), the filter, the last sample.

    ``advance(t, wrench)`` takes samples up to time ``t`` (s) while the true wrench (6,) moves
    linearly from its value at the previous call to ``wrench``; ``reading()`` is the last sample
    (6,), ``stamp`` its time. ``zero()`` stores the offset and the current true wrench, as if
    averaged, and subtracts them from then on.
    """

    def __init__(self, model: FTSensorModel = IDEAL_FT, rng: np.random.Generator | None = None) -> None:
        self.model = model
        # the compiled filter, imported with the first sensor (numba's import, ~0.2 s and ~60 MB,
        # stays out of commands that build no world: a mission refused at loading)
        from orbitree.drivers.sim_ft_kernel import drift_and_filter, filter_samples
        self._filter_samples, self._drift_and_filter = filter_samples, drift_and_filter
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self._h = 1.0 / model.rate
        self._filtered = not math.isinf(model.bandwidth)
        self._alpha = 1.0 - math.exp(-2.0 * math.pi * model.bandwidth * self._h) if self._filtered else 1.0
        # white noise in, the filter's output has the datasheet's standard deviation
        self._raw_noise = _six(model.noise) * math.sqrt((2.0 - self._alpha) / self._alpha)
        self._walk = _six(model.drift) * math.sqrt(self._h / 60.0)
        self._limit = _six(model.range)
        self._floor = -self._limit
        self._noisy, self._drifting = bool(self._raw_noise.any()), bool(self._walk.any())
        self.offset = self._rng.normal(0.0, 1.0, 6) * _six(model.bias)
        self._zero = np.zeros(6)
        self._true = np.zeros(6)
        self._output: np.ndarray | None = None
        self._t = 0.0
        self.stamp = 0.0

    def advance(self, t: float, wrench: np.ndarray) -> None:
        new = np.asarray(wrench, dtype=float)
        if self._output is None:  # the first sample: settled on what the sensor sees now
            self._true, self._output = new.copy(), np.clip(new + self.offset, -self._limit, self._limit)
        count = math.floor((t - self._t) / self._h + 1e-9)
        start, span = self._true, max(t - self._t, 1e-12)
        if count > 0 and self._drifting and self._filtered and self._noisy:  # a real sensor's step, in one call:
            # the drift's draws and the samples' (one call of the generator: the same values in
            # the same order as two), the offset's step and the filter, compiled
            draws = self._rng.normal(0.0, 1.0, (count + 1, 6))
            self.offset, self._output = self._drift_and_filter(
                start, new, count, self._h, span, self.offset, draws, self._walk, math.sqrt(count),
                self._raw_noise, self._limit, self._output, self._alpha)
        else:
            if count and self._drifting:  # the walk's sum over the samples, drawn at once
                self.offset = self.offset + self._rng.normal(0.0, 1.0, 6) * self._walk * math.sqrt(count)
            if count and self._filtered:  # the samples at once (the same draws, in the same order)
                draws = self._rng.normal(0.0, 1.0, (count, 6)) if self._noisy else _NO_DRAWS
                # the samples and the filter's recursion, compiled: the IEEE operations of
                # ``self._samples`` on the interpolated wrenches, then of the filter, in their order
                self._output = self._filter_samples(start, new, count, self._h, span, self.offset, draws,
                                                    self._raw_noise, self._noisy, self._limit, self._output,
                                                    self._alpha)
        if count:
            self._t += count * self._h
            self.stamp = self._t
        self._true = new

    def _samples(self, true: np.ndarray) -> np.ndarray:
        """Raw samples (..., 6) of true wrenches (..., 6): offset, noise (drawn in row order), clipped."""
        raw = true + self.offset
        if self._noisy:
            raw = raw + self._rng.normal(0.0, 1.0, true.shape) * self._raw_noise
        return np.minimum(np.maximum(raw, self._floor), self._limit)  # np.clip's values, at a third of its cost

    def reading(self) -> np.ndarray:
        """The sensor's output now (6,), zeroed; without a filter, a fresh sample of the wrench."""
        if not self._filtered or self._output is None:
            return self._samples(self._true) - self._zero
        return self._output - self._zero

    def zero(self) -> None:
        self._zero = self._true + self.offset
