"""The sim camera's compiled projection (``sim_project.project_points``) gives ``cv2.projectPoints``'s
pixels bit for bit, on the flagship's lens and random five-coefficient lenses, and hands other lenses
to OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import orbitree.drivers.sim_project as sim_project
from orbitree.drivers.sim_camera import DEFAULT_DISTORTION, SimCamera
from orbitree.drivers.sim_project import _lens, matches_opencv, project_points


def _opencv(points: np.ndarray, camera_matrix: np.ndarray, dist: np.ndarray) -> np.ndarray:
    return cv2.projectPoints(points, np.zeros(3), np.zeros(3), camera_matrix, dist)[0].reshape(-1, 2)


def _points(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    points = rng.normal(0.0, scale, (n, 3))
    points[:, 2] = np.abs(points[:, 2]) + 0.01
    points[:5, 2] = 0.0  # OpenCV's z == 0 case (1 / z taken as 1)
    points[5:10, 0] = -0.0  # signed zeros through the identity rotation's product
    points[10:15, 2] *= -1.0  # behind the camera
    return points


def test_flagship_lens_projects_as_opencv_bit_for_bit():
    lens = SimCamera().lens
    assert len(np.ravel(lens.dist_coeffs)) == len(DEFAULT_DISTORTION) == 5
    assert _lens(lens.camera_matrix, lens.dist_coeffs) is not None  # the compiled path
    rng = np.random.default_rng(1)
    for scale in (0.05, 0.5, 2.0):  # within the view, around its edges, far beyond
        points = _points(rng, 20_000, scale)
        np.testing.assert_array_equal(project_points(points, lens.camera_matrix, lens.dist_coeffs),
                                      _opencv(points, lens.camera_matrix, lens.dist_coeffs))


@pytest.mark.parametrize("seed", range(6))
def test_random_five_coefficient_lenses_project_as_opencv_bit_for_bit(seed):
    rng = np.random.default_rng(100 + seed)
    camera_matrix = np.array([[rng.uniform(300, 2000), 0.0, rng.uniform(200, 900)],
                              [0.0, rng.uniform(300, 2000), rng.uniform(200, 700)], [0.0, 0.0, 1.0]])
    dist = rng.normal(0.0, [0.3, 0.2, 0.01, 0.01, 0.1])[: 4 + seed % 2]  # four or five coefficients
    points = _points(rng, 10_000, 1.0)
    got = project_points(points, camera_matrix, dist)
    assert got.dtype == np.float64 and got.shape == (10_000, 2)
    np.testing.assert_array_equal(got, _opencv(points, camera_matrix, dist))


def test_other_lenses_go_through_opencv():
    camera_matrix = np.array([[800.0, 0.5, 640.0], [0.0, 800.0, 360.0], [0.0, 0.0, 1.0]])  # a skew
    rational = np.array([-0.1, 0.02, 0.001, 0.0, 0.0, 0.05, 0.0, 0.0])  # eight coefficients
    plain = np.array([[800.0, 0.0, 640.0], [0.0, 800.0, 360.0], [0.0, 0.0, 1.0]])
    assert _lens(camera_matrix, rational[:5]) is None and _lens(plain, rational) is None
    points = _points(np.random.default_rng(3), 1000, 0.5)
    for k, dist in ((camera_matrix, rational[:5]), (plain, rational)):
        np.testing.assert_array_equal(project_points(points, k, dist), _opencv(points, k, dist))


def test_a_lens_changed_in_place_projects_with_its_new_values():
    camera_matrix = np.array([[800.0, 0.0, 640.0], [0.0, 800.0, 360.0], [0.0, 0.0, 1.0]])
    dist = np.array([-0.06, 0.08, 4e-4, -3e-4, -0.02])
    points = _points(np.random.default_rng(5), 500, 0.4)
    before = project_points(points, camera_matrix, dist)
    camera_matrix[0, 0] *= 1.01
    dist[0] += 0.01
    after = project_points(points, camera_matrix, dist)
    np.testing.assert_array_equal(after, _opencv(points, camera_matrix, dist))
    assert np.abs(after - before).max() > 1.0


def test_the_kernel_is_used_only_where_the_process_check_found_opencv_bits(monkeypatch):
    """The first call checks the kernel against cv2.projectPoints on drawn lenses (this install:
    equal); a process whose check failed projects every lens with OpenCV."""
    assert matches_opencv()
    calls = []
    kernel = sim_project._project
    monkeypatch.setattr(sim_project, "_project", lambda *a: calls.append(1) or kernel(*a))
    camera_matrix = np.array([[800.0, 0.0, 640.0], [0.0, 800.0, 360.0], [0.0, 0.0, 1.0]])
    dist = np.array([-0.06, 0.08, 4e-4, -3e-4, -0.02])
    points = _points(np.random.default_rng(7), 200, 0.4)
    project_points(points, camera_matrix, dist)
    assert calls  # the check passed: the kernel projects
    calls.clear()
    monkeypatch.setattr(sim_project, "_MATCHES", [False])
    opencv = _opencv(points, camera_matrix, dist)
    np.testing.assert_array_equal(project_points(points, camera_matrix, dist), opencv)
    assert not calls
