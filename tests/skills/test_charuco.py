"""ChArUco camera calibration and hand-eye on rendered views: the recovered intrinsics and mount
against the lens and bracket the images were rendered with (numbers, every OpenCV method)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.drivers.sim_camera import SimCamera, default_intrinsics, table_object
from orbitree.drivers.sim_charuco import charuco_object
from orbitree.skills import charuco

SPEC = charuco.CharucoSpec()
TRUE_LENS = CameraIntrinsics(np.array([[906.0, 0.0, 642.5], [0.0, 903.5, 357.0], [0.0, 0.0, 1.0]]),
                             np.array([-0.075, 0.09, 3e-4, -2e-4, -0.02]), 1280, 720)
NOMINAL_MOUNT = np.eye(4)
NOMINAL_MOUNT[:3, 3] = [0.0, -0.08, -0.1]
TRUE_MOUNT = NOMINAL_MOUNT @ np.block([[Rotation.from_euler("xyz", [0.4, -0.3, 0.5], degrees=True).as_matrix(),
                                        np.array([[1.2e-3], [-0.8e-3], [1.5e-3]])], [np.zeros((1, 3)), 1.0]])


def _look(eye, centre, roll_deg):
    z = (centre - eye) / np.linalg.norm(centre - eye)
    x = np.cross([0.0, 0.0, 1.0], z)
    x /= np.linalg.norm(x)
    pose = np.eye(4)
    roll = Rotation.from_euler("z", roll_deg, degrees=True).as_matrix()
    pose[:3, :3] = np.column_stack([x, np.cross(z, x), z]) @ roll
    pose[:3, 3] = eye
    return pose


@pytest.fixture(scope="module")
def views():
    """14 rendered views of a board face up on a table: detections and the TCP poses (exact)."""
    rng = np.random.default_rng(5)
    board2world = np.eye(4)
    board2world[:3, :3] = Rotation.from_euler("x", 180, degrees=True).as_matrix()
    board2world[:3, 3] = [0.5, 0.1, 0.0]
    centre = board2world[:3, :3] @ SPEC.centre + board2world[:3, 3]
    cam = SimCamera("c", default_intrinsics(), true_intrinsics=TRUE_LENS, seed=2)
    cam.add_object(table_object(np.eye(4) + _z(-0.01), rng, 3.0))
    cam.add_object(charuco_object("board", SPEC, board2world))
    detections, tcp2base = [], []
    for i in range(14):
        azimuth, tilt = np.radians(360.0 * i / 14), np.radians(15.0 + 10.0 * (i % 3))
        eye = centre + (0.32 + 0.03 * (i % 4)) * np.array([np.sin(tilt) * np.cos(azimuth),
                                                           np.sin(tilt) * np.sin(azimuth), np.cos(tilt)])
        cam2world = _look(eye, centre, (-1) ** i * (15.0 + 20.0 * (i % 3)))
        cam.set_cam2world(cam2world)
        detections.append(charuco.detect(cam.render(), SPEC))
        tcp2base.append(cam2world @ np.linalg.inv(TRUE_MOUNT))
    return detections, tcp2base


def _z(height):
    out = np.zeros((4, 4))
    out[2, 3] = height
    return out


def test_every_rendered_view_shows_most_corners(views):
    detections, _ = views
    counts = [len(d) for d in detections]
    assert min(counts) >= 18, counts  # of 24 inner corners
    d = detections[0]
    assert d.board_points.shape == (len(d), 3) and np.all(d.board_points[:, 2] == 0.0)


def test_intrinsics_come_back_within_half_a_pixel_of_the_lens_as_built(views):
    detections, _ = views
    result = charuco.calibrate_intrinsics(detections, (1280, 720))
    k, truth = result.camera_matrix, TRUE_LENS.camera_matrix
    assert result.rms_px < 0.1
    assert abs(k[0, 0] - truth[0, 0]) < 0.6 and abs(k[1, 1] - truth[1, 1]) < 0.6  # fx 906, fy 903.5
    assert abs(k[0, 2] - truth[0, 2]) < 0.6 and abs(k[1, 2] - truth[1, 2]) < 0.6  # cx 642.5, cy 357
    assert abs(result.dist_coeffs[0] - TRUE_LENS.dist_coeffs[0]) < 0.005  # k1 -0.075
    nominal = default_intrinsics().camera_matrix  # what the camera reported: 6 px off in fx
    assert abs(k[0, 0] - truth[0, 0]) < abs(nominal[0, 0] - truth[0, 0]) / 10


@pytest.mark.parametrize("method", list(charuco.HAND_EYE_METHODS))
def test_hand_eye_finds_the_true_mount_to_a_fraction_of_a_millimetre(views, method):
    detections, tcp2base = views
    result = charuco.calibrate_intrinsics(detections, (1280, 720))
    arm = [tcp2base[i] for i in result.views]
    mount = charuco.hand_eye(arm, result.board2cam, method)
    mm, deg = charuco.pose_difference(mount, TRUE_MOUNT)
    nominal_mm, nominal_deg = charuco.pose_difference(NOMINAL_MOUNT, TRUE_MOUNT)  # 2.1 mm, 0.71 deg
    assert mm < 0.4e-3 and deg < 0.05, (method, mm * 1e3, deg)
    assert mm < nominal_mm / 5 and deg < nominal_deg / 10
    spread_mm, spread_deg = charuco.hand_eye_spread(arm, result.board2cam, mount, SPEC.centre)
    wrong_mm, _ = charuco.hand_eye_spread(arm, result.board2cam, NOMINAL_MOUNT, SPEC.centre)
    assert spread_mm < 0.2e-3 and spread_deg < 0.05
    assert wrong_mm > 5 * spread_mm  # the spread tells a wrong mount without ground truth


def test_too_few_views_and_unknown_method_are_refused(views):
    detections, tcp2base = views
    with pytest.raises(ValueError, match="at least 4 views"):
        charuco.calibrate_intrinsics(detections[:3], (1280, 720))
    with pytest.raises(ValueError, match="unknown hand-eye method"):
        charuco.hand_eye(tcp2base[:3], tcp2base[:3], "SVD")
