"""The per-body batched geometry of the patch renderer (``sim_patchsets``): the same numbers as the
patch-by-patch code it replaced, bit for bit, on the flagship's board seen from several poses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import SimCamera
from orbitree.drivers.sim_patchsets import outlines_px, stacked
from orbitree.drivers.sim_render import NEAR_Z_M, _outline_samples, _within_view
from orbitree.runtime.executive import Executive

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"


def _flagship_camera(standoff_mm: float, lateral_mm: float) -> SimCamera:
    start = f"robots.arm.start={{target: sirom, offset: {{xyz: [{lateral_mm} mm, -20 mm, {standoff_mm} mm]}}}}"
    return Executive(load_mission(MISSION, [start])).ctx.world.cameras["arm"]


@pytest.mark.parametrize(("standoff_mm", "lateral_mm"), [(350.0, 15.0), (180.0, 15.0), (500.0, 90.0)])
def test_outlines_projected_at_once_equal_each_patch_projected_alone(standoff_mm, lateral_mm):
    camera = _flagship_camera(standoff_mm, lateral_mm)
    table = camera._ray_table()
    checked = 0
    for obj in camera.objects:
        patches = obj.patches
        body2cam = np.linalg.inv(camera.cam2world()) @ obj.pose()
        plane2body_all, _, _, outlines_t = stacked(patches)
        plane2cam_all = np.matmul(body2cam[:3, :3], plane2body_all)
        plane2cam_all[:, :, 2] += body2cam[:3, 3]
        outline_all = np.matmul(plane2cam_all[:, :, :2], outlines_t) + plane2cam_all[:, :, 2:]
        in_front_all = outline_all[:, 2, :] > NEAR_Z_M
        visible = np.ones(len(patches), bool)
        got = outlines_px(patches, visible, outline_all, in_front_all, table, camera._project)
        expected = {i: camera._project(_outline_samples(outline_all[i].T)) for i, patch in enumerate(patches)
                    if patch.polygon is None and in_front_all[i].all() and _within_view(outline_all[i].T, table)}
        assert sorted(got) == sorted(expected)
        for i, pixels in expected.items():
            np.testing.assert_array_equal(got[i], pixels)
        checked += len(expected)
    assert checked >= 3  # the board's markers at least


def test_stacked_constants_are_kept_per_list_of_patches_and_equal_fresh_stacks():
    patches = next(obj for obj in _flagship_camera(350.0, 15.0).objects if obj.board is not None).patches
    first = stacked(patches)
    assert stacked(list(patches)) is first  # the same patches in the same order: kept
    backwards = stacked(patches[::-1])
    assert backwards is not first
    np.testing.assert_array_equal(backwards[0], np.stack([p.plane2body for p in patches[::-1]]))
    np.testing.assert_array_equal(backwards[1], np.stack([np.zeros(3) if p.normal is None else p.normal
                                                          for p in patches[::-1]]))
    np.testing.assert_array_equal(backwards[2], [p.normal is not None for p in patches[::-1]])
    np.testing.assert_array_equal(backwards[3], np.stack([p.outline_plane.T for p in patches[::-1]]))
    assert not any(array.flags.writeable for array in first)


def test_patch_constants_are_the_per_call_formulas():
    for patch in next(obj for obj in _flagship_camera(350.0, 15.0).objects if obj.board is not None).patches:
        np.testing.assert_array_equal(patch.outline_h, np.column_stack([patch.outline_plane, np.ones(4)]))
        assert patch.texel_m == float(np.linalg.norm(patch.outline_plane[3] - patch.outline_plane[0])) / \
            patch.levels[0].shape[0]


def test_points_projected_together_are_the_points_projected_alone():
    """The motion blur projects its two poses' points in one call (``ScenePainter._blur_kernel``)."""
    camera = _flagship_camera(350.0, 15.0)
    points = np.random.default_rng(3).uniform([-0.3, -0.2, 0.1], [0.3, 0.2, 1.5], (50, 3))
    together = camera._project(points)
    for point, pixel in zip(points, together, strict=True):
        np.testing.assert_array_equal(camera._project(point[None]), pixel[None])


def test_one_plan_drawn_on_several_windows_gives_the_whole_images_pixels_in_each():
    camera = _flagship_camera(350.0, 15.0)
    height, width = camera.lens.height, camera.lens.width
    world2cam = np.linalg.inv(camera.cam2world())
    plans = [camera._plan(obj, world2cam, None, (height, width)) for obj in camera.objects if not obj.on_camera]
    assert any(len(plan) >= 3 for plan in plans)  # faces and markers
    whole = np.full((height, width), camera.background_albedo, np.float32)
    for plan in plans:
        camera._draw_plan(whole, plan)
    painted = np.full((height, width), camera.background_albedo, np.float32)
    for obj in camera.objects:
        if not obj.on_camera:
            camera._paint(painted, obj, world2cam)  # planned and drawn in one go
    np.testing.assert_array_equal(painted, whole)
    rng = np.random.default_rng(5)
    for _ in range(12):
        x0, y0 = int(rng.integers(0, width - 40)), int(rng.integers(0, height - 40))
        x1, y1 = x0 + int(rng.integers(1, 300)), y0 + int(rng.integers(1, 300))
        x1, y1 = min(x1, width), min(y1, height)
        canvas = np.full((y1 - y0, x1 - x0), camera.background_albedo, np.float32)
        for plan in plans:
            camera._draw_plan(canvas, plan, (x0, y0, width, height))
        np.testing.assert_array_equal(canvas, whole[y0:y1, x0:x1])
