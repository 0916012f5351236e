"""The simulated camera's projection of camera-frame points to distorted pixels, compiled.

The renderer projects a few hundred points a frame (the faces' outlines, eight samples an edge,
the markers' outlines, the motion blur's two ends); ``cv2.projectPoints`` costs about 0.15 us a
point and 5 us a call. :func:`project_points` computes the same pixels, bit for bit, in one
compiled loop for the lenses the simulator uses: a camera matrix ``[[fx, 0, cx], [0, fy, cy],
[0, 0, 1]]`` and OpenCV's five-coefficient distortion (k1, k2, p1, p2, k3). It evaluates OpenCV's
documented model with OpenCV's operations in OpenCV's order, on the point as ``projectPoints`` sees
it with a zero rotation and translation (``1 * X + 0 * Y + 0 * Z + 0``: the identity rotation's
product, kept for its rounding of signed zeros): ``x = X / Z`` (``Z`` zero: 1), ``r2 = x^2 + y^2``,
``cdist = 1 + k1 r2 + k2 r2^2 + k3 r2^3``, ``xd = x cdist + p1 2xy + p2 (r2 + 2x^2)``, ``yd = y cdist +
p1 (r2 + 2y^2) + p2 2xy`` (the rational and thin-prism terms' zero coefficients add exact zeros),
``u = xd fx + cx``, ``v = yd fy + cy``. Any other lens goes through ``cv2.projectPoints``, and so does
every lens if the process's first call finds one bit differing from ``cv2.projectPoints`` on drawn
lenses and points (:func:`matches_opencv`: another OpenCV build, or one compiled with fused
multiply-adds, may round differently). The tests compare the two on the flagship's lens and random
ones.
"""

from __future__ import annotations

import cv2
import numba
import numpy as np

__all__ = ["project_points", "warm_up"]

_LENSES: dict[tuple, tuple | None] = {}  # a lens (its arrays' shape and bytes) -> kernel args or None
_LENSES_MAX = 64
_UNKNOWN = object()
_MATCHES: list[bool] = []  # [whether the kernel gives cv2.projectPoints' bits], checked once per process


def project_points(points_cam: np.ndarray, camera_matrix: np.ndarray, dist_coeffs: np.ndarray) -> np.ndarray:
    """(N, 3) camera-frame points to (N, 2) float64 distorted pixels: ``cv2.projectPoints`` with a
    zero rotation and translation, bit for bit (see the module)."""
    points = np.ascontiguousarray(points_cam, dtype=np.float64)
    lens = _lens(camera_matrix, dist_coeffs)
    if not _MATCHES:
        _MATCHES.append(matches_opencv())
    if lens is None or points.ndim != 2 or points.shape[1] != 3 or not _MATCHES[0]:
        px, _ = cv2.projectPoints(points, np.zeros(3), np.zeros(3), camera_matrix, dist_coeffs)
        return px.reshape(-1, 2)
    return _project(points, *lens)


def _lens(camera_matrix: np.ndarray, dist_coeffs: np.ndarray) -> tuple | None:
    """The kernel's lens arguments (fx, fy, cx, cy, k1, k2, p1, p2, k3), or None for a lens it does
    not model; kept per lens (by its values: an array changed in place is another lens)."""
    k = np.asarray(camera_matrix, dtype=np.float64)
    dist = np.asarray(dist_coeffs, dtype=np.float64).ravel()
    key = (k.shape, k.tobytes(), dist.tobytes())
    known = _LENSES.get(key, _UNKNOWN)  # (one look-up: another thread may empty the dict)
    if known is not _UNKNOWN:
        return known
    lens = None
    plain = k.shape == (3, 3) and k[0, 1] == 0.0 and k[1, 0] == 0.0 and tuple(k[2]) == (0.0, 0.0, 1.0)
    if plain and len(dist) in (4, 5):
        coeffs = [float(c) for c in dist] + [0.0] * (5 - len(dist))
        lens = (float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]), *coeffs)
    if len(_LENSES) >= _LENSES_MAX:
        _LENSES.clear()
    _LENSES[key] = lens
    return lens


def matches_opencv(count: int = 20, seed: int = 0) -> bool:
    """Whether :func:`_project` gives ``cv2.projectPoints``' pixels bit for bit on ``count`` drawn
    lenses of the kind it models, 64 points each (in front of the camera, behind it, on its plane)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        f = rng.uniform(300.0, 2000.0)
        k = np.array([[f * rng.uniform(0.98, 1.02), 0.0, rng.uniform(300.0, 700.0)],
                      [0.0, f, rng.uniform(200.0, 400.0)], [0.0, 0.0, 1.0]])
        dist = rng.normal(0.0, [0.2, 0.1, 0.002, 0.002, 0.05])
        points = rng.normal(0.0, 0.3, (64, 3))
        points[:, 2] = rng.uniform(-0.5, 2.0, 64)
        points[0, 2] = 0.0
        expected, _ = cv2.projectPoints(points, np.zeros(3), np.zeros(3), k, dist)
        if expected.reshape(-1, 2).tobytes() != _project(points, *_lens(k, dist)).tobytes():
            return False
    return True


def warm_up() -> None:
    """Compile :func:`_project` (a second or two, once per install: numba caches the machine code
    next to this file) or load it (a fresh process), and make the process's check, outside any
    frame: the sim camera's ray table (``ScenePainter._ray_table``) calls it."""
    _project(np.ones((1, 3)), 500.0, 500.0, 320.0, 240.0, -0.1, 0.01, 0.001, 0.001, 0.0)
    if not _MATCHES:
        _MATCHES.append(matches_opencv())


@numba.njit(cache=True)
def _project(points: np.ndarray, fx: float, fy: float, cx: float, cy: float, k1: float, k2: float, p1: float,
             p2: float, k3: float) -> np.ndarray:
    """OpenCV's projection of ``points`` (N, 3) with the identity rotation, no translation and the
    lens given: (N, 2) pixels."""
    out = np.empty((points.shape[0], 2))
    for i in range(points.shape[0]):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        x = 1.0 * px + 0.0 * py + 0.0 * pz + 0.0
        y = 0.0 * px + 1.0 * py + 0.0 * pz + 0.0
        z = 0.0 * px + 0.0 * py + 1.0 * pz + 0.0
        z = 1.0 / z if z != 0.0 else 1.0
        x *= z
        y *= z
        r2 = x * x + y * y
        r4 = r2 * r2
        r6 = r4 * r2
        a1 = 2 * x * y
        a2 = r2 + 2 * x * x
        a3 = r2 + 2 * y * y
        cdist = 1 + k1 * r2 + k2 * r4 + k3 * r6
        icdist2 = 1.0 / (1 + 0.0 * r2 + 0.0 * r4 + 0.0 * r6)
        xd0 = x * cdist * icdist2 + p1 * a1 + p2 * a2 + 0.0 * r2 + 0.0 * r4
        yd0 = y * cdist * icdist2 + p1 * a3 + p2 * a1 + 0.0 * r2 + 0.0 * r4
        # the tilt of the sensor's plane: none (the identity matrix, its product kept as computed)
        tx = 1.0 * xd0 + 0.0 * yd0 + 0.0 * 1.0
        ty = 0.0 * xd0 + 1.0 * yd0 + 0.0 * 1.0
        tz = 0.0 * xd0 + 0.0 * yd0 + 1.0 * 1.0
        inv = 1.0 / tz if tz != 0.0 else 1.0
        out[i, 0] = (inv * tx) * fx + cx
        out[i, 1] = (inv * ty) * fy + cy
    return out
