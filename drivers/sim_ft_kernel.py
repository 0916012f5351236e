"""The wrist sensor's samples of one step and its low-pass filter over them, compiled.

``FTSensor.advance`` (:mod:`orbitree.drivers.sim_ft`) takes the sensor's samples of a tick at
once (4 at 500 Hz in a 125 Hz tick): the true wrench interpolated to each sample's time, the
offset, the noise, the range's clipping, then the first-order filter's recursion. On numpy
arrays and Python floats that is a dozen small-array calls and a loop of list comprehensions,
~20 µs a tick; :func:`filter_samples` makes the same IEEE operations in the same order in one
compiled call (numba, ``@njit(cache=True)``: no fast-math, so nothing is fused or reordered), per
sample ``k`` and axis ``a``:

* ``fraction = min((k + 1) · h / span, 1)`` (numpy's ``arange · h / span`` and ``minimum``);
* ``true = start + (new − start) · fraction``, ``raw = (true + offset) + draw · noise`` (the draw
  term only for a noisy sensor, as numpy's code adds it only then);
* ``x = min(max(raw, −limit), limit)`` (numpy's ``maximum`` then ``minimum``; the values are
  finite, where the two agree);
* ``output = output + α · (x − output)``.

The noise draws stay numpy's (the generator's ``normal``, in the same order): they are passed in.
tests/drivers/test_sim_ft_kernel.py checks the kernel against its numpy statement bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def filter_samples(start: np.ndarray, new: np.ndarray, count: int, h: float, span: float, offset: np.ndarray,
                   draws: np.ndarray, noise: np.ndarray, noisy: bool, limit: np.ndarray, output: np.ndarray,
                   alpha: float) -> np.ndarray:
    """The filter's output (6,) after ``count`` samples of the wrench moving linearly from
    ``start`` to ``new`` (6,) over ``span`` s, sampled every ``h`` s; ``draws`` (count, 6) the
    N(0, 1) draws (read only if ``noisy``), ``noise`` (6,) their scale, ``limit`` (6,) the range,
    ``output`` (6,) the filter's output before (not changed)."""
    out = output.copy()
    for k in range(count):
        fraction = min((k + 1) * h / span, 1.0)
        for a in range(6):
            raw = (start[a] + (new[a] - start[a]) * fraction) + offset[a]
            if noisy:
                raw = raw + draws[k, a] * noise[a]
            x = min(max(raw, -limit[a]), limit[a])
            out[a] = out[a] + alpha * (x - out[a])
    return out


@numba.njit(cache=True)
def drift_and_filter(start: np.ndarray, new: np.ndarray, count: int, h: float, span: float, offset: np.ndarray,
                     draws: np.ndarray, walk: np.ndarray, root_count: float, noise: np.ndarray, limit: np.ndarray,
                     output: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """A drifting, noisy sensor's step: the offset after the drift's step ``offset + draws[0] · walk
    · root_count`` (numpy's operations in their order, per axis), then :func:`filter_samples` with
    it on the noise draws ``draws[1:]`` ((count + 1, 6): the generator's draws of the two, in the
    order ``FTSensor.advance`` takes them); returns (offset, output), both new arrays."""
    drifted = offset + draws[0] * walk * root_count
    output = filter_samples(start, new, count, h, span, drifted, draws[1:], noise, True, limit, output, alpha)
    return drifted, output


def warm_up() -> None:
    """Load (or compile) the kernels once, outside any tick, for the arrays a run passes."""
    six = np.ones(6)
    filter_samples(six, six, 2, 0.002, 0.008, six, np.zeros((2, 6)), six, True, six, six, 0.3)
    drift_and_filter(six, six, 2, 0.002, 0.008, six, np.zeros((3, 6)), six, 1.5, six, six, six, 0.3)
