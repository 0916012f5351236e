"""The motion-blur kernel made in one bincount equals the four np.add.at passes it replaced, bit
for bit (the blurred frames stay the same), and is a normalised segment along the shift."""

from __future__ import annotations

import numpy as np

from orbitree.drivers.sim_sensor import line_kernel


def _add_at_kernel(shift: np.ndarray) -> np.ndarray:
    """The kernel as it was made before: four np.add.at passes into a zero kernel."""
    half = np.ceil(np.abs(shift) / 2.0).astype(int) + 1
    kernel = np.zeros((2 * half[1] + 1, 2 * half[0] + 1), np.float64)
    count = max(int(np.ceil(8.0 * np.linalg.norm(shift))), 2)
    points = half + ((np.arange(count) + 0.5) / count - 0.5)[:, None] * shift
    base = np.floor(points).astype(int)
    frac = points - base
    for dx in (0, 1):
        for dy in (0, 1):
            weight = (frac[:, 0] if dx else 1 - frac[:, 0]) * (frac[:, 1] if dy else 1 - frac[:, 1])
            np.add.at(kernel, (base[:, 1] + dy, base[:, 0] + dx), weight)
    return (kernel / kernel.sum()).astype(np.float32)


def test_line_kernel_equals_the_add_at_passes_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    shifts = [np.array([0.0, 0.0]), np.array([5.0, 0.0]), np.array([0.0, -3.0]), np.array([2.5, 2.5])]
    shifts += [rng.normal(0, 4, 2) * 10.0 ** rng.uniform(-3, 1) for _ in range(500)]
    for shift in shifts:
        kernel = line_kernel(shift)
        expected = _add_at_kernel(shift)
        assert kernel.shape == expected.shape and kernel.tobytes() == expected.tobytes()


def test_line_kernel_is_a_normalised_segment_along_the_shift() -> None:
    kernel = line_kernel(np.array([6.0, 0.0]))
    assert kernel.dtype == np.float32 and abs(float(kernel.sum()) - 1.0) < 1e-6
    rows = np.nonzero(kernel.sum(axis=1) > 1e-6)[0]
    columns = np.nonzero(kernel.sum(axis=0) > 1e-6)[0]
    assert len(rows) <= 2 and 6 <= columns[-1] - columns[0] + 1 <= 8  # a horizontal run ~6 px long
