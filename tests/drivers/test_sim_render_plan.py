"""Parts of sim_render's plan against the numpy code they replace: the near-plane clipping on
Python floats, bit for bit, and the out-of-view test of a patch crossing the camera's plane."""

from __future__ import annotations

import numpy as np

from orbitree.drivers import sim_render
from orbitree.drivers.sim_camera import SimCamera
from orbitree.drivers.sim_render import NEAR_Z_M


def _clip_near_numpy(outline_cam: np.ndarray) -> np.ndarray:
    """The clipping edge by edge on numpy rows (the code before)."""
    out = []
    for a, b in zip(outline_cam, np.roll(outline_cam, -1, axis=0), strict=True):
        a_in, b_in = a[2] > NEAR_Z_M, b[2] > NEAR_Z_M
        if a_in:
            out.append(a)
        if a_in != b_in:
            out.append(a + (NEAR_Z_M - a[2]) / (b[2] - a[2]) * (b - a))
    return np.array(out)


def test_near_plane_clipping_on_floats_gives_the_numpy_points_bit_for_bit():
    """5000 random convex-or-not polygons of 3 to 8 corners straddling the near plane (depths
    spread over metres and over millimetres, so the cut lands close to corners too): the same
    points, in the same order, to the last bit; every kind of crossing occurs."""
    rng = np.random.default_rng(8)
    cuts = 0
    for _ in range(5000):
        n = int(rng.integers(3, 9))
        polygon = rng.normal(size=(n, 3))
        polygon[:, 2] = rng.uniform(-1.0, 2.0, n) * rng.choice([1.0, 1e-3])
        expected = _clip_near_numpy(polygon)
        got = sim_render._clip_near(polygon)
        if len(expected) == 0:
            assert len(got) == 0
            continue
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()
        cuts += int(np.count_nonzero(np.isclose(got[:, 2], NEAR_Z_M, rtol=0, atol=1e-12)))
    assert cuts > 3000


def test_outside_view_on_floats_decides_as_the_array_formula():
    """``_outside_view`` (every frame for the table, which crosses the camera's plane) on Python
    floats against the numpy formula it replaced, on 400 point sets around the grown ray box's
    edges (a third of them with a coordinate exactly on an edge)."""
    table = SimCamera()._ray_table()
    grow = 0.1 * (table.rays_max - table.rays_min)
    rng = np.random.default_rng(8)
    outside = 0
    for _ in range(400):
        centre = rng.uniform(1.6 * table.rays_min, 1.6 * table.rays_max)
        rays = centre + rng.uniform(-0.15, 0.15, (int(rng.integers(3, 6)), 2))
        if rng.random() < 0.3:
            rays[:, 0] = (table.rays_min - grow)[0]
        points = np.column_stack([rays, np.ones(len(rays))]) * rng.uniform(0.01, 2.0, (len(rays), 1))
        ratios = points[:, :2] / points[:, 2:3]
        expected = bool(np.any(np.all(ratios < table.rays_min - grow, axis=0))
                        or np.any(np.all(ratios > table.rays_max + grow, axis=0)))
        assert sim_render._outside_view(points, table) == expected
        outside += expected
    assert 20 < outside < 380
