"""Board model and board-pose estimation: exact SIROM geometry, accuracy on rendered images,
occlusion, planar ambiguity. Run with ``pytest -s`` to see the error distributions."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_calibration import CameraErrorModel, perturbed_board
from orbitree.drivers.sim_camera import SensorModel, approach_views, board_scene_camera, random_board_view
from orbitree.skills.board import (
    BoardEstimatorConfig,
    BoardPose,
    BoardTracker,
    estimate_board_pose,
    make_detector,
    solve_board_pose,
)
from orbitree.skills.board_model import (
    SIROM_CORNERS_CM,
    aruco_board_from_corners,
    board_model_from_corners,
    make_aruco_board,
    sirom_board,
    sirom_board_model,
)
from orbitree.skills.se3 import pose_distance

CASES_PER_RANGE = 200


def _look_at_board(distance_m: float, tilt_deg: float = 0.0, spin_deg: float = 0.0) -> np.ndarray:
    """board2cam with the board centred in view, its normal towards the camera."""
    board2cam = np.eye(4)
    facing = Rotation.from_euler("x", 180, degrees=True)  # board +z towards the camera
    tilt = Rotation.from_euler("y", tilt_deg, degrees=True)
    spin = Rotation.from_euler("z", spin_deg, degrees=True)
    board2cam[:3, :3] = (tilt * facing * spin).as_matrix()
    board2cam[:3, 3] = [0.0, 0.0, distance_m]
    return board2cam


def _render(board2cam: np.ndarray, seed: int = 0, hidden: set[int] | None = None) -> tuple:
    model = sirom_board_model()
    cam = board_scene_camera(model, seed=seed, board_name="sirom")
    cam.object("sirom").hidden_marker_ids.update(hidden or set())
    cam.set_cam2world(np.linalg.inv(board2cam))
    return cam.render(), cam


# -- board model -----------------------------------------------------------------------------


def test_sirom_board_uses_the_reference_corner_table_exactly() -> None:
    board = sirom_board()
    assert list(np.ravel(board.getIds())) == [0, 1, 2]
    assert board.getDictionary().markerSize == 7
    for marker_id, obj in zip(np.ravel(board.getIds()), board.getObjPoints(), strict=True):
        expected = (np.array(SIROM_CORNERS_CM[int(marker_id)]) * 0.01).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(obj).reshape(4, 3), expected)


def test_sirom_markers_1_and_2_are_marker_0_turned_by_minus_and_plus_120_deg() -> None:
    """The published table is rounded: agreement to 0.12 mm (marker 2, x of its BL corner:
    -1.88 cm published, -1.869 cm rotated), not better."""
    model = sirom_board_model()
    m0 = model.marker_corners(0)
    for marker_id, angle in ((1, -120.0), (2, 120.0)):
        turned = Rotation.from_euler("z", angle, degrees=True).apply(m0)
        assert np.max(np.abs(turned - model.marker_corners(marker_id))) < 1.2e-4


def test_board_from_corner_table_checks_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(N, 4, 3\)"):
        board_model_from_corners({0: np.zeros((3, 3))}, cv2.aruco.DICT_4X4_50)
    model = board_model_from_corners({5: np.array(SIROM_CORNERS_CM[0])}, cv2.aruco.DICT_4X4_50,
                                     scale=0.01)
    assert model.marker_ids == (5,)
    assert model.marker_side_m == pytest.approx(0.018)
    assert make_aruco_board(model).getIds().ravel().tolist() == [5]


# -- accuracy on rendered images -------------------------------------------------------------


def _predicted(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``truth`` off by what a tracker's prediction is off by: 5 mm and 2 deg (sigma per axis)."""
    error = np.eye(4)
    error[:3, :3] = Rotation.from_rotvec(np.radians(rng.normal(0.0, 2.0, 3))).as_matrix()
    error[:3, 3] = rng.normal(0.0, 5e-3, 3)
    return error @ truth


@pytest.mark.parametrize("estimator", ["estimate_board_pose", "BoardTracker"])
@pytest.mark.parametrize(
    ("label", "distance", "max_dt_m", "max_dr_deg", "min_within", "seed"),
    [
        ("0.15-0.30 m", (0.15, 0.30), 1e-3, 0.5, 0.99, 11),
        ("0.30-0.60 m", (0.30, 0.60), 3e-3, 1.5, 0.95, 22),
    ],
)
def test_pose_accuracy_on_random_rendered_views(
    label: str, distance: tuple[float, float], max_dt_m: float, max_dr_deg: float,
    min_within: float, seed: int, estimator: str,
) -> None:
    """1280x720, fx = fy = 900 px, tilt 0-45 deg, random exposure/gradient/blur/noise. The
    tracker is given each view's true pose off by a prediction's error, so it searches the
    predicted region (the path of a tracked board), and must be as accurate there."""
    model = sirom_board_model()
    board = make_aruco_board(model)
    cam = board_scene_camera(model, seed=seed, board_name="sirom")
    intr = cam.intrinsics
    detector = make_detector(board)
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    rng, prediction_rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    errors = []
    for _ in range(CASES_PER_RANGE):
        cam.set_cam2world(np.linalg.inv(random_board_view(rng, model, intr, distance, 45.0)))
        cam.sensor = SensorModel.sample(rng)
        if estimator == "BoardTracker":
            pose = tracker.update(cam.render(), _predicted(cam.ground_truth_board2cam("sirom"), prediction_rng))
        else:
            pose = estimate_board_pose(cam.render(), intr.camera_matrix, intr.dist_coeffs, board,
                                       detector=detector)
        if pose is None:
            errors.append((np.inf, np.inf))
            continue
        dt, dr = pose_distance(pose.board2cam, cam.ground_truth_board2cam("sirom"))
        errors.append((dt, np.degrees(dr)))
    e = np.array(errors)
    within = np.mean((e[:, 0] <= max_dt_m) & (e[:, 1] <= max_dr_deg))
    print(f"\n{label}: {len(e)} views, within {1e3 * max_dt_m:.0f} mm and {max_dr_deg} deg: "
          f"{100 * within:.1f} %")
    for name, col, unit, scale in (("translation", 0, "mm", 1e3), ("rotation", 1, "deg", 1.0)):
        v = e[:, col] * scale
        print(f"  {name:11s} median {np.median(v):.3f}  p95 {np.percentile(v, 95):.3f}  "
              f"max {v.max():.3f} {unit}")
    assert within >= min_within
    if estimator == "BoardTracker":
        print(f"  tracker searches: {tracker.searches}")
        # the prediction did it mostly, by alignment or in the predicted region (measured: 189 of
        # 200 near, 150 of 200 far, where a 2 deg prediction error moves the board by a third of
        # its image)
        assert tracker.searches["track"] + tracker.searches["roi"] >= 0.7 * CASES_PER_RANGE


def test_tracker_follows_an_approach_as_accurately_as_the_full_search():
    """40 frames of a rendered approach (0.55 m to 0.15 m, the board off-centre and tilted 35
    deg at first): the tracker, given only the frames, follows the board by aligning its markers
    where it predicts them after the first frame (no detection), with the errors of
    estimate_board_pose on every frame."""
    model = sirom_board_model()
    board = make_aruco_board(model)
    cam = board_scene_camera(model, seed=4, board_name="sirom")
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    detector = make_detector(board)
    tracked, full = [], []
    for cam2board in approach_views(40):
        cam.set_cam2world(cam2board)
        image, truth = cam.render(), cam.ground_truth_board2cam("sirom")
        for out, pose in ((tracked, tracker.update(image)), (full, estimate_board_pose(
                image, intr.camera_matrix, intr.dist_coeffs, board, detector=detector))):
            assert pose is not None and pose.marker_ids == (0, 1, 2)
            dt, dr = pose_distance(pose.board2cam, truth)
            out.append((dt, np.degrees(dr)))
    tracked, full = np.array(tracked), np.array(full)
    print(f"\ntracker minus full search, mm: {1e3 * (tracked[:, 0] - full[:, 0]).min():.3f} to "
          f"{1e3 * (tracked[:, 0] - full[:, 0]).max():.3f}")
    print(f"tracker {tracker.searches}; max error tracker {1e3 * tracked[:, 0].max():.3f} mm "
          f"{tracked[:, 1].max():.3f} deg, full search {1e3 * full[:, 0].max():.3f} mm {full[:, 1].max():.3f} deg")
    assert tracker.searches == {"track": 39, "roi": 0, "full": 1}
    assert tracked[:, 0].max() < 0.5e-3 and tracked[:, 1].max() < 0.2  # full search: 0.38 mm, 0.07 deg
    # frame by frame never worse by more than hundredths of a millimetre and a tenth of a degree
    # (measured: at most 0.03 mm worse, up to 0.13 mm better: ECC on markers shrunk to 32 px)
    assert (tracked[:, 0] - full[:, 0]).max() < 0.05e-3
    assert (tracked[:, 1] - full[:, 1]).max() < 0.1
    tracker.reset()
    cam.set_cam2world(approach_views(40)[-1])
    assert tracker.update(cam.render()) is not None and tracker.searches["full"] == 2  # forgot the track


def test_tracker_detects_again_when_the_prediction_is_wrong_or_a_tracked_marker_disappears():
    """Alignment from the prediction is only trusted when every tracked marker correlates with
    its pattern and the pose explains them: a prediction 30 mm off, or a marker hidden since the
    last frame, sends the tracker back to detection, which gives the right pose and markers."""
    model = sirom_board_model()
    board = make_aruco_board(model)
    truth = _look_at_board(0.25, tilt_deg=20.0)
    image, cam = _render(truth, seed=3)
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    assert tracker.update(image).marker_ids == (0, 1, 2) and tracker.searches["full"] == 1
    assert tracker.update(image) is not None and tracker.searches["track"] == 1  # same view: aligned
    off = truth.copy()
    off[:3, 3] += [0.03, 0.0, 0.0]  # 30 mm: ~100 px, far outside ECC's basin
    pose = tracker.update(image, off)
    assert tracker.searches["track"] == 1 and pose is not None
    dt, dr = pose_distance(pose.board2cam, cam.ground_truth_board2cam("sirom"))
    assert dt < 1e-3 and np.degrees(dr) < 0.5
    hidden, _ = _render(truth, seed=3, hidden={1})
    pose = tracker.update(hidden)
    assert tracker.searches["track"] == 1 and pose is not None and pose.marker_ids == (0, 2)
    dt, dr = pose_distance(pose.board2cam, cam.ground_truth_board2cam("sirom"))
    assert dt < 1e-3 and np.degrees(dr) < 0.5


def test_tracker_keeps_aligning_close_in_where_a_misprinted_board_puts_its_error_above_a_pixel():
    """A board as printed (each marker 0.4 mm and 0.3 deg off its drawing, 0.1 % in scale) seen
    from 0.30 to 0.11 m: its markers grow in the image and so does the pipeline's RMS error, past
    1 px (max_marker_rms_px) at close range. The tracker still aligns every frame after the first
    (the limit grows with the markers' side), its error against the truth within 0.1 mm and 0.1
    deg of the full search's (measured: 0.057 mm, 0.039 deg); with the fixed pixel limit alone
    those frames were detected again."""
    nominal = sirom_board_model()
    board = make_aruco_board(nominal)
    errors = CameraErrorModel(0.0, 0.0, 0.0, 0.0, 0.0, 0.001, 0.0004, np.radians(0.3))
    printed = perturbed_board(nominal, errors, np.random.default_rng(1))
    cam = board_scene_camera(printed, seed=4, board_name="sirom")
    intr = cam.intrinsics
    tracker = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    fixed = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs, track_rms_per_side=0.0)
    detector = make_detector(board)
    rms, gaps = [], []
    for cam2board in approach_views(24, start_m=0.30, end_m=0.11, offset_m=(0.0, 0.0), tilt_deg=(10.0, 5.0),
                                    roll_deg=(10.0, 0.0)):
        cam.set_cam2world(cam2board)
        image, truth = cam.render(), cam.ground_truth_board2cam("sirom")
        tracked = tracker.update(image)
        full = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, board, detector=detector)
        assert fixed.update(image) is not None
        assert tracked is not None and full is not None and tracked.marker_ids == full.marker_ids == (0, 1, 2)
        rms.append(tracked.reprojection_error_px)
        (dt, dr), (ft, fr) = pose_distance(tracked.board2cam, truth), pose_distance(full.board2cam, truth)
        gaps.append((abs(dt - ft), abs(np.degrees(dr - fr))))
    gaps = np.array(gaps)
    print(f"\nRMS {min(rms):.2f}-{max(rms):.2f} px; tracker {tracker.searches}, "
          f"fixed 1 px limit {fixed.searches}; error against the full search's at most "
          f"{1e3 * gaps[:, 0].max():.3f} mm {gaps[:, 1].max():.3f} deg")
    assert max(rms) > 1.2  # measured: 0.43-1.35 px
    assert tracker.searches == {"track": 23, "roi": 0, "full": 1}
    assert fixed.searches["track"] <= 20  # the frames past 1 px detected again (measured: 18 aligned)
    assert gaps[:, 0].max() < 0.1e-3 and gaps[:, 1].max() < 0.1


# -- occlusion -------------------------------------------------------------------------------


@pytest.mark.parametrize("hidden_id", [0, 1, 2])
def test_pose_is_found_with_one_marker_occluded(hidden_id: int) -> None:
    truth = _look_at_board(0.25, tilt_deg=20.0, spin_deg=35.0)
    image, cam = _render(truth, seed=hidden_id, hidden={hidden_id})
    intr = cam.intrinsics
    pose = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, sirom_board())
    assert pose is not None
    assert hidden_id not in pose.marker_ids and len(pose.marker_ids) == 2
    assert pose.n_corners == 8
    dt, dr = pose_distance(pose.board2cam, truth)
    assert dt < 1e-3 and np.degrees(dr) < 0.5


def test_all_markers_occluded_gives_none() -> None:
    image, cam = _render(_look_at_board(0.25), hidden={0, 1, 2})
    intr = cam.intrinsics
    assert estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, sirom_board()) is None


def test_image_without_board_gives_none() -> None:
    blank = np.full((720, 1280), 128, np.uint8)
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    assert estimate_board_pose(blank, k, None, sirom_board()) is None


# -- result contents and inputs --------------------------------------------------------------


def test_result_reports_markers_corners_and_small_reprojection_error() -> None:
    truth = _look_at_board(0.2, tilt_deg=10.0)
    image, cam = _render(truth)
    intr = cam.intrinsics
    pose = estimate_board_pose(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), intr.camera_matrix,
                               intr.dist_coeffs, sirom_board())
    assert isinstance(pose, BoardPose)
    assert pose.marker_ids == (0, 1, 2) and pose.n_corners == 12
    assert pose.reprojection_error_px < 0.2
    assert pose.board2cam.shape == (4, 4)
    with pytest.raises(AttributeError):
        pose.n_corners = 3  # type: ignore[misc]  # frozen


def test_bad_camera_matrix_is_rejected_with_the_shape() -> None:
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        estimate_board_pose(np.zeros((10, 10), np.uint8), np.eye(4), None, sirom_board())


def test_straightforward_config_is_selectable() -> None:
    """The comparison's baseline (SQPNP, no ECC) runs through the same function."""
    truth = _look_at_board(0.2, tilt_deg=25.0)
    image, cam = _render(truth)
    intr = cam.intrinsics
    config = BoardEstimatorConfig(corner_refinement="none", recover_missing=False, pnp="sqpnp")
    pose = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, sirom_board(),
                               config=config)
    assert pose is not None and pose.ambiguity_ratio == np.inf  # SQPNP: one solution
    dt, _ = pose_distance(pose.board2cam, truth)
    assert dt < 3e-3


# -- PnP and the planar ambiguity (synthetic corners) ----------------------------------------


def _project(points: np.ndarray, board2cam: np.ndarray, k: np.ndarray) -> np.ndarray:
    cam_pts = points @ board2cam[:3, :3].T + board2cam[:3, 3]
    return (cam_pts[:, :2] / cam_pts[:, 2:3]) * [k[0, 0], k[1, 1]] + [k[0, 2], k[1, 2]]


def test_exact_corners_give_the_exact_pose() -> None:
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    obj = sirom_board_model().corners.reshape(-1, 3)
    truth = _look_at_board(0.3, tilt_deg=30.0, spin_deg=10.0)
    board2cam, rms, _ = solve_board_pose(obj, _project(obj, truth, k), k)
    dt, dr = pose_distance(board2cam, truth)
    assert dt < 1e-9 and dr < 1e-8 and rms < 1e-6


def test_prior_pose_picks_the_branch_of_the_planar_ambiguity() -> None:
    """One marker at 0.4 m, 5 deg off frontal, 0.2 px corner noise: IPPE's two poses fit about
    equally and the lower error alone sometimes picks the mirror pose; given a prior, the
    solution on the prior's side is returned."""
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    obj = sirom_board_model().marker_corners(0)
    truth, mirror = _look_at_board(0.4, tilt_deg=5.0), _look_at_board(0.4, tilt_deg=-5.0)
    rng = np.random.default_rng(3)
    free_picked_mirror = 0
    for _ in range(20):
        img = _project(obj, truth, k) + rng.normal(0, 0.2, (4, 2))
        free, _, _ = solve_board_pose(obj, img, k)
        near_truth, _, _ = solve_board_pose(obj, img, k, prior_board2cam=truth,
                                            ambiguity_ratio=np.inf)
        near_mirror, _, _ = solve_board_pose(obj, img, k, prior_board2cam=mirror,
                                             ambiguity_ratio=np.inf)
        assert pose_distance(near_truth, truth)[1] <= pose_distance(near_mirror, truth)[1]
        assert pose_distance(near_mirror, mirror)[1] <= pose_distance(near_truth, mirror)[1]
        distinct = pose_distance(near_truth, near_mirror)[1] > np.radians(1)
        free_picked_mirror += distinct and np.allclose(free, near_mirror)
    assert free_picked_mirror >= 1


def test_config_rejects_unknown_methods_naming_the_field() -> None:
    with pytest.raises(ValueError, match="corner_refinement"):
        BoardEstimatorConfig(corner_refinement="magic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ambiguity_ratio"):
        BoardEstimatorConfig(ambiguity_ratio=0.5)


def test_generic_board_from_a_corner_table_estimates_like_the_sirom_one() -> None:
    """The SIROM table fed through the generic builder gives the same board."""
    generic = aruco_board_from_corners(SIROM_CORNERS_CM, cv2.aruco.DICT_7X7_50, scale=0.01)
    truth = _look_at_board(0.2, tilt_deg=15.0)
    image, cam = _render(truth)
    intr = cam.intrinsics
    pose = estimate_board_pose(image, intr.camera_matrix, intr.dist_coeffs, generic)
    assert pose is not None
    dt, dr = pose_distance(pose.board2cam, truth)
    assert dt < 1e-3 and np.degrees(dr) < 0.5
