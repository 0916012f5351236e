"""The faces' coverage fill: compiled loops against the numpy arithmetic they replace, and the
coverage itself against the polygons' areas."""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.drivers.sim_coverage import _fill_convex, fill_polygons, fill_polygons_numpy


def _random_faces(rng: np.random.Generator, width: int, height: int) -> tuple[list[np.ndarray], list[float]]:
    """1-5 polygons of 3-8 vertices around random centres, some reaching out of the image, some
    with their vertices in random order (not convex: a sample row crosses them 4 or more times),
    some on the 1/4-pixel sample grid (crossings exactly on sample points)."""
    outlines, albedos = [], []
    for _ in range(rng.integers(1, 6)):
        n = int(rng.integers(3, 9))
        centre = rng.uniform(-20, [width + 20, height + 20])
        radius = rng.uniform(2, max(3, min(width, height)))
        angles = np.sort(rng.uniform(0, 2 * np.pi, n)) if rng.random() < 0.7 else rng.uniform(0, 2 * np.pi, n)
        points = centre + np.c_[np.cos(angles), np.sin(angles)] * radius * rng.uniform(0.5, 1.5, (n, 1))
        if rng.random() < 0.2:
            points = np.round(points * 4) / 4
        outlines.append(points)
        albedos.append(float(rng.random()))
    return outlines, albedos


def test_compiled_fill_draws_the_same_pixels_bit_for_bit_as_the_numpy_fill():
    rng = np.random.default_rng(3)
    convex_seen = non_convex_seen = 0
    for _ in range(400):
        width, height = int(rng.integers(16, 300)), int(rng.integers(16, 200))
        canvas = rng.random((height, width)).astype(np.float32)
        outlines, albedos = _random_faces(rng, width, height)
        compiled, reference = canvas.copy(), canvas.copy()
        fill_polygons(compiled, outlines, albedos)
        fill_polygons_numpy(reference, outlines, albedos)
        assert np.array_equal(compiled, reference)
        # which path each face took: the kernel stops at a face it leaves to numpy
        ends = np.cumsum([len(o) for o in outlines])
        points = np.concatenate(outlines).astype(np.float64)
        stopped = _fill_convex(canvas.copy(), points, ends, np.asarray(albedos, np.float32), 0)
        convex_seen += stopped > 0
        non_convex_seen += stopped < len(outlines)
    assert convex_seen > 200 and non_convex_seen > 50  # both paths were exercised


def test_a_non_contiguous_canvas_is_filled_by_the_numpy_path_with_the_same_result():
    rng = np.random.default_rng(5)
    outlines, albedos = [np.array([[3.2, 2.1], [40.7, 5.3], [30.1, 28.9], [6.6, 20.2]])], [0.8]
    base = rng.random((40, 120)).astype(np.float32)
    strided, contiguous = base.copy(), base[:, ::2].copy()
    fill_polygons(strided[:, ::2], outlines, albedos)
    fill_polygons(contiguous, outlines, albedos)
    assert np.array_equal(strided[:, ::2], contiguous)


@pytest.mark.parametrize("angle_deg", [0.0, 17.0, 45.0, 80.0])
def test_coverage_of_a_square_sums_to_its_area_within_half_a_sample_along_its_outline(angle_deg):
    # 4x4 point sampling (samples 1/4 px apart): each edge pixel's coverage is a count of 16, and
    # the covered area is the polygon's up to half a sample spacing along its outline
    side, centre = 23.4, np.array([40.3, 31.7])
    a = np.radians(angle_deg)
    corners = centre + side / 2 * np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) @ np.array(
        [[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    canvas = np.zeros((64, 80), np.float32)
    fill_polygons(canvas, [corners], [1.0])
    assert abs(canvas.sum() - side**2) <= 4 * side * (1 / 8)
    assert np.count_nonzero(canvas == 1.0) >= (side - 2 * np.sqrt(2)) ** 2  # the inside filled whole
    assert set(np.unique(canvas * 16).round(4)) <= set(np.arange(17.0))  # counts of 16 samples
