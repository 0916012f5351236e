"""BoardTracker's speed-ups keep its answers: the whole image's undistortion maps sliced for ECC's
windows, ECC started from ideal corners, and the coarse-to-fine search when there is no prediction
(the board lost, the first frame). Run with ``pytest -s`` to see the figures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import orbitree.skills.board_tracker as tracker_module
from orbitree.drivers.sim_camera import SensorModel, approach_views, board_scene_camera, random_board_view
from orbitree.skills.board import TRACKER_CONFIG, BoardTracker, estimate_board_pose, make_detector
from orbitree.skills.board_model import make_aruco_board, sirom_board_model
from orbitree.skills.marker_refine import (
    _undistorted_roi,
    ecc_source_boxes,
    refine_ecc,
    to_gray,
    undistort_corners,
    undistortion_maps,
)
from orbitree.skills.se3 import pose_distance


def _scene(seed: int):
    model = sirom_board_model()
    cam = board_scene_camera(model, seed=seed, board_name="sirom")
    return model, make_aruco_board(model), cam


def test_sliced_undistortion_maps_give_exactly_the_windows_computed_one_by_one():
    """A window cut from the whole image's maps resamples exactly the pixels the window's own
    maps (initUndistortRectifyMap with the principal point shifted) do; outside the image the
    window's own maps are used."""
    _, _, cam = _scene(4)
    intr = cam.intrinsics
    cam.set_cam2world(approach_views(10)[5])
    gray = to_gray(cam.render())
    maps = undistortion_maps(intr.camera_matrix, intr.dist_coeffs, (gray.shape[1], gray.shape[0]))
    assert maps[0].shape == gray.shape and maps[0].dtype == np.float32
    rng = np.random.default_rng(0)
    for _ in range(60):
        w, h = rng.integers(20, 200, 2)
        x0, y0 = rng.integers(-30, gray.shape[1] - w + 30), rng.integers(-30, gray.shape[0] - h + 30)
        own = _undistorted_roi(gray, intr.camera_matrix, intr.dist_coeffs, int(x0), int(y0), int(w), int(h))
        cut = _undistorted_roi(gray, intr.camera_matrix, intr.dist_coeffs, int(x0), int(y0), int(w), int(h), maps)
        assert cut.shape == (h, w) and np.array_equal(own, cut)
    assert undistortion_maps(intr.camera_matrix, None, (640, 480)) is None  # nothing to undo


def test_ecc_from_ideal_corners_with_the_shared_maps_refines_exactly_as_from_detected_corners():
    """The tracker starts ECC from corners already in ideal pixels and with the image's maps:
    the refined corners are those of the usual call on the distorted corners."""
    _, board, cam = _scene(4)
    intr = cam.intrinsics
    cam.set_cam2world(approach_views(10)[3])
    gray = to_gray(cam.render())
    corners, ids, _ = make_detector(board).detectMarkers(gray)
    quads = [np.asarray(c, np.float64).reshape(4, 2) for c in corners]
    ids = np.asarray(ids).ravel().tolist()
    assert sorted(ids) == [0, 1, 2]
    maps = undistortion_maps(intr.camera_matrix, intr.dist_coeffs, (gray.shape[1], gray.shape[0]))
    kwargs = {"max_side_px": 32.0, "coarse_first": False, "eps": 1e-3}
    usual = refine_ecc(gray, quads, ids, board.getDictionary(), intr.camera_matrix, intr.dist_coeffs, **kwargs)
    ideal = [undistort_corners(q, intr.camera_matrix, intr.dist_coeffs) for q in quads]
    fast = refine_ecc(gray, ideal, ids, board.getDictionary(), intr.camera_matrix, intr.dist_coeffs,
                      ideal_corners=True, undistort_maps=maps, **kwargs)
    moved = max(float(np.abs(a - q).max()) for a, q in zip(usual, ideal, strict=True))
    assert moved > 0.05  # ECC did move the corners: the comparison below means something
    assert max(float(np.abs(a - b).max()) for a, b in zip(usual, fast, strict=True)) < 1e-4


@pytest.mark.parametrize("stress", [False, True], ids=["nominal", "stress"])
def test_coarse_search_finds_the_board_in_every_view_the_full_search_finds(stress: bool):
    """Without a prediction (reset: the board lost) the tracker searches the image halved, then
    the board's region at full size: over random views at 0.15-0.60 m (the accuracy tests'
    ranges; nominal and stress sensor conditions) it finds the board exactly where
    estimate_board_pose does, with the same markers, the errors within about a tenth of a mm (the
    detected corners ECC starts from differ a little)."""
    model, board, cam = _scene(31 if stress else 30)
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    detector = make_detector(board, TRACKER_CONFIG)
    rng = np.random.default_rng(7 if stress else 6)
    found = 0
    worst = 0.0
    for distance in [(0.15, 0.30)] * 12 + [(0.30, 0.60)] * 28:
        cam.set_cam2world(np.linalg.inv(random_board_view(rng, model, intr, distance, 45.0)))
        cam.sensor = SensorModel.sample(rng, stress=stress)
        image, truth = cam.render(), cam.ground_truth_board2cam("sirom")
        full = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, board,
                                   config=TRACKER_CONFIG, detector=detector)
        tracker.reset()
        coarse = tracker.update(image)
        assert (coarse is None) == (full is None)
        if full is None:
            continue
        found += 1
        assert coarse.marker_ids == full.marker_ids
        dt_coarse, dt_full = pose_distance(coarse.board2cam, truth)[0], pose_distance(full.board2cam, truth)[0]
        worst = max(worst, abs(dt_coarse - dt_full))
    print(f"\n{found} of 40 views found by both; largest difference in translation error {1e3 * worst:.4f} mm")
    # measured (sensor noise from the camera's noise table): 0.118 mm nominal, in one view at 0.54 m
    # (0.187 against 0.069 mm; the tracker's far errors reach p95 0.14, max 0.35 mm), 0.005 mm stress
    assert found >= 36 and worst < 0.15e-3


def test_coarse_search_finds_the_board_at_the_smallest_marker_size_the_full_search_finds():
    """The board facing the camera and moved away step by step: the coarse search (the image
    halved, where the farthest markers are too small to decode and are only found as rejected
    quads, read again at full size) finds it at every distance the full search does."""
    model, board, cam = _scene(5)
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    detector = make_detector(board, TRACKER_CONFIG)
    farthest, side_px = None, None
    for distance in np.arange(0.5, 1.6, 0.1):
        board2cam = np.eye(4)
        board2cam[:3, :3] = (Rotation.from_euler("y", 20, degrees=True)
                             * Rotation.from_euler("x", 180, degrees=True)).as_matrix()
        board2cam[:3, 3] = [0.02, -0.01, distance]
        cam.set_cam2world(np.linalg.inv(board2cam))
        image = cam.render()
        full = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, board,
                                   config=TRACKER_CONFIG, detector=detector)
        tracker.reset()
        coarse = tracker.update(image)
        if full is None:
            break
        assert coarse is not None and coarse.marker_ids == full.marker_ids, f"at {distance:.2f} m"
        farthest = distance
        side_px = intr.camera_matrix[0, 0] * model.marker_side_m / distance
    print(f"\nfull search to {farthest:.2f} m (markers {side_px:.1f} px wide): coarse search too")
    assert farthest is not None and farthest >= 0.8  # measured: 0.9 m, markers of 18 px


def test_lost_board_is_searched_without_the_full_size_whole_image_detection(monkeypatch):
    """A frame without the board (the camera turned away from it, only the textured plate and
    the table in view) after the track is lost: None, found by looking at full size only
    around marker-like quads of the halved image, never by the full-size whole-image search."""
    _, board, cam = _scene(4)
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    cam2board = approach_views(10)[0].copy()
    cam.set_cam2world(cam2board)
    assert tracker.update(cam.render()) is not None
    cam2board[:3, :3] = cam2board[:3, :3] @ Rotation.from_euler("y", 50, degrees=True).as_matrix()
    cam.set_cam2world(cam2board)
    away = cam.render()
    whole_image = []
    real = tracker_module.detect_board_markers
    monkeypatch.setattr(tracker_module, "detect_board_markers",
                        lambda *args, **kwargs: whole_image.append(1) or real(*args, **kwargs))
    assert tracker.update(away) is None  # lost: the prediction's searches, then the whole image
    assert tracker.update(away) is None and tracker.update(away) is None  # no prediction: coarse
    assert len(whole_image) == 1  # only the first miss, which still had a prediction
    assert tracker.searches["full"] == 4


@pytest.mark.parametrize("distorted", [True, False], ids=["distorted", "pinhole"])
def test_ecc_reads_nothing_outside_the_source_boxes_it_names(distorted: bool):
    """``ecc_source_boxes`` names every pixel ECC's windows read: aligned on an image that is 0
    outside those boxes, the markers' corners and correlations are the whole image's to the bit
    (corners predicted off by up to 1.5 px, markers near the image's edge included); a window
    reaching outside the image's maps asks for the whole image (None)."""
    _, board, cam = _scene(6)
    intr = cam.intrinsics
    dist = intr.dist_coeffs if distorted else None
    if not distorted:
        cam.true_intrinsics = type(intr)(intr.camera_matrix, np.zeros(5), intr.width, intr.height)
    maps = undistortion_maps(intr.camera_matrix, dist, (intr.width, intr.height))
    rng = np.random.default_rng(2)
    compared = 0
    for view in approach_views(8, offset_m=(0.16, -0.09)):
        cam.set_cam2world(view)
        gray = to_gray(cam.render())
        truth = cam.project_marker_corners("sirom")
        ids = sorted(truth)
        quads = [truth[i] for i in ids]
        ideal = np.array([undistort_corners(q, intr.camera_matrix, dist) if distorted else q for q in quads])
        ideal = ideal + rng.uniform(-1.5, 1.5, ideal.shape)
        boxes = ecc_source_boxes(ideal, gray.shape, dist, maps)
        if boxes is None:
            continue
        masked = np.zeros_like(gray)
        for x0, y0, x1, y1 in boxes:
            masked[y0:y1, x0:x1] = gray[y0:y1, x0:x1]
        kwargs = {"max_side_px": 48.0, "coarse_first": False, "ideal_corners": True, "undistort_maps": maps}
        rho_a, rho_b = [], []
        args = (ids, board.getDictionary(), intr.camera_matrix, dist)
        a = refine_ecc(gray, ideal, *args, correlations=rho_a, **kwargs)
        b = refine_ecc(masked, ideal, *args, correlations=rho_b, **kwargs)
        assert rho_a == rho_b and all(np.array_equal(p, q) for p, q in zip(a, b, strict=True))
        assert sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes) < 0.5 * gray.size
        compared += 1
    assert compared >= 6
    if distorted:
        off_image = np.array([[[-30.0, 10.0], [20.0, 10.0], [20.0, 60.0], [-30.0, 60.0]]])
        assert ecc_source_boxes(off_image, gray.shape, dist, maps) is None
