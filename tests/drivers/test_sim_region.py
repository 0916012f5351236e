"""A region of the sim camera's frame rendered alone: its pixels are the whole frame's, bit for bit
(the flagship's scene with motion blur, gamma, stress sensors, image occluders, regions at the image
borders), the frame's noise drawn once as a whole frame draws it, nothing drawn outside."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import (
    ImageOccluder,
    SensorModel,
    SimCamera,
    board_scene_camera,
    default_intrinsics,
)
from orbitree.drivers.sim_coverage import fill_polygons
from orbitree.drivers.sim_region import ALIGN_PX, DFT_TAPS, MERGE_PX, _grown, _merged, exposure_margin
from orbitree.drivers.sim_sensor import line_kernel
from orbitree.runtime.executive import Executive
from orbitree.skills.board_model import sirom_board_model

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"
W, H = 1280, 720


def _flagship_camera(standoff_mm: float) -> SimCamera:
    start = f"robots.arm.start={{target: sirom, offset: {{xyz: [15 mm, -20 mm, {standoff_mm} mm]}}}}"
    return Executive(load_mission(MISSION, [start])).ctx.world.cameras["arm"]


def _motion(pose: np.ndarray, shift_mm: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Exposure start and end poses: the camera moved by ``shift_mm`` across its optical axis."""
    start = pose.copy()
    start[:3, 3] += pose[:3, :3] @ np.array([shift_mm[0] * 1e-3, shift_mm[1] * 1e-3, 0.0])
    return start, pose


def _blur_of(camera: SimCamera, pose: np.ndarray, direction: tuple[float, float], px: float):
    """Exposure poses whose motion blurs the image by about ``px`` pixels along ``direction``."""
    camera._blur_kernel(_motion(pose, direction), {})
    scale = px / camera.last_blur_px
    return _motion(pose, (direction[0] * scale, direction[1] * scale))


def _random_regions(rng: np.random.Generator, n: int, near: np.ndarray | None = None) -> list[tuple[int, ...]]:
    """``n`` boxes (x0, y0, x1, y1): odd and even corners and sizes (1 px to 300 px), some
    reaching past the image's edges, some around the points ``near`` (N, 2)."""
    regions = [(-5, -3, 40, 33), (W - 37, H - 21, W + 9, H + 4), (0, 300, 1, 301), (611, 0, 700, 1)]
    while len(regions) < n:
        if near is not None and rng.random() < 0.6:
            x, y = near[rng.integers(len(near))] + rng.normal(0.0, 25.0, 2)
        else:
            x, y = rng.uniform(-30, W + 10), rng.uniform(-30, H + 10)
        w, h = rng.integers(1, 300, 2)
        regions.append((int(x), int(y), int(x) + int(w), int(y) + int(h)))
    return regions


def _assert_regions_exact(camera: SimCamera, cam2world: np.ndarray, motion, regions) -> int:
    """Each region rendered from the generator state the whole frame started from equals the
    whole frame's crop and is 0 elsewhere; returns the number of region pixels compared."""
    state = camera.imager.rng.bit_generator.state
    whole = camera.render(cam2world, motion)
    after = camera.imager.rng.bit_generator.state
    compared = 0
    for region in regions:
        camera.imager.rng.bit_generator.state = state
        part = camera.render(cam2world, motion, region=region)
        assert camera.imager.rng.bit_generator.state == after  # one draw, as the whole frame's
        x0, y0, x1, y1 = max(region[0], 0), max(region[1], 0), min(region[2], W), min(region[3], H)
        inside = np.zeros((H, W), bool)
        if x0 < x1 and y0 < y1:
            inside[y0:y1, x0:x1] = True
        differing = np.count_nonzero(part[inside] != whole[inside])
        assert differing == 0, f"region {region}: {differing} pixels differ from the whole frame's"
        assert not part[~inside].any()
        compared += int(inside.sum())
    return compared


def _assert_windows_exact(camera: SimCamera, cam2world: np.ndarray, motion, windows) -> np.ndarray:
    """The windows rendered as one region, from the generator state the whole frame started
    from, equal the whole frame inside them and are 0 outside; returns the windows' mask."""
    state = camera.imager.rng.bit_generator.state
    whole = camera.render(cam2world, motion)
    camera.imager.rng.bit_generator.state = state
    part = camera.render(cam2world, motion, region=windows)
    inside = np.zeros((H, W), bool)
    for x0, y0, x1, y1 in windows:
        inside[max(y0, 0):y1, max(x0, 0):x1] = True
    assert np.array_equal(part[inside], whole[inside]) and not part[~inside].any()
    return inside


@pytest.mark.parametrize("standoff_mm", [400, 150, 30])
def test_region_renders_equal_the_whole_frame_in_the_flagship_scene_with_motion_blur_and_gamma(standoff_mm):
    camera = _flagship_camera(standoff_mm)
    assert camera.exposure_s > 0.0
    pose = camera.cam2world()
    corners = np.concatenate(list(camera.project_marker_corners("sirom").values()))
    rng = np.random.default_rng(standoff_mm)
    camera.occluders = [ImageOccluder(np.array([[-40.3, 500.7], [300.1, 610.2], [120.6, 790.9]]), 0.1),
                        ImageOccluder(corners[:3] + 7.3, 0.25)]  # over a marker
    blurs = []
    settings = ((((1.5, -0.7), 3.0), 1.0), (((1.5, -0.7), 3.0), 1.5), (((-5.0, 0.0), 20.0), 0.8))
    for (direction, px), gamma in settings:
        camera.sensor = SensorModel(gamma=gamma)
        motion = _blur_of(camera, pose, direction, px)
        compared = _assert_regions_exact(camera, pose, motion, _random_regions(rng, 14, corners))
        assert compared > 50_000
        blurs.append(camera.last_blur_px)
        assert camera._blur_kernel(motion, {}).size < DFT_TAPS  # the regions' own motion blur
    assert blurs[0] > 1.0 and blurs[2] > 2.0 * blurs[0]  # the motion blur was on, short and long


def test_region_renders_equal_the_whole_frame_under_stress_sensors_long_blurs_and_no_blur():
    # the board scene (the table sampled at half resolution, the markers 4x4 supersampled) with
    # sensors of blur sigma up to 1.5 px (13-tap Gaussian) and motion blurs up to ~60 px (kernels
    # past DFT_TAPS: the frame is rendered whole)
    model = sirom_board_model()
    camera = board_scene_camera(model, board_name="sirom", seed=4)
    camera.object("sirom").hidden_marker_ids.add(model.marker_ids[1])  # an occluder patch instead
    rng = np.random.default_rng(11)
    for view in range(4):
        pose = np.eye(4)
        pose[:3, 3] = [0.01 * view, -0.02, -0.3 - 0.1 * view]
        camera.set_cam2world(pose)
        camera.sensor = SensorModel.sample(rng, stress=view % 2 == 0)
        corners = np.concatenate(list(camera.project_marker_corners("sirom").values()))
        motion = None if view == 0 else _motion(pose, (rng.uniform(-25, 25), rng.uniform(-12, 12)))
        _assert_regions_exact(camera, pose, motion, _random_regions(rng, 10, corners))
        if view == 3:
            assert camera.last_blur_px > 20.0


def test_a_region_render_leaves_the_next_frames_as_they_would_have_been():
    model = sirom_board_model()
    cameras = [board_scene_camera(model, board_name="sirom", seed=9) for _ in range(2)]
    for camera in cameras:
        camera.set_cam2world(np.array([[1, 0, 0, 0.01], [0, 1, 0, 0.0], [0, 0, 1, -0.35], [0, 0, 0, 1.0]]))
    cameras[0].render()
    cameras[1].render(region=[(100, 100, 200, 180), (700, 400, 760, 470), (2000, 0, 2100, 10)])
    cameras[1].render(region=(5000, 5000, 5100, 5100))  # wholly outside: still the frame's draw
    cameras[0].render()
    assert np.array_equal(cameras[0].render(), cameras[1].render())


def test_several_windows_of_one_frame_equal_the_whole_frame_in_each():
    camera = _flagship_camera(150)
    pose = camera.cam2world()
    motion = _motion(pose, (2.0, 1.0))
    windows = []
    for quad in camera.project_marker_corners("sirom").values():
        (x0, y0), (x1, y1) = np.floor(quad.min(axis=0)) - 12, np.ceil(quad.max(axis=0)) + 13
        windows.append((int(x0), int(y0), int(x1), int(y1)))
    inside = _assert_windows_exact(camera, pose, motion, windows)
    assert inside.sum() > 3 * 40 * 40  # the three markers' windows


def test_exposure_margin_is_opencvs_gaussian_kernel_radius_for_float_images():
    # OpenCV: ksize = cvRound(sigma * 8 + 1) | 1 for a float image
    assert [exposure_margin(s) for s in (0.0, 0.5, 0.7, 1.0, 1.5)] == [0, 2, 3, 4, 6]


def test_windowed_face_fill_gives_the_whole_images_pixels_in_the_window():
    rng = np.random.default_rng(8)
    for _ in range(200):
        outlines, albedos = [], []
        for _ in range(rng.integers(1, 5)):
            n = int(rng.integers(3, 8))
            angles = np.sort(rng.uniform(0, 2 * np.pi, n)) if rng.random() < 0.7 else rng.uniform(0, 2 * np.pi, n)
            centre, radius = rng.uniform(-20, [220, 140]), rng.uniform(3, 80)
            outlines.append(centre + np.c_[np.cos(angles), np.sin(angles)] * radius)
            albedos.append(float(rng.random()))
        whole = rng.random((120, 200)).astype(np.float32)
        x0, y0 = int(rng.integers(0, 190)), int(rng.integers(0, 110))
        x1, y1 = int(rng.integers(x0 + 1, 201)), int(rng.integers(y0 + 1, 121))
        window = whole[y0:y1, x0:x1].copy()
        fill_polygons(whole, outlines, albedos)
        fill_polygons(window, outlines, albedos, (x0, y0, 200, 120))  # convex and even-odd paths
        assert np.array_equal(window, whole[y0:y1, x0:x1])


def _recording_exposures(camera: SimCamera) -> list[tuple[np.ndarray, tuple | None]]:
    """The albedo (float32) each exposure of ``camera`` reads, and where it sits in the image."""
    seen: list[tuple[np.ndarray, tuple | None]] = []
    expose = camera.imager.expose

    def recording(albedo, model, lens, origin=None, draw=None):
        seen.append((albedo.copy(), origin))
        return expose(albedo, model, lens, origin, draw)

    camera.imager.expose = recording
    return seen


@pytest.mark.parametrize(("standoff_mm", "blur_px"), [(300, 6.0), (60, 9.0), (150, None)])
def test_the_albedo_a_region_exposes_is_the_whole_frames_to_the_last_bit(standoff_mm, blur_px):
    # the 8-bit image hides a 1-ulp error of the float albedo (it rarely moves a rounding), so
    # the painted scene (patches, faces, motion blur, the tool's layer, occluders) is compared
    # before the sensor, over the whole box the sensor reads
    camera = _flagship_camera(standoff_mm)
    camera.occluders = [ImageOccluder(np.array([[500.3, -20.7], [900.1, 310.2], [610.6, 400.9]]), 0.1)]
    seen = _recording_exposures(camera)
    pose = camera.cam2world()
    motion = None if blur_px is None else _blur_of(camera, pose, (1.5, -0.7), blur_px)
    corners = np.concatenate(list(camera.project_marker_corners("sirom").values()))
    rng = np.random.default_rng(standoff_mm + 1)
    compared = 0
    for region in _random_regions(rng, 30, corners):
        camera.render(pose, motion)
        camera.render(pose, motion, region=region)
        (whole, _), (part, origin) = seen[-2:]
        if origin is None:  # wholly outside, or large enough to be rendered whole
            continue
        x0, y0 = origin
        assert np.array_equal(part, whole[y0:y0 + part.shape[0], x0:x0 + part.shape[1]]), region
        compared += part.size
    assert compared > 400_000


def test_opencvs_blurs_and_weighted_sums_are_exact_on_boxes_whose_columns_are_aligned():
    # SIMD loops and their scalar tails round differently (fused multiply-adds: 1 ulp), so a
    # filter over a box starting at an arbitrary column differs from the whole image's; on
    # boxes cut on ALIGN_PX columns (what the renderer's sensor and motion blur get) it does not
    rng = np.random.default_rng(2)
    image = (rng.random((H, W), dtype=np.float32) * 255).astype(np.float32)
    filters = [lambda a, s=s: cv2.GaussianBlur(a, (0, 0), s) for s in (0.5, 0.7, 1.5)]
    kernels = [line_kernel(np.array(shift)) for shift in ((1.0, 0.3), (6.0, -1.0), (8.0, 7.0), (40.0, 0.0))]
    assert max(kernel.size for kernel in kernels) < DFT_TAPS
    filters += [lambda a, k=k: cv2.filter2D(a, -1, k, borderType=cv2.BORDER_REPLICATE) for k in kernels]
    filters.append(lambda a: cv2.addWeighted(a, 0.04, a, 0.0, 2.25))
    for apply in filters:
        whole = apply(image)
        for _ in range(40):
            x0, y0 = int(rng.integers(0, W - 1)), int(rng.integers(0, H - 1))
            x1, y1 = x0 + int(rng.integers(1, 200)), y0 + int(rng.integers(1, 200))
            reach = 31  # wider than any kernel's half-size above
            bx0, by0, bx1, by1 = _grown((x0, y0, min(x1, W), min(y1, H)), reach, reach, W, H)
            assert bx0 % ALIGN_PX == 0 and (bx1 % ALIGN_PX == 0 or bx1 == W)
            part = apply(image[by0:by1, bx0:bx1].copy())
            assert np.array_equal(part[y0 - by0:y1 - by0, x0 - bx0:x1 - bx0], whole[y0:min(y1, H), x0:min(x1, W)])


def test_patches_painted_on_a_window_of_the_image_are_the_whole_images_pixels():
    # the markers' 4x4 samples and the table's 2x2 blocks computed on a part of their pixel box
    # (sim_region.sub_box) against the whole image's canvas, windows cutting through the markers
    camera = board_scene_camera(sirom_board_model(), board_name="sirom")
    pose = np.eye(4)
    pose[:3, 3] = [0.01, -0.02, -0.25]
    world2cam = np.linalg.inv(pose)
    whole = np.full((H, W), 0.3, np.float32)
    for obj in camera.objects:
        camera._paint(whole, obj, world2cam)
    corners = np.concatenate(list(camera.project_marker_corners("sirom").values()))
    rng = np.random.default_rng(0)
    for _ in range(150):
        x0, y0 = (corners.min(axis=0) + rng.uniform(-20, corners.max(axis=0) - corners.min(axis=0))).astype(int)
        w, h = (int(v) for v in rng.integers(1, 100, 2))
        canvas = np.full((h, w), 0.3, np.float32)
        for obj in camera.objects:
            camera._paint(canvas, obj, world2cam, None, (int(x0), int(y0), W, H))
        assert np.array_equal(canvas, whole[y0:y0 + h, x0:x0 + w]), (x0, y0, w, h)


def test_windows_close_together_are_rendered_as_one_box_and_far_ones_apart_all_exact():
    near = [((0, 0, 128, 100), ["a"]), ((128, 0, 256, 100), ["b"]), ((64, 100, 192, 200), ["c"])]
    (box, served), = _merged(near)  # the bounding box adds 128 * 100 px: merged
    assert box == (0, 0, 256, 200) and sorted(served) == ["a", "b", "c"]
    far = [((0, 0, 64, 64), ["a"]), ((1216, 656, 1280, 720), ["b"])]
    assert MERGE_PX < (1280 * 720 - 2 * 64 * 64) and len(_merged(far)) == 2
    camera = _flagship_camera(250)
    pose = camera.cam2world()
    motion = _blur_of(camera, pose, (1.0, 0.5), 4.0)
    corners = np.concatenate(list(camera.project_marker_corners("sirom").values()))
    x, y = corners.mean(axis=0).astype(int)
    windows = [(x - 60, y - 40, x - 5, y + 10), (x, y - 40, x + 50, y + 3), (x - 30, y + 20, x + 40, y + 70),
               (2, 3, 70, 60), (1200, 650, 1280, 720)]
    _assert_windows_exact(camera, pose, motion, windows)


@pytest.mark.parametrize(("width", "height", "alone"), [(640, 480, True), (1000, 600, False)])
def test_other_image_sizes_render_regions_exactly_alone_when_their_width_is_on_the_lanes(width, height, alone):
    # a width no multiple of ALIGN_PX puts OpenCV's SIMD lanes across the image's rows: rendered whole
    camera = board_scene_camera(sirom_board_model(), board_name="sirom",
                                intrinsics=default_intrinsics(width, height, 600.0))
    pose = np.eye(4)
    pose[:3, 3] = [0.01, -0.02, -0.3]
    seen = _recording_exposures(camera)
    rng = np.random.default_rng(width)
    for sensor in (SensorModel(), SensorModel(blur_sigma_px=0.0, gamma=1.3)):
        camera.sensor = sensor
        motion = _blur_of(camera, pose, (1.0, 0.3), 5.0)
        state = camera.imager.rng.bit_generator.state
        whole = camera.render(pose, motion)
        for _ in range(12):
            x0, y0 = int(rng.integers(0, width - 1)), int(rng.integers(0, height - 1))
            x1, y1 = min(width, x0 + int(rng.integers(1, 200))), min(height, y0 + int(rng.integers(1, 150)))
            camera.imager.rng.bit_generator.state = state
            part = camera.render(pose, motion, region=(x0, y0, x1, y1))
            assert np.array_equal(part[y0:y1, x0:x1], whole[y0:y1, x0:x1])
            assert (seen[-1][1] is not None) == alone  # rendered alone, or whole


def test_a_face_crossed_more_than_twice_only_outside_a_window_is_filled_there_by_the_compiled_loops():
    from orbitree.drivers.sim_coverage import _fill_convex
    # a U: its rows 10-60 crossed four times, its rows 60-90 twice
    u_shape = np.array([[10, 10], [30, 10], [30, 60], [70, 60], [70, 10], [90, 10], [90, 90], [10, 90]]) + 0.3
    whole = np.random.default_rng(2).random((100, 100)).astype(np.float32)
    x0, y0, x1, y1 = 5, 70, 95, 97
    window = whole[y0:y1, x0:x1].copy()
    fill_polygons(whole, [u_shape], [0.25])  # the whole image: the even-odd path
    assert _fill_convex(window, u_shape, np.array([8]), np.array([0.25], np.float32), 0, x0, y0, 100, 100) == 1
    assert np.array_equal(window, whole[y0:y1, x0:x1])
    above = whole[20:50, x0:x1].copy()  # rows crossed four times: left to the even-odd path
    assert _fill_convex(above, u_shape, np.array([8]), np.array([0.25], np.float32), 0, x0, 20, 100, 100) == 0
