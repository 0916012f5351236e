"""A region render plans only the faces that can paint its windows (``sim_patchsets.faces_reaching``):
the faces it leaves out paint none of the windows' pixels, and the windows' pixels stay the whole
image's, on the flagship's interface seen from several poses."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import SimCamera
from orbitree.drivers.sim_coverage import fill_polygons
from orbitree.drivers.sim_patchsets import pixel_boxes
from orbitree.drivers.sim_render import _FACES, _outside_view
from orbitree.runtime.executive import Executive

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"


def _flagship_camera(standoff_mm: float, lateral_mm: float) -> SimCamera:
    start = f"robots.arm.start={{target: sirom, offset: {{xyz: [{lateral_mm} mm, -20 mm, {standoff_mm} mm]}}}}"
    return Executive(load_mission(MISSION, [start])).ctx.world.cameras["arm"]


def _faces(plans: list[list[tuple]]) -> list[np.ndarray]:
    return [outline for plan in plans for step in plan if step[0] is _FACES for outline in step[1]]


@pytest.mark.parametrize(("standoff_mm", "lateral_mm"), [(350.0, 15.0), (180.0, 15.0), (500.0, 90.0)])
def test_faces_left_out_of_a_windows_plan_paint_none_of_its_pixels(standoff_mm, lateral_mm):
    camera = _flagship_camera(standoff_mm, lateral_mm)
    height, width = camera.lens.height, camera.lens.width
    world2cam = np.linalg.inv(camera.cam2world())
    objects = [obj for obj in camera.objects if not obj.on_camera]
    full = [camera._plan(obj, world2cam, None, (height, width)) for obj in objects]
    whole = np.full((height, width), camera.background_albedo, np.float32)
    for plan in full:
        camera._draw_plan(whole, plan)
    rng = np.random.default_rng(11)
    left_out = 0
    for _ in range(8):
        reach = []
        for _ in range(int(rng.integers(1, 4))):
            x0, y0 = int(rng.integers(0, width - 60)), int(rng.integers(0, height - 60))
            x1, y1 = min(x0 + int(rng.integers(20, 200)), width), min(y0 + int(rng.integers(20, 200)), height)
            reach.append((x0, y0, x1, y1))
        plans = [camera._plan(obj, world2cam, None, (height, width), reach) for obj in objects]
        kept = {outline.tobytes() for outline in _faces(plans)}
        for outline in _faces(full):
            if outline.tobytes() in kept:
                continue
            left_out += 1
            alone = np.zeros((height, width), np.float32)
            fill_polygons(alone, [outline], [1.0])
            for x0, y0, x1, y1 in reach:
                assert np.count_nonzero(alone[y0:y1, x0:x1]) == 0
        for x0, y0, x1, y1 in reach:
            canvas = np.full((y1 - y0, x1 - x0), camera.background_albedo, np.float32)
            for plan in plans:
                camera._draw_plan(canvas, plan, (x0, y0, width, height))
            np.testing.assert_array_equal(canvas, whole[y0:y1, x0:x1])
    assert left_out >= 8  # the windows miss some faces: the plan is smaller


def test_ray_boxes_to_pixel_boxes_by_bisection_equal_one_by_one():
    table = _flagship_camera(350.0, 15.0)._ray_table()
    spans = table.pixel_spans()
    assert spans is not None  # the flagship's lens: column and row ray ranges rise monotonically
    rng = np.random.default_rng(2)
    centre = rng.uniform(1.3 * table.rays_min, 1.3 * table.rays_max, (300, 2))
    half = rng.uniform(0.0, 0.2, (300, 2))
    low, high = centre - half, centre + half
    empty = 0
    for x0, y0, x1, y1, lo, hi in zip(*pixel_boxes(spans, low, high), low, high, strict=True):
        one = table.pixels_of_ray_box(lo, hi)
        if one is None:
            assert x0 >= x1 or y0 >= y1
            empty += 1
        else:
            assert (x0, y0, x1, y1) == one
    assert 0 < empty < 300


def test_ray_step_bounds_the_ray_of_any_point_against_its_nearest_pixel_centre():
    """The bound ``faces_reaching`` rests on: a point's exact ray (``cv2.undistortPoints``) lies within
    half of ``ray_step`` of its nearest pixel centre's ray in the table."""
    camera = _flagship_camera(350.0, 15.0)
    table, lens = camera._ray_table(), camera.lens
    points = np.random.default_rng(4).uniform([-0.5, -0.5], [lens.width - 0.5, lens.height - 0.5], (20000, 2))
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    exact = cv2.undistortPoints(points.reshape(-1, 1, 2), lens.camera_matrix, lens.dist_coeffs,
                                criteria=criteria).reshape(-1, 2)
    nearest = np.clip(np.rint(points).astype(int), 0, [lens.width - 1, lens.height - 1])
    gap = np.abs(table.rays[nearest[:, 1], nearest[:, 0]] - exact).max()
    assert 0.0 < gap <= 0.5 * table.ray_step()


def test_outside_view_on_floats_equals_the_array_formula():
    """``sim_render._outside_view`` (a patch crossing the camera's plane, on Python floats) decides as
    the numpy formula it replaced, on points around the grown ray box's edges."""
    table = _flagship_camera(350.0, 15.0)._ray_table()
    grow = 0.1 * (table.rays_max - table.rays_min)
    rng = np.random.default_rng(8)
    outside = 0
    for _ in range(400):
        centre = rng.uniform(1.6 * table.rays_min, 1.6 * table.rays_max)
        rays = centre + rng.uniform(-0.15, 0.15, (int(rng.integers(3, 6)), 2))
        if rng.random() < 0.3:  # a coordinate exactly on the grown box's edge
            rays[:, 0] = (table.rays_min - grow)[0]
        points = np.column_stack([rays, np.ones(len(rays))]) * rng.uniform(0.01, 2.0, (len(rays), 1))
        expected = bool(np.any(np.all(points[:, :2] / points[:, 2:3] < table.rays_min - grow, axis=0))
                        or np.any(np.all(points[:, :2] / points[:, 2:3] > table.rays_max + grow, axis=0)))
        assert _outside_view(points, table) == expected
        outside += expected
    assert 20 < outside < 380
