"""Camera and hand-eye calibration on a ChArUco board (OpenCV 4.10+ / 5 API).

A ChArUco board is a chessboard whose white squares carry ArUco markers: the markers identify
each inner chessboard corner, the corners are located to sub-pixel precision, so every view,
even a partial one, gives corner ids with image points. Its frame (OpenCV's): origin at the
board's outer top-left corner as printed, x to the right, y down the printed image, z into the
board (away from a viewer who sees it upright); metres.

* :func:`detect` finds the corners in one grey image (``cv2.aruco.CharucoDetector``) and pairs
  them with their board points (``CharucoBoard.matchImagePoints``).
* :func:`calibrate_intrinsics` is Zhang's method on those views (``cv2.calibrateCamera``,
  OpenCV's five-coefficient distortion model ``k1, k2, p1, p2, k3``), returning the per-view
  board poses ``board2cam``.
* :func:`hand_eye` solves ``AX = XB`` for the eye-in-hand camera's mount ``cam2tcp`` from the
  arm's ``tcp2base`` and the camera's ``board2cam`` at each view (``cv2.calibrateHandEye``) by one
  of Tsai, Park, Horaud, Andreff or Daniilidis; :func:`hand_eye_spread` scores a solution without
  ground truth: with the right mount, ``board2base = tcp2base · cam2tcp · board2cam`` is the
  same for every view, so its scatter (mm, deg) measures the solution and the data together.

Pure functions on numpy arrays; images are (H, W) uint8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

HAND_EYE_METHODS: dict[str, int] = {
    "TSAI": cv2.CALIB_HAND_EYE_TSAI,
    "PARK": cv2.CALIB_HAND_EYE_PARK,
    "HORAUD": cv2.CALIB_HAND_EYE_HORAUD,
    "ANDREFF": cv2.CALIB_HAND_EYE_ANDREFF,
    "DANIILIDIS": cv2.CALIB_HAND_EYE_DANIILIDIS,
}
"""OpenCV's hand-eye methods by name."""

MIN_CORNERS = 6  # a view with fewer detected corners is not used (cv2.calibrateCamera needs >= 4; 6 is robust)


@dataclass(frozen=True)
class CharucoSpec:
    """A ChArUco board: ``squares`` (columns, rows), square and marker sides (m), dictionary name
    (an OpenCV predefined dictionary, ``DICT_5X5_100``)."""

    squares: tuple[int, int] = (7, 5)
    square_m: float = 0.04
    marker_m: float = 0.03
    dictionary: str = "DICT_5X5_100"

    def __post_init__(self) -> None:
        if len(self.squares) != 2 or min(self.squares) < 2:
            raise ValueError(f"a ChArUco board needs at least 2 x 2 squares, got {self.squares}")
        if not 0.0 < self.marker_m < self.square_m:
            raise ValueError(f"the marker side ({self.marker_m} m) must be > 0 and below the square's "
                             f"({self.square_m} m)")
        if not hasattr(cv2.aruco, self.dictionary):
            raise ValueError(f"unknown ArUco dictionary {self.dictionary!r} (e.g. DICT_5X5_100)")

    def board(self) -> cv2.aruco.CharucoBoard:
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))
        return cv2.aruco.CharucoBoard(tuple(int(s) for s in self.squares), float(self.square_m),
                                      float(self.marker_m), dictionary)

    @property
    def size_m(self) -> tuple[float, float]:
        """(width, height) of the printed board, m."""
        return self.squares[0] * self.square_m, self.squares[1] * self.square_m

    @property
    def centre(self) -> np.ndarray:
        """(3,) the board's centre in its own frame."""
        width, height = self.size_m
        return np.array([width / 2, height / 2, 0.0])


@dataclass(frozen=True)
class Detection:
    """One view's corners: ``ids`` (N,), ``image_points`` (N, 2) px, ``board_points`` (N, 3) m."""

    ids: np.ndarray
    image_points: np.ndarray
    board_points: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def detect(image: np.ndarray, spec: CharucoSpec) -> Detection:
    """The ChArUco corners found in a grey ``image`` (H, W) uint8 (none: an empty detection)."""
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"image must be (H, W) uint8 grey, got {image.shape} {image.dtype}")
    board = spec.board()
    corners, ids, _, _ = cv2.aruco.CharucoDetector(board).detectBoard(image)
    if ids is None or len(ids) == 0:
        return Detection(np.zeros(0, int), np.zeros((0, 2)), np.zeros((0, 3)))
    board_points, image_points = board.matchImagePoints(corners, ids)
    return Detection(ids.ravel().astype(int), image_points.reshape(-1, 2).astype(np.float64),
                     board_points.reshape(-1, 3).astype(np.float64))


@dataclass(frozen=True)
class IntrinsicsResult:
    """``camera_matrix`` (3, 3), ``dist_coeffs`` (5,), RMS reprojection error (px), and for each
    view used its index in the input and its ``board2cam`` (4, 4)."""

    camera_matrix: np.ndarray
    dist_coeffs: np.ndarray
    rms_px: float
    views: tuple[int, ...]
    board2cam: tuple[np.ndarray, ...]


def calibrate_intrinsics(
    detections: Sequence[Detection], image_size: tuple[int, int], guess: np.ndarray | None = None,
) -> IntrinsicsResult:
    """Zhang's calibration on the views with at least :data:`MIN_CORNERS` corners.

    ``image_size``: (width, height) px; ``guess``: an initial camera matrix (3, 3), else OpenCV's.
    Raises ValueError with fewer than 4 usable views.
    """
    used = [i for i, d in enumerate(detections) if len(d) >= MIN_CORNERS]
    if len(used) < 4:
        raise ValueError(f"need at least 4 views with >= {MIN_CORNERS} ChArUco corners, got {len(used)} "
                         f"of {len(detections)}")
    objects = [detections[i].board_points.astype(np.float32) for i in used]
    images = [detections[i].image_points.astype(np.float32) for i in used]
    flags = 0
    matrix = None
    if guess is not None:
        matrix = np.array(guess, dtype=np.float64).reshape(3, 3)
        flags |= cv2.CALIB_USE_INTRINSIC_GUESS
    criteria = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    rms, k, dist, rvecs, tvecs = cv2.calibrateCamera(objects, images, tuple(int(v) for v in image_size),
                                                     matrix, np.zeros(5), flags=flags, criteria=criteria)
    poses = tuple(pose_matrix(r, t) for r, t in zip(rvecs, tvecs, strict=True))
    return IntrinsicsResult(k, np.asarray(dist, dtype=np.float64).ravel()[:5], float(rms), tuple(used), poses)


def pose_matrix(rvec: np.ndarray, tvec: np.ndarray) -> np.ndarray:
    """(4, 4) from OpenCV's rotation vector and translation."""
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_rotvec(np.asarray(rvec, dtype=np.float64).ravel()).as_matrix()
    pose[:3, 3] = np.asarray(tvec, dtype=np.float64).ravel()
    return pose


def hand_eye(tcp2base: Sequence[np.ndarray], board2cam: Sequence[np.ndarray], method: str = "PARK") -> np.ndarray:
    """``cam2tcp`` (4, 4) from paired views: the arm's ``tcp2base`` and the camera's ``board2cam``
    (each a sequence of (4, 4), at least 3 views turned about non-parallel axes)."""
    if method not in HAND_EYE_METHODS:
        raise ValueError(f"unknown hand-eye method {method!r}; one of {', '.join(HAND_EYE_METHODS)}")
    if len(tcp2base) != len(board2cam) or len(tcp2base) < 3:
        raise ValueError(f"need >= 3 paired views, got {len(tcp2base)} arm and {len(board2cam)} camera poses")
    rotation, translation = cv2.calibrateHandEye(
        [np.asarray(p)[:3, :3] for p in tcp2base], [np.asarray(p)[:3, 3] for p in tcp2base],
        [np.asarray(p)[:3, :3] for p in board2cam], [np.asarray(p)[:3, 3] for p in board2cam],
        method=HAND_EYE_METHODS[method])
    pose = np.eye(4)
    # re-orthonormalise (some methods return a matrix a few 1e-7 off a rotation)
    pose[:3, :3] = Rotation.from_matrix(rotation).as_matrix()
    pose[:3, 3] = np.asarray(translation).ravel()
    return pose


def pose_difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(translation distance m, rotation angle deg) between two (4, 4) poses."""
    turn = Rotation.from_matrix(np.asarray(a)[:3, :3].T @ np.asarray(b)[:3, :3]).magnitude()
    return float(np.linalg.norm(np.asarray(a)[:3, 3] - np.asarray(b)[:3, 3])), float(np.degrees(turn))


def hand_eye_spread(
    tcp2base: Sequence[np.ndarray], board2cam: Sequence[np.ndarray], cam2tcp: np.ndarray, centre: np.ndarray,
) -> tuple[float, float]:
    """RMS scatter of the board as placed by each view through ``cam2tcp``: (m at the board point
    ``centre`` (3,), board frame; deg), about the views' mean. 0 for perfect data and mount."""
    poses = [np.asarray(t) @ cam2tcp @ np.asarray(b) for t, b in zip(tcp2base, board2cam, strict=True)]
    points = np.array([p[:3, :3] @ centre + p[:3, 3] for p in poses])
    rotations = Rotation.from_matrix(np.array([p[:3, :3] for p in poses]))
    mean = rotations.mean()
    angles = (mean.inv() * rotations).magnitude()
    position = float(np.sqrt(np.mean(np.sum((points - points.mean(axis=0)) ** 2, axis=1))))
    return position, float(np.degrees(np.sqrt(np.mean(angles**2))))
