"""Simulated camera: geometry of the render, photometry, determinism, clock, protocol."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import Camera, Frame
from orbitree.drivers.sim_camera import (
    ImageOccluder,
    SceneObject,
    SensorModel,
    SimCamera,
    board_scene_camera,
    default_intrinsics,
    random_board_view,
)
from orbitree.drivers.sim_render import RayTable, premultiplied, rect_patch, render_patch, undistorted_rays
from orbitree.skills.board_model import sirom_board_model

IDEAL = SensorModel(exposure=1.0, gradient=(0.0, 0.0), vignetting=0.0, blur_sigma_px=0.0,
                    read_noise_dn=0.0, shot_noise_gain=0.0)


def _board_view(distance: float, tilt_deg: float, spin_deg: float) -> np.ndarray:
    board2cam = np.eye(4)
    rot = (Rotation.from_euler("y", tilt_deg, degrees=True)
           * Rotation.from_euler("x", 180, degrees=True)
           * Rotation.from_euler("z", spin_deg, degrees=True))
    board2cam[:3, :3] = rot.as_matrix()
    board2cam[:3, 3] = [0.01, -0.005, distance]
    return board2cam


def test_sim_camera_implements_the_camera_protocol() -> None:
    cam = SimCamera("wrist_cam")
    assert isinstance(cam, Camera)
    cam.setup()
    frame = cam.read()
    assert isinstance(frame, Frame)
    assert frame.image.shape == (720, 1280) and frame.image.dtype == np.uint8
    cam.shutdown()
    cam.shutdown()


def test_default_intrinsics_are_900px_centred_with_mild_distortion() -> None:
    intr = default_intrinsics()
    assert (intr.width, intr.height) == (1280, 720)
    np.testing.assert_allclose(intr.camera_matrix[[0, 1, 0, 1], [0, 1, 2, 2]],
                               [900, 900, 639.5, 359.5])
    corner = np.array([[[0.0, 0.0]]])
    shift = np.linalg.norm(cv2.undistortPoints(corner, intr.camera_matrix, intr.dist_coeffs,
                                               P=intr.camera_matrix) - corner)
    # Brown–Conrady by hand, coefficients in OpenCV's order (k1, k2, p1, p2, k3): distorting the
    # ideal ray of the corner lands on the corner pixel; barrel (k1 < 0) pulls it inward, here
    # by 7.4 px at the corner
    k1, k2, p1, p2, k3 = intr.dist_coeffs
    x, y = cv2.undistortPoints(corner, intr.camera_matrix, intr.dist_coeffs).reshape(2)
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2**2 + k3 * r2**3
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    np.testing.assert_allclose([900 * xd + 639.5, 900 * yd + 359.5], [0.0, 0.0], atol=1e-3)
    assert radial < 1.0 and np.hypot(900 * x, 900 * y) > np.hypot(639.5, 359.5)
    assert shift == pytest.approx(np.hypot(900 * x + 639.5, 900 * y + 359.5), abs=1e-6)
    # and it is the model the renderer projects with: distorting the undistorted corner gives
    # the corner pixel back
    ray = cv2.undistortPoints(corner, intr.camera_matrix, intr.dist_coeffs).reshape(1, 2)
    back, _ = cv2.projectPoints(np.array([[ray[0, 0], ray[0, 1], 1.0]]), np.zeros(3), np.zeros(3),
                                intr.camera_matrix, intr.dist_coeffs)
    np.testing.assert_allclose(back.reshape(2), [0.0, 0.0], atol=0.05)


def test_rendered_marker_corners_sit_at_their_projected_pixels() -> None:
    """Noise-free, blur-free render: every detected corner within 0.5 px of the projection of
    the model corner (the detector itself accounts for most of the residual)."""
    model = sirom_board_model()
    cam = board_scene_camera(model, sensor=IDEAL, board_name="sirom")
    cam.set_cam2world(np.linalg.inv(_board_view(0.22, 25.0, 40.0)))
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    corners, ids, _ = cv2.aruco.ArucoDetector(model.dictionary, params).detectMarkers(cam.render())
    truth = cam.project_marker_corners("sirom")
    assert sorted(ids.ravel().tolist()) == [0, 1, 2]
    worst = max(np.max(np.linalg.norm(c.reshape(4, 2) - truth[int(i)], axis=1))
                for c, i in zip(corners, ids.ravel(), strict=True))
    print(f"\nworst corner offset {worst:.3f} px")
    assert worst < 0.5


@pytest.mark.parametrize(("size", "focal_px", "dist"), [
    ((1280, 720), 900.0, (-0.06, 0.08, 4e-4, -3e-4, -0.02)),  # the default lens
    ((1280, 720), 880.0, (-0.25, 0.10, 1e-3, -1e-3, -0.03)),  # strong barrel
    ((640, 480), 500.0, (0.12, -0.05, -5e-4, 8e-4, 0.01)),  # pincushion, another size
], ids=["default", "barrel", "pincushion"])
def test_ray_table_from_a_grid_matches_undistorting_every_pixel(size, focal_px, dist) -> None:
    """The rays interpolated from the exactly undistorted 8-px grid agree with undistorting every
    pixel to 2e-4 px (5e-7 px for the default lens, 1.5e-4 px in the strong barrel's corners);
    the float32 table holds them to its resolution (~5e-5 px)."""
    intr = default_intrinsics(*size, focal_px, dist)
    args = (intr.camera_matrix, intr.dist_coeffs, intr.width, intr.height)
    exact = undistorted_rays(*args, grid_px=None, dtype=np.float64)
    assert focal_px * np.abs(undistorted_rays(*args, dtype=np.float64) - exact).max() < 2e-4
    table = RayTable(*args)
    assert table.rays.shape == exact.shape == (size[1], size[0], 2) and table.rays.dtype == np.float32
    assert focal_px * np.abs(table.rays - exact).max() < 2e-4 + focal_px * np.spacing(np.float32(1.0))
    # the extremes, taken from the columns' and rows' ranges, are the whole table's to the bit
    assert table.rays_min.dtype == table.rays_max.dtype == np.float64
    assert np.array_equal(table.rays_min, table.rays.reshape(-1, 2).min(axis=0).astype(np.float64))
    assert np.array_equal(table.rays_max, table.rays.reshape(-1, 2).max(axis=0).astype(np.float64))


@pytest.mark.parametrize("distance", [0.15, 0.3, 0.6])
def test_rendered_patch_area_and_centroid_match_the_distorted_projection(distance: float) -> None:
    """A white square on black through the default (distorted) lens: the summed intensity is
    the projected area and its centroid the projected centroid, to 0.2 % and 0.03 px."""
    intr = default_intrinsics()
    table = RayTable(intr.camera_matrix, intr.dist_coeffs, intr.width, intr.height)

    def project(points: np.ndarray) -> np.ndarray:
        px, _ = cv2.projectPoints(points, np.zeros(3), np.zeros(3), intr.camera_matrix,
                                  intr.dist_coeffs)
        return px.reshape(-1, 2)

    patch = rect_patch(premultiplied(np.ones((512, 512))), 0.02, 0.02, np.eye(4), 4)
    board2cam = _board_view(distance, 30.0, 15.0)
    board2cam[:3, 3] = [0.09 * distance, 0.05 * distance, distance]  # off-centre: distortion
    canvas = np.zeros((intr.height, intr.width), np.float32)
    render_patch(canvas, patch, board2cam, table, project)
    outline = patch.outline_body()
    dense = np.concatenate([a + np.linspace(0, 1, 400, endpoint=False)[:, None] * (b - a)
                            for a, b in zip(outline, np.roll(outline, -1, axis=0), strict=True)])
    poly = project(dense @ board2cam[:3, :3].T + board2cam[:3, 3])
    moments = cv2.moments(poly.astype(np.float32))
    ys, xs = np.mgrid[0 : intr.height, 0 : intr.width]
    mass = canvas.sum()
    centroid = np.array([(canvas * xs).sum(), (canvas * ys).sum()]) / mass
    expected = np.array([moments["m10"], moments["m01"]]) / moments["m00"]
    assert mass == pytest.approx(moments["m00"], rel=2e-3)
    assert np.linalg.norm(centroid - expected) < 0.03


def test_same_seed_same_images_other_seed_other_noise() -> None:
    model = sirom_board_model()
    view = np.linalg.inv(_board_view(0.3, 10.0, 0.0))
    images = []
    for seed in (4, 4, 5):
        cam = board_scene_camera(model, seed=seed)
        cam.set_cam2world(view)
        images.append([cam.render(), cam.render()])
    np.testing.assert_array_equal(images[0][0], images[1][0])
    np.testing.assert_array_equal(images[0][1], images[1][1])
    assert not np.array_equal(images[0][0], images[0][1])  # fresh noise every frame
    assert not np.array_equal(images[0][0], images[2][0])


def test_noise_follows_the_read_plus_shot_model() -> None:
    sensor = SensorModel(gradient=(0.0, 0.0), vignetting=0.0, blur_sigma_px=0.0,
                         read_noise_dn=2.0, shot_noise_gain=0.05)
    cam = SimCamera(sensor=sensor, background_albedo=0.5, seed=1)
    image = cam.render().astype(np.float64)
    assert image.mean() == pytest.approx(127.5, abs=0.3)
    assert image.std() == pytest.approx(np.sqrt(2.0**2 + 0.05 * 127.5), rel=0.05)


def test_noise_is_signal_dependent_white_and_fresh_each_frame() -> None:
    """Two flat patches (albedo 0.2 and 0.9, a dark occluder over the left half): in each, over
    three frames, the mean is the signal and the standard deviation the read-plus-shot model's
    (within 3 %), neighbouring pixels' noise is uncorrelated (|r| < 0.01 across and down), and
    a pixel's noise in consecutive frames too (the draws come from a table read at an offset)."""
    sensor = SensorModel(gradient=(0.0, 0.0), vignetting=0.0, blur_sigma_px=0.0,
                         read_noise_dn=1.5, shot_noise_gain=0.04)
    cam = SimCamera(sensor=sensor, background_albedo=0.9, seed=3)
    w, h = cam.lens.width, cam.lens.height
    cam.occluders.append(ImageOccluder(np.array([[-1.0, -1.0], [w / 2 - 0.5, -1.0], [w / 2 - 0.5, h],
                                                 [-1.0, h]]), albedo=0.2))
    frames = [cam.render().astype(np.float64) for _ in range(3)]
    for albedo, cols in ((0.2, slice(2, w // 2 - 2)), (0.9, slice(w // 2 + 2, w - 2))):
        signal = 255.0 * albedo
        noise = np.stack([f[:, cols] for f in frames]) - signal
        assert noise.mean() == pytest.approx(0.0, abs=0.02)
        assert noise.std() == pytest.approx(np.sqrt(1.5**2 + 0.04 * signal), rel=0.03)
        unit = noise / noise.std()
        for a, b in ((unit[:, :, 1:], unit[:, :, :-1]), (unit[:, 1:], unit[:, :-1]), (unit[1:], unit[:-1])):
            assert abs(np.mean(a * b)) < 0.01


def test_frames_carry_the_clock_time_and_no_ground_truth() -> None:
    now = [0.0]
    cam = SimCamera(clock=lambda: now[0], frame_rate_hz=10.0)
    cam.setup()
    first = cam.read()
    assert first is not None and first.stamp == 0.0
    now[0] = 0.05
    assert cam.read() is None  # next frame is due at 0.1 s
    now[0] = 0.1
    second = cam.read()
    assert second is not None and second.stamp == pytest.approx(0.1)
    assert set(second.meta) == {"camera", "frame"} and second.meta["frame"] == 2


def test_step_sets_the_stamp_without_a_clock() -> None:
    cam = SimCamera()
    cam.step(2.5)
    frame = cam.read()
    assert frame is not None and frame.stamp == 2.5


def test_camera_pose_can_come_from_a_callable() -> None:
    model = sirom_board_model()
    cam = board_scene_camera(model, board_name="sirom")
    board2cam = _board_view(0.25, 5.0, 0.0)
    cam.set_cam2world(lambda: np.linalg.inv(board2cam))
    np.testing.assert_allclose(cam.ground_truth_board2cam("sirom"), board2cam, atol=1e-12)


def test_hidden_markers_and_image_occluders_remove_detections() -> None:
    model = sirom_board_model()
    cam = board_scene_camera(model, board_name="sirom")
    cam.set_cam2world(np.linalg.inv(_board_view(0.25, 0.0, 0.0)))
    detector = cv2.aruco.ArucoDetector(model.dictionary, cv2.aruco.DetectorParameters())
    cam.object("sirom").hidden_marker_ids.add(1)
    _, ids, _ = detector.detectMarkers(cam.render())
    assert sorted(ids.ravel().tolist()) == [0, 2]
    quad = cam.project_marker_corners("sirom")[0]
    centre = quad.mean(axis=0)
    cam.occluders.append(ImageOccluder((quad - centre) * 1.3 + centre, albedo=0.3))
    _, ids, _ = detector.detectMarkers(cam.render())
    assert ids.ravel().tolist() == [2]


def test_table_behind_the_camera_plane_renders_without_artefacts() -> None:
    """A camera looking at the horizon of a large plane: only the visible half is drawn."""
    cam = SimCamera(sensor=IDEAL, background_albedo=0.0)
    plane = SceneObject("plane", [rect_patch(np.full((64, 64), 0.8, np.float32), 50.0, 50.0,
                                             np.eye(4), 1)], np.eye(4))
    cam.add_object(plane)
    cam2world = np.eye(4)
    cam2world[:3, :3] = Rotation.from_euler("x", -90, degrees=True).as_matrix()  # look along +y
    cam2world[:3, 3] = [0.0, 0.0, 0.5]  # 0.5 m above the plane
    cam.set_cam2world(cam2world)
    image = cam.render()
    rows = image.mean(axis=1)
    assert rows[:300].max() < 1.0  # sky above the horizon (row 359.5)
    assert rows[420:].min() > 180  # plane below


def test_random_views_keep_the_whole_board_in_the_image() -> None:
    model = sirom_board_model()
    intr = default_intrinsics()
    rng = np.random.default_rng(0)
    for _ in range(50):
        board2cam = random_board_view(rng, model, intr, (0.15, 0.3), 45.0)
        pts = model.corners.reshape(-1, 3) @ board2cam[:3, :3].T + board2cam[:3, 3]
        px, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), intr.camera_matrix,
                                  intr.dist_coeffs)
        assert np.all(px >= 0) and np.all(px.reshape(-1, 2) < [intr.width, intr.height])
        normal_to_camera = -board2cam[:3, 3] / np.linalg.norm(board2cam[:3, 3])
        assert np.degrees(np.arccos(board2cam[:3, 2] @ normal_to_camera)) <= 45.0 + 1e-9
