"""Marker-board pose estimation: ``board2cam`` from one image (pure functions, no state).

Pipeline of :func:`estimate_board_pose` (defaults = the best measured method):

1. ``cv2.aruco.ArucoDetector`` finds the markers (``CORNER_REFINE_SUBPIX`` gives the initial
   corners), then ``refineDetectedMarkers`` recovers board markers whose bits were too blurred
   to decode on their own, from where the board layout predicts them (at 0.5 m a 7x7 marker is
   only 27 px wide: without recovery a blurred, dark frame often keeps one marker of three).
2. Corners are refined by ECC alignment of each marker's known pattern to the locally
   undistorted image, coarse then fine (``skills/marker_refine.py``); the result is in ideal
   (undistorted) pixels.
3. ``cv2.solvePnPGeneric`` with ``SOLVEPNP_IPPE``: a planar board has a two-fold pose ambiguity
   and IPPE, the analytic planar solver, returns *both* candidates (SQPNP returns one and hides
   the ambiguity). Each is polished with ``solvePnPRefineLM`` (Levenberg-Marquardt on the
   reprojection error, the maximum-likelihood pose under Gaussian corner noise); the lower RMS
   wins, unless a prior pose is given and the two are within ``ambiguity_ratio`` of each other,
   then the one nearer the prior wins. Non-planar boards use SQPNP.
4. With three or more markers, one marker whose reprojection error is far above the others'
   (a bad corner, a wrong recovery) is dropped and the pose solved again.

Measured (``benchmarks/perception.py --compare``; SIROM board, 1280x720, fx = fy = 900 px, mild
distortion, board tilted 0-45 deg, random exposure, lighting gradient, blur sigma 0.5-1.0 px,
read + shot noise; 300 seeded views per range; "within" = translation error <= 1 mm and rotation
error <= 0.5 deg at 0.15-0.30 m, <= 3 mm and <= 1.5 deg at 0.30-0.60 m; the "stress" set adds
blur sigma 0.8-1.5 px, gamma 0.6-1.6, exposure 0.4-1.3, stronger noise and gradient; ms =
median estimation time per frame, near set, on the 2-core machine of the measurement; the
"plain" row is the straightforward pipeline; APRILTAG's corners corrected by -0.5 px)::

    % within bounds                              near         far near-stress  far-stress    ms
    NONE + SQPNP + LM                            79.0        66.0        53.3        37.0    16
    SUBPIX(5, 0.3) + SQPNP + LM [plain]         100.0        88.7        89.7        50.0    17
    SUBPIX(10, 1.0) + SQPNP + LM                 93.3        99.3        85.0        70.7    16
    CONTOUR + SQPNP + LM                         89.0        71.0        66.7        60.0    24
    APRILTAG(-0.5 px) + SQPNP + LM              100.0        98.7        98.7        72.7   468
    SUBPIX + recover + IPPE + LM                100.0        89.0        89.7        54.7    17
      + cornerSubPix(0.12 side)                  93.0        96.7        80.3        73.0    14
      + edge-line fit                           100.0        98.3        99.7        84.3    20
      + ECC [default]                           100.0       100.0       100.0        97.7    21
    ECC + SQPNP + LM                            100.0       100.0       100.0        97.7    20
    ECC + IPPE + VVS                            100.0       100.0       100.0        97.7    21
    ECC + IPPE, no refinement                    98.3       100.0        97.0        96.3    22

    median dt mm / p95 dr deg                    near         far near-stress  far-stress
    NONE + SQPNP + LM                       0.48/0.85   2.03/2.17   0.77/0.96  3.10/22.95
    SUBPIX(5, 0.3) + SQPNP + LM [plain]     0.21/0.22   1.28/1.70   0.34/0.50  2.34/23.83
    SUBPIX(10, 1.0) + SQPNP + LM            0.66/0.52   0.55/0.93   0.38/0.63   1.34/9.28
    CONTOUR + SQPNP + LM                    0.68/0.30   2.38/0.82   0.80/0.48  2.46/11.46
    APRILTAG(-0.5 px) + SQPNP + LM          0.03/0.16   0.27/0.61   0.22/0.22    0.87/inf
    SUBPIX + recover + IPPE + LM            0.21/0.22   1.28/1.67   0.34/0.50   2.21/6.17
      + cornerSubPix(0.12 side)             0.66/0.52   0.55/1.17   0.37/0.71   1.33/3.44
      + edge-line fit                       0.08/0.07   0.79/0.52   0.24/0.16   1.33/3.39
      + ECC [default]                       0.06/0.06   0.08/0.12   0.07/0.07   0.12/0.35
    ECC + SQPNP + LM                        0.06/0.06   0.08/0.12   0.07/0.07   0.12/0.35
    ECC + IPPE + VVS                        0.06/0.06   0.08/0.12   0.07/0.07   0.12/0.35
    ECC + IPPE, no refinement               0.06/0.13   0.09/0.27   0.07/0.24   0.14/0.93

Reading it: SUBPIX's window is capped at 0.3 cell, too small for far markers, and larger windows
reach into the data bits near; CONTOUR and edge lines are pulled by the 1 mm quiet zone (1.5 px
at 0.6 m) and what lies beyond it (translation bias); APRILTAG is good but 25x slower; ECC wins
everywhere. With 12 well-placed corners SQPNP and IPPE agree, and LM = VVS; IPPE is kept for
the one- or two-marker case, where its second solution and the prior matter (see the tests). LM
matters (IPPE alone is not the least-squares pose). The far-stress misses of the default are
frames where no marker decodes at all (27 px markers, blur up to 1.5 px, low contrast).

Why ECC: the ArUco detector's corner refinements look at a small window around each corner
(SUBPIX: 2 edges x a few pixels; CONTOUR: the thresholded contour, biased inwards by the
threshold; APRILTAG: line fits to the quad, much better but it reruns a full-image quad search
and its OpenCV 5.0 corners are offset by +0.5 px, pixel-corner convention). ECC uses every cell
edge of the marker with its exact layout, and undistorts locally so the homography model holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import cv2
import numpy as np

from orbitree.skills.board_model import (  # re-exported: the board model lives there
    BoardModel,
    aruco_board_from_corners,
    board_model_from_corners,
    make_aruco_board,
    sirom_board,
    sirom_board_model,
)
from orbitree.skills.marker_refine import (
    refine_corner_subpix,
    refine_ecc,
    refine_edge_lines,
    to_gray,
    undistort_corners,
    undistortion_maps,
)

__all__ = [
    "BoardEstimatorConfig",
    "BoardModel",
    "BoardPose",
    "BoardTracker",
    "aruco_board_from_corners",
    "board_model_from_corners",
    "detect_board_markers",
    "estimate_board_pose",
    "make_aruco_board",
    "make_detector",
    "refine_corners",
    "sirom_board",
    "sirom_board_model",
    "solve_board_pose",
]

DetectorRefinement = Literal["none", "subpix", "contour", "apriltag"]
CornerRefinement = Literal["none", "cornersubpix", "edgelines", "ecc"]
PnpMethod = Literal["ippe", "sqpnp", "iterative"]
PoseRefinement = Literal["none", "lm", "vvs"]

_DETECTOR_METHODS = {
    "none": cv2.aruco.CORNER_REFINE_NONE,
    "subpix": cv2.aruco.CORNER_REFINE_SUBPIX,
    "contour": cv2.aruco.CORNER_REFINE_CONTOUR,
    "apriltag": cv2.aruco.CORNER_REFINE_APRILTAG,
}
#: OpenCV 5.0's CORNER_REFINE_APRILTAG returns corners shifted by +0.5 px (measured: +0.43 px
#: mean on noiseless renders, the rest being its inward bias): the AprilTag code puts pixel
#: centres at +0.5 (AprilRobotics/apriltag issues 121 and 345); corrected when used.
APRILTAG_CORNER_OFFSET_PX = 0.5


@dataclass(frozen=True)
class BoardEstimatorConfig:
    """How to detect, refine and solve. Defaults: the best method of the comparison above.

    detector_refinement : the ArucoDetector's own corner refinement.
    subpix_window_px, subpix_relative_window : its SUBPIX half-window, px, and cap relative to
        the marker cell (OpenCV uses the smaller).
    recover_missing : ``refineDetectedMarkers`` with the board layout.
    corner_refinement : second refinement ("ecc", "edgelines", "cornersubpix", "none").
    ecc_white_margin_cells : white quiet zone certainly printed around each marker, in cells
        (used by "ecc" and "edgelines"; SIROM: 1 mm of a 2 mm cell).
    pnp, pose_refinement : solver and polish (see the module docstring).
    ambiguity_ratio : below this RMS ratio of the two planar solutions a prior pose decides.
    max_marker_rms_px : with 3 or more markers, the worst marker is dropped (once) and the pose
        solved again when its own RMS reprojection error exceeds this and 3x the median of the
        others.
    min_markers : fewer detected board markers give None.
    ecc_max_side_px : "ecc" aligns a marker wider than this on its window shrunk to this size
        (None: at full size; see ``refine_ecc``); :class:`BoardTracker` uses 32 px.
    ecc_coarse_first, ecc_eps : ECC's coarse pass before the fine one for every marker (False:
        only where the fine pass alone fails) and its convergence threshold (``refine_ecc``).
    """

    detector_refinement: DetectorRefinement = "subpix"
    subpix_window_px: int = 5
    subpix_relative_window: float = 0.3
    recover_missing: bool = True
    corner_refinement: CornerRefinement = "ecc"
    ecc_white_margin_cells: float = 0.5
    pnp: PnpMethod = "ippe"
    pose_refinement: PoseRefinement = "lm"
    ambiguity_ratio: float = 1.5
    max_marker_rms_px: float = 1.0
    min_markers: int = 1
    ecc_max_side_px: float | None = None
    ecc_coarse_first: bool = True
    ecc_eps: float = 1e-5

    def __post_init__(self) -> None:
        choices = {
            "detector_refinement": tuple(_DETECTOR_METHODS),
            "corner_refinement": ("none", "cornersubpix", "edgelines", "ecc"),
            "pnp": ("ippe", "sqpnp", "iterative"),
            "pose_refinement": ("none", "lm", "vvs"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.ambiguity_ratio < 1 or self.max_marker_rms_px <= 0 or self.min_markers < 1:
            raise ValueError(
                "need ambiguity_ratio >= 1, max_marker_rms_px > 0, min_markers >= 1; got "
                f"{self.ambiguity_ratio}, {self.max_marker_rms_px}, {self.min_markers}"
            )


@dataclass(frozen=True)
class BoardPose:
    """One board pose measurement.

    board2cam : (4, 4) board frame to camera frame.
    marker_ids : markers whose corners were used, ascending.
    reprojection_error_px : RMS corner reprojection error (ideal, undistorted pixels).
    n_corners : number of corners used (4 per marker).
    ambiguity_ratio : RMS of the other planar solution / RMS of this one (inf when unique);
        near 1 means the two mirror poses explain the image equally well.
    """

    board2cam: np.ndarray
    marker_ids: tuple[int, ...]
    reprojection_error_px: float
    n_corners: int
    ambiguity_ratio: float = math.inf


def make_detector(
    board: cv2.aruco.Board, config: BoardEstimatorConfig | None = None
) -> cv2.aruco.ArucoDetector:
    """An ``ArucoDetector`` for the board's dictionary with the configured corner refinement."""
    config = config or BoardEstimatorConfig()
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = _DETECTOR_METHODS[config.detector_refinement]
    params.cornerRefinementWinSize = config.subpix_window_px
    params.relativeCornerRefinmentWinSize = config.subpix_relative_window
    params.cornerRefinementMaxIterations = 50
    params.cornerRefinementMinAccuracy = 0.01
    # refineDetectedMarkers' default errorCorrectionRate (3) accepts three times the
    # dictionary's correction capability: a uniform dark occluder on a marker's spot "recovered"
    # as that marker. 1.0 still recovers 21 of 23 blurred markers of the far stress set.
    refine = cv2.aruco.RefineParameters(10.0, 1.0, True)
    return cv2.aruco.ArucoDetector(board.getDictionary(), params, refine)


def detect_board_markers(
    gray: np.ndarray,
    board: cv2.aruco.Board,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    detector: cv2.aruco.ArucoDetector,
    config: BoardEstimatorConfig,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Board markers in the image: corners, a list of (4, 2) distorted pixels, and ids (N,)."""
    corners, ids, rejected = detector.detectMarkers(gray)
    if ids is None or len(ids) == 0:
        return [], np.zeros(0, dtype=int)
    if config.recover_missing:
        corners, ids, _, _ = detector.refineDetectedMarkers(
            gray, board, corners, ids, rejected, camera_matrix, dist_coeffs
        )
    board_ids = set(np.asarray(board.getIds()).ravel().tolist())
    keep = [i for i, mid in enumerate(np.asarray(ids).ravel()) if int(mid) in board_ids]
    quads = [np.asarray(corners[i], dtype=np.float64).reshape(4, 2) for i in keep]
    if config.detector_refinement == "apriltag":
        quads = [q - APRILTAG_CORNER_OFFSET_PX for q in quads]
    return quads, np.asarray(ids).ravel()[keep].astype(int)


def refine_corners(
    gray: np.ndarray,
    quads: list[np.ndarray],
    ids: np.ndarray,
    board: cv2.aruco.Board,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    config: BoardEstimatorConfig,
    templates: dict | None = None,
    correlations: list | None = None,
    undistort_maps: tuple[np.ndarray, np.ndarray] | None = None,
    ideal_quads: bool = False,
) -> list[np.ndarray]:
    """Configured corner refinement; (4, 2) corners in ideal (undistorted) pixels.
    ``templates``: a dict kept between calls, where ECC caches its marker templates;
    ``correlations``: a list that receives ECC's per-marker correlations; ``undistort_maps``
    and ``ideal_quads`` (quads already in ideal pixels): ECC only (see ``refine_ecc``)."""
    if config.corner_refinement == "ecc":
        return refine_ecc(gray, quads, ids.tolist(), board.getDictionary(), camera_matrix,
                          dist_coeffs, white_margin_cells=config.ecc_white_margin_cells,
                          templates=templates, max_side_px=config.ecc_max_side_px,
                          coarse_first=config.ecc_coarse_first, eps=config.ecc_eps,
                          correlations=correlations, ideal_corners=ideal_quads,
                          undistort_maps=undistort_maps)
    if ideal_quads:
        raise ValueError("ideal_quads is only supported by the 'ecc' corner refinement")
    if config.corner_refinement == "cornersubpix":
        return refine_corner_subpix(gray, quads, camera_matrix, dist_coeffs)
    if config.corner_refinement == "edgelines":
        return refine_edge_lines(gray, quads, camera_matrix, dist_coeffs,
                                 cells=board.getDictionary().markerSize + 2,
                                 white_margin_cells=config.ecc_white_margin_cells)
    return [undistort_corners(q, camera_matrix, dist_coeffs) for q in quads]


def _is_planar(points: np.ndarray) -> bool:
    return _is_planar_cached(points.tobytes(), points.shape[0])


@lru_cache(maxsize=64)
def _is_planar_cached(data: bytes, n: int) -> bool:
    """(A board's points come back frame after frame: the SVD is done once per point set.)"""
    points = np.frombuffer(data, dtype=np.float64).reshape(n, 3)
    centred = points - points.mean(axis=0)
    sv = np.linalg.svd(centred, compute_uv=False)
    return bool(sv[-1] <= 1e-6 * sv[0])


def _rms(obj: np.ndarray, img: np.ndarray, k: np.ndarray, rvec: np.ndarray,
         tvec: np.ndarray) -> tuple[float, np.ndarray]:
    """RMS reprojection error (px) and the squared error of each point (N,)."""
    proj, _ = cv2.projectPoints(obj, rvec, tvec, k, None)
    d = proj.reshape(-1, 2) - img
    d *= d
    sq = d[:, 0] + d[:, 1]
    return math.sqrt(float(np.add.reduce(sq)) / len(sq)), sq


_EYE4 = np.eye(4)


def _to_matrix(rvec: np.ndarray, tvec: np.ndarray, rotation: np.ndarray | None = None) -> np.ndarray:
    pose = _EYE4.copy()
    pose[:3, :3] = cv2.Rodrigues(rvec)[0] if rotation is None else rotation
    pose[:3, 3] = np.ravel(tvec)
    return pose


def _rotation_angle(r: np.ndarray) -> float:
    """Angle (rad) of a (3, 3) rotation matrix, accurate near 0 and pi alike (atan2 of the sine
    and cosine parts, 2 sin = the skew part's norm, 2 cos = trace - 1)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = r.tolist()
    return math.atan2(math.sqrt((r21 - r12) ** 2 + (r02 - r20) ** 2 + (r10 - r01) ** 2),
                      r00 + r11 + r22 - 1.0)


_PNP_FLAGS = {"ippe": cv2.SOLVEPNP_IPPE, "sqpnp": cv2.SOLVEPNP_SQPNP, "iterative": cv2.SOLVEPNP_ITERATIVE}


def solve_board_pose(
    object_points: np.ndarray,
    ideal_points: np.ndarray,
    camera_matrix: np.ndarray,
    *,
    pnp: PnpMethod = "ippe",
    refinement: PoseRefinement = "lm",
    prior_board2cam: np.ndarray | None = None,
    ambiguity_ratio: float = 1.5,
) -> tuple[np.ndarray, float, float] | None:
    """PnP on ideal pixels. object_points (N, 3) board frame, ideal_points (N, 2).

    Returns ``(board2cam (4, 4), rms_px, ambiguity_ratio)`` or None when no solution puts the
    board in front of the camera.
    """
    obj = np.ascontiguousarray(object_points, dtype=np.float64).reshape(-1, 3)
    img = np.ascontiguousarray(ideal_points, dtype=np.float64).reshape(-1, 2)
    if len(obj) < 4 or len(obj) != len(img):
        raise ValueError(f"need >= 4 matching points, got {len(obj)} and {len(img)}")
    solved = _solve_pose(obj, img, camera_matrix, pnp, refinement, prior_board2cam, ambiguity_ratio)
    return None if solved is None else solved[:3]


def _solve_pose(
    obj: np.ndarray,
    img: np.ndarray,
    camera_matrix: np.ndarray,
    pnp: PnpMethod,
    refinement: PoseRefinement,
    prior_board2cam: np.ndarray | None,
    ambiguity_ratio: float,
) -> tuple[np.ndarray, float, float, np.ndarray] | None:
    """:func:`solve_board_pose` on checked (N, 3) and (N, 2) float64 arrays; also the squared
    reprojection error (px^2) of each point (N,) under the pose returned."""
    flag = _PNP_FLAGS[pnp]
    if flag == cv2.SOLVEPNP_IPPE and not _is_planar(obj):
        flag = cv2.SOLVEPNP_SQPNP
    n, rvecs, tvecs, _ = cv2.solvePnPGeneric(obj, img, camera_matrix, None, flags=flag)
    candidates = []
    for rvec, tvec in zip(rvecs[:n], tvecs[:n], strict=True):
        if refinement == "lm":
            rvec, tvec = cv2.solvePnPRefineLM(obj, img, camera_matrix, None, rvec, tvec)
        elif refinement == "vvs":
            rvec, tvec = cv2.solvePnPRefineVVS(obj, img, camera_matrix, None, rvec, tvec)
        if float(tvec[2, 0] if tvec.ndim == 2 else np.ravel(tvec)[2]) > 0:
            candidates.append((*_rms(obj, img, camera_matrix, rvec, tvec), rvec, tvec))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    best = candidates[0]
    ratio = math.inf
    rotation = None
    if len(candidates) > 1:
        ratio = candidates[1][0] / max(best[0], 1e-12)
        if prior_board2cam is not None and ratio < ambiguity_ratio:
            # the candidate rotated least from the prior
            prior_t = np.asarray(prior_board2cam, dtype=np.float64)[:3, :3].T
            rotations = [cv2.Rodrigues(c[2])[0] for c in candidates[:2]]
            angles = [_rotation_angle(r @ prior_t) for r in rotations]
            pick = 1 if angles[1] < angles[0] else 0
            best, rotation = candidates[pick], rotations[pick]
    return _to_matrix(best[2], best[3], rotation), best[0], ratio, best[1]


def estimate_board_pose(
    image: np.ndarray,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    board: cv2.aruco.Board,
    *,
    config: BoardEstimatorConfig | None = None,
    prior_board2cam: np.ndarray | None = None,
    detector: cv2.aruco.ArucoDetector | None = None,
    corner_noise_px: float = 0.0,
    rng: np.random.Generator | None = None,
) -> BoardPose | None:
    """Pose of ``board`` in the camera frame from one image, or None if no board marker is seen.

    image : (H, W) uint8 grey or (H, W, 3) BGR. camera_matrix : (3, 3). dist_coeffs : OpenCV
    distortion (k1, k2, p1, p2[, k3...]) or None. prior_board2cam : (4, 4), e.g. the last
    estimate, used only to break a planar ambiguity. ``detector`` may be passed to reuse one
    (see :func:`make_detector`); it must use the configured refinement. ``corner_noise_px``
    (the pose_noise fault): Gaussian noise of that standard deviation, per coordinate, added to
    the refined corners (ideal pixels) before PnP, drawn from ``rng``.
    """
    config = config or BoardEstimatorConfig()
    camera_matrix = np.asarray(camera_matrix, dtype=np.float64)
    if camera_matrix.shape != (3, 3):
        raise ValueError(f"camera_matrix must be (3, 3), got {camera_matrix.shape}")
    if dist_coeffs is not None:
        dist_coeffs = np.asarray(dist_coeffs, dtype=np.float64).ravel()
    gray = to_gray(image)
    detector = detector or make_detector(board, config)
    quads, ids = detect_board_markers(gray, board, camera_matrix, dist_coeffs, detector, config)
    return _pose_from_markers(gray, quads, ids, board, camera_matrix, dist_coeffs, config,
                              prior_board2cam, corner_noise_px, rng)


def _pose_from_markers(
    gray: np.ndarray,
    quads: list[np.ndarray],
    ids: np.ndarray,
    board: cv2.aruco.Board,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    config: BoardEstimatorConfig,
    prior_board2cam: np.ndarray | None,
    corner_noise_px: float,
    rng: np.random.Generator | None,
    templates: dict | None = None,
    undistort_maps: tuple[np.ndarray, np.ndarray] | None = None,
) -> BoardPose | None:
    """Steps 2-4 of the pipeline on detected markers (quads in distorted pixels)."""
    if len(ids) < max(config.min_markers, 1):
        return None
    ideal = refine_corners(gray, quads, ids, board, camera_matrix, dist_coeffs, config, templates,
                           undistort_maps=undistort_maps)
    return _pose_from_ideal(ideal, ids, board, camera_matrix, config, prior_board2cam,
                            corner_noise_px, rng)


def _pose_from_ideal(
    ideal: list[np.ndarray] | np.ndarray,
    ids: np.ndarray,
    board: cv2.aruco.Board,
    camera_matrix: np.ndarray,
    config: BoardEstimatorConfig,
    prior_board2cam: np.ndarray | None,
    corner_noise_px: float,
    rng: np.random.Generator | None,
    object_points: np.ndarray | None = None,
) -> BoardPose | None:
    """Steps 3-4 of the pipeline on refined corners (ideal pixels): a list of (4, 2) or an
    (N, 4, 2) array. ``object_points``: the markers' corners (4 N, 3) on the board, in the order
    of ``ids``, when the caller knows them (else the board matches them)."""
    ideal = np.asarray(ideal, dtype=np.float64).reshape(-1, 4, 2)
    if corner_noise_px > 0.0:
        rng = rng if rng is not None else np.random.default_rng()
        ideal = np.array([q + rng.normal(0.0, corner_noise_px, q.shape) for q in ideal])
    solved = _solve_markers(board, ideal, ids, camera_matrix, config, prior_board2cam, object_points)
    if solved is None:
        return None
    board2cam, rms, ratio, marker_rms = solved
    marker_rms = marker_rms.tolist()
    worst = max(range(len(marker_rms)), key=marker_rms.__getitem__)  # the first of the largest
    if len(ids) >= 3 and marker_rms[worst] > config.max_marker_rms_px:
        others = sorted(marker_rms[:worst] + marker_rms[worst + 1:])
        half = len(others) // 2
        median = others[half] if len(others) % 2 else (others[half - 1] + others[half]) / 2
        if marker_rms[worst] > 3.0 * median:
            # one marker disagrees with the others (a bad corner, a wrong recovery): drop it.
            # With two markers there is no telling which one is wrong.
            keep = [i for i in range(len(ids)) if i != worst]
            ideal, ids = ideal[keep], np.asarray(ids)[keep]
            if object_points is not None:
                object_points = object_points.reshape(-1, 4, 3)[keep].reshape(-1, 3)
            solved = _solve_markers(board, ideal, ids, camera_matrix, config, prior_board2cam,
                                    object_points)
            if solved is None:
                return None
            board2cam, rms, ratio, _ = solved
    return BoardPose(board2cam, tuple(sorted(np.asarray(ids).tolist())), rms, 4 * len(ids), ratio)


def _solve_markers(
    board: cv2.aruco.Board,
    ideal: np.ndarray,
    ids: np.ndarray,
    camera_matrix: np.ndarray,
    config: BoardEstimatorConfig,
    prior_board2cam: np.ndarray | None,
    object_points: np.ndarray | None = None,
) -> tuple[np.ndarray, float, float, np.ndarray] | None:
    """PnP over the markers' corners ((N, 4, 2) ideal pixels; ``object_points``: see
    ``_pose_from_ideal``); also each marker's RMS reprojection error (px)."""
    # the image points go through float32 as the board's matching returns them
    img32 = ideal.astype(np.float32)
    if object_points is None:
        obj, img = board.matchImagePoints(list(img32[:, None]), np.asarray(ids).reshape(-1, 1))
        if obj is None or len(obj) < 4 or len(obj) != 4 * len(ids):
            return None
        obj = obj.reshape(-1, 3).astype(np.float64)
    else:
        obj, img = object_points, img32
    img = img.reshape(-1, 2).astype(np.float64)
    solved = _solve_pose(obj, img, camera_matrix, config.pnp, config.pose_refinement,
                         prior_board2cam, config.ambiguity_ratio)
    if solved is None:
        return None
    board2cam, rms, ratio, sq = solved
    return board2cam, rms, ratio, np.sqrt(np.add.reduce(sq.reshape(-1, 4), axis=1) / 4)


TRACKER_CONFIG = BoardEstimatorConfig(ecc_max_side_px=32.0, ecc_coarse_first=False, ecc_eps=1e-3)
"""The tracker's default configuration: ECC on markers shrunk to at most 32 px (28 px loses
accuracy), the fine pass alone from the starting corners (the coarse one only where it fails),
stopping at a correlation gain of 1e-3: on 60 approach frames and 100 near and 100 far random
views, median / p95 errors equal to or below the full search's (0.04 / 0.06-0.14 mm against
0.05-0.08 / 0.09-0.15 mm) at a third to a fifth of ECC's time per frame."""


_ZERO3 = np.zeros(3)


class BoardTracker:
    """Board pose frame after frame, searching where the board should be (ArUco3's idea).

    ``BoardTracker(board, camera_matrix, dist_coeffs)``; ``update(image, prior=None)`` returns a
    :class:`BoardPose` or None, like :func:`estimate_board_pose` on the same image; ``reset()``
    forgets the track.

    Romero-Ramirez, Muñoz-Salinas and Medina-Carnicer (Image and Vision Computing 2018, "Speeded
    up detection of squared fiducial markers"; [ArUco3] in the README's Sources) make detection
    fast in video by looking for markers only where the previous frame had them and by choosing
    the adaptive-threshold window from the markers' expected size instead of trying several.
    Here: the board's markers (with their quiet zone) are projected with the predicted pose
    (``prior``, e.g. the last pose carried by the arm's motion since; else the last pose), their
    bounding box grown by ``roi_margin`` of its size (and at least ``min_margin_px``) is the region
    searched, with one threshold window of ``threshold_window_cells`` expected marker cells and
    the smallest accepted perimeter at half the expected one. Detection falls back to the whole
    image (the usual pipeline) when the region would cover most of the image anyway or when it
    finds fewer board markers than the last frame gave. Without a prediction (the first frame,
    the board lost) the whole image is searched coarse to fine, ArUco3's other idea: markers and
    marker-like quads on the image halved, then detection at full size only in the region of the
    board markers read there (or, none readable, around the quads rejected there); an image with
    nothing marker-like costs a half-size detection (measured: the same boards found as the
    full-size search at 0.15-0.60 m, nominal and stress; a frame without the board 2.2x cheaper,
    2.5 against 5.6 ms, on a textured plate: ``benchmarks/perception.py --track``;
    ``coarse_search=False``: the full-size search). Everything
    after detection (recovery of missed markers, ECC corner refinement, PnP, the outlier check)
    is :func:`estimate_board_pose`'s, on the whole image, with its templates cached between
    frames; the predicted pose breaks the planar ambiguity as the last estimate does there.

    Before any detection, the markers of the last frame are aligned by ECC (the fine pass, then
    coarse + fine where it fails) straight from the corners the prediction gives them: the
    result is taken when every one is inside the image, correlates with its pattern by at least
    ``track_min_correlation`` and the pose explains them all within ``max_marker_rms_px``
    (a wrong prediction or a marker hidden since fails this and the frame is detected). Without
    ``prior`` the prediction is the last pose moved again by the motion between the two frames
    before (constant velocity per frame). ECC ends where it would from detected corners, so the
    accuracy is the same; detection, a third of the time left, is skipped. ECC starts from the
    predicted corners projected straight to ideal pixels, and cuts its undistorted windows from
    maps of the whole image made once (the same pixels as each window's own maps, without
    computing them per marker and frame: 15 % of the tracker's time per frame). Measured
    (``benchmarks/perception.py --track``, 50 approach frames, 5 passes, pinned to one core,
    CPU time, the shared machine's load varying): a frame 1.9-2.6 ms, OpenCV's plain pipeline
    6.2-8.5 ms, median 3.30x over eleven runs (2.96-3.51x; 2.94x, 2.72-3.06x, before the Python
    around OpenCV went from about 0.17 to 0.10 ms of a frame); what is left is OpenCV's: ECC
    about 0.7-0.8 ms for three markers, the LM refinement of both planar solutions 0.13-0.2, the
    windows' resampling 0.2-0.25, IPPE and the projections 0.05-0.1.

    ``searches`` counts frames by how they were found: ``"track"`` (aligned from the
    prediction), ``"roi"`` (detected in the predicted region) or ``"full"`` (the whole image
    searched, coarse to fine or at full size), and the whole-image searches that found nothing.
    """

    def __init__(
        self,
        board: cv2.aruco.Board,
        camera_matrix: np.ndarray,
        dist_coeffs: np.ndarray | None,
        config: BoardEstimatorConfig | None = None,
        *,
        roi_margin: float = 0.3,
        min_margin_px: int = 24,
        max_roi_fraction: float = 0.6,
        threshold_window_cells: float = 1.5,
        detect_side_px: float = 64.0,
        track_min_correlation: float = 0.85,
        coarse_search: bool = True,
    ) -> None:
        self.board = board
        self.camera_matrix = np.asarray(camera_matrix, dtype=np.float64)
        if self.camera_matrix.shape != (3, 3):
            raise ValueError(f"camera_matrix must be (3, 3), got {self.camera_matrix.shape}")
        self.dist = None if dist_coeffs is None else np.asarray(dist_coeffs, np.float64).ravel()
        self.config = config or TRACKER_CONFIG
        self.roi_margin, self.min_margin_px = roi_margin, min_margin_px
        self.max_roi_fraction, self.threshold_window_cells = max_roi_fraction, threshold_window_cells
        self.detect_side_px, self.track_min_correlation = detect_side_px, track_min_correlation
        self.coarse_search = coarse_search
        self.detector = make_detector(board, self.config)
        self._roi_params = self.detector.getDetectorParameters()
        self._roi_detector = make_detector(board, self.config)
        # the coarse search's detector, on the half-size image: default parameters, no corner
        # refinement (its quads only say where to look at full resolution)
        self._coarse_detector = cv2.aruco.ArucoDetector(board.getDictionary(), cv2.aruco.DetectorParameters())
        # the whole-image search's detector for windows of the image, with its smallest marker
        # perimeter kept in pixels of the whole image (a rate of a small window's side would
        # let every speck of texture through as a contour to examine)
        self._window_detector = make_detector(board, self.config)
        self._window_params = self._window_detector.getDetectorParameters()
        self._board_ids = frozenset(np.asarray(board.getIds()).ravel().tolist())
        self._cells = board.getDictionary().markerSize + 2
        obj = np.asarray(board.getObjPoints(), dtype=np.float64).reshape(-1, 4, 3)
        centre = obj.mean(axis=1, keepdims=True)
        self._outline = (centre + (obj - centre) * (1.0 + 2.0 / self._cells)).reshape(-1, 3)
        # the farthest any point of the board (with its quiet zones) lies from a marker's centre,
        # in that marker's sides: a found marker puts the whole board within this many of its
        # sides of its centre in the image, up to perspective (the coarse search's region)
        sides = np.linalg.norm(obj[:, 1] - obj[:, 0], axis=1)
        reach = np.linalg.norm(self._outline[None, :, :] - centre, axis=2).max(axis=1)
        self._board_reach_sides = float((reach / sides).max())
        self._templates: dict = {}
        ids = np.asarray(board.getIds()).ravel()
        self._corners = np.zeros((int(ids.max()) + 1, 4, 3))  # marker id -> its corners (board)
        self._corners[ids] = obj
        self._track_cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._dictionary = board.getDictionary()
        self._maps: tuple[tuple[int, int], tuple[np.ndarray, np.ndarray] | None] | None = None
        self.last: BoardPose | None = None
        self._before_last: np.ndarray | None = None
        self.searches = {"track": 0, "roi": 0, "full": 0}

    def reset(self) -> None:
        """Forget the track: the next frame is searched whole."""
        self.last = self._before_last = None

    def update(
        self,
        image: np.ndarray,
        prior: np.ndarray | None = None,
        *,
        corner_noise_px: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> BoardPose | None:
        """The board's pose in ``image`` ((H, W) grey or (H, W, 3) BGR), or None if not seen.

        ``prior``: (4, 4) predicted ``board2cam`` for this frame (e.g. the last pose moved by the
        camera's motion since); default: the last pose found. ``corner_noise_px`` and ``rng``: as
        for :func:`estimate_board_pose`.
        """
        gray = to_gray(image)
        maps = self._undistortion_maps(gray.shape)
        predicted = prior if prior is not None else self._extrapolated()
        found = None
        if predicted is not None and self.last is not None and self.config.corner_refinement == "ecc":
            found = self._align_predicted(gray, np.asarray(predicted, dtype=np.float64),
                                          corner_noise_px, rng)
            if found is not None:
                self.searches["track"] += 1
        if found is None and predicted is not None:
            roi = self._roi(np.asarray(predicted, dtype=np.float64), gray.shape)
            if roi is not None:
                quads, ids = self._detect_in(gray, *roi)
                wanted = max(self.config.min_markers, 1, len(self.last.marker_ids) if self.last else 1)
                if len(ids) >= wanted:
                    self.searches["roi"] += 1
                    found = _pose_from_markers(gray, quads, ids, self.board, self.camera_matrix,
                                               self.dist, self.config, predicted, corner_noise_px,
                                               rng, self._templates, maps)
        if found is None and predicted is None and self.coarse_search:
            self.searches["full"] += 1
            found = self._acquire(gray, corner_noise_px, rng, maps)
        elif found is None:
            self.searches["full"] += 1
            quads, ids = detect_board_markers(gray, self.board, self.camera_matrix, self.dist,
                                              self.detector, self.config)
            found = _pose_from_markers(gray, quads, ids, self.board, self.camera_matrix, self.dist,
                                       self.config, predicted, corner_noise_px, rng, self._templates,
                                       maps)
        self._before_last = None if found is None or self.last is None else self.last.board2cam
        self.last = found
        return found

    def _undistortion_maps(self, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        """The image's undistortion maps for ECC's windows, made once per image size."""
        size = (int(shape[1]), int(shape[0]))
        if self._maps is None or self._maps[0] != size:
            self._maps = (size, undistortion_maps(self.camera_matrix, self.dist, size))
        return self._maps[1]

    def _extrapolated(self) -> np.ndarray | None:
        """The last pose, carried on by the camera's motion between the two frames before (the
        same motion again: constant velocity per frame), or as it is with one pose known."""
        if self.last is None:
            return None
        if self._before_last is None:
            return self.last.board2cam
        last, before = self.last.board2cam, self._before_last
        # before^-1 @ last, with the rigid transform's inverse written out (R^T, -R^T t)
        back = before[:3, :3].T
        step = _EYE4.copy()
        step[:3, :3] = back @ last[:3, :3]
        step[:3, 3] = back @ (last[:3, 3] - before[:3, 3])
        return last @ step

    def _track_points(self, marker_ids: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """ids (N,) and board corners (4 N, 3) of a set of markers, kept from frame to frame."""
        points = self._track_cache.get(marker_ids)
        if points is None:
            if len(self._track_cache) >= 64:
                self._track_cache.clear()
            ids = np.asarray(marker_ids, dtype=int)
            points = self._track_cache[marker_ids] = (ids, self._corners[ids].reshape(-1, 3))
        return points

    def _align_predicted(self, gray: np.ndarray, predicted: np.ndarray, corner_noise_px: float,
                         rng: np.random.Generator | None) -> BoardPose | None:
        """The pose from the last frame's markers aligned by ECC straight from their predicted
        corners, no detection; None (detect) unless every one of them is in the image, aligns with
        a correlation of at least ``track_min_correlation`` and the pose explains them all within
        ``max_marker_rms_px``."""
        ids, obj = self._track_points(self.last.marker_ids)
        cam = obj @ predicted[:3, :3].T + predicted[:3, 3]
        if min(cam[:, 2].tolist()) <= 1e-3:
            return None
        px, _ = cv2.projectPoints(cam, _ZERO3, _ZERO3, self.camera_matrix, self.dist)
        xs, ys = px[:, 0, 0].tolist(), px[:, 0, 1].tolist()
        height, width = gray.shape[:2]
        top = max((xs[i + 1] - xs[i]) * (xs[i + 1] - xs[i]) + (ys[i + 1] - ys[i]) * (ys[i + 1] - ys[i])
                  for i in range(0, len(xs), 4))  # the longest top side, squared
        margin = 0.25 * math.sqrt(top) + 4.0
        if min(min(xs), min(ys)) < margin or max(xs) > width - margin or max(ys) > height - margin:
            return None
        # ECC starts from the predicted corners in ideal pixels: projected without distortion
        # (what undistorting the distorted projection would give back, without its iterations)
        ideal = cam @ self.camera_matrix.T
        ideal = (ideal[:, :2] / ideal[:, 2:]).reshape(-1, 4, 2)
        correlations: list = []
        config = self.config
        ideal = refine_ecc(gray, ideal, self.last.marker_ids, self._dictionary, self.camera_matrix, self.dist,
                           white_margin_cells=config.ecc_white_margin_cells, templates=self._templates,
                           max_side_px=config.ecc_max_side_px, coarse_first=config.ecc_coarse_first,
                           eps=config.ecc_eps, correlations=correlations, ideal_corners=True,
                           undistort_maps=self._maps[1] if self._maps else None)
        if any(rho is None or rho < self.track_min_correlation for rho in correlations):
            return None
        found = _pose_from_ideal(ideal, ids, self.board, self.camera_matrix, config, predicted,
                                 corner_noise_px, rng, obj)
        if (found is None or found.marker_ids != self.last.marker_ids
                or found.reprojection_error_px > config.max_marker_rms_px):
            return None
        return found

    def _roi(self, board2cam: np.ndarray, shape: tuple[int, ...]) -> tuple[int, int, int, int, float] | None:
        """(x0, y0, x1, y1, expected marker side px) of the region to search, or None (search
        the whole image)."""
        cam = self._outline @ board2cam[:3, :3].T + board2cam[:3, 3]
        if np.any(cam[:, 2] <= 1e-3):
            return None
        px, _ = cv2.projectPoints(cam, np.zeros(3), np.zeros(3), self.camera_matrix, self.dist)
        px = px.reshape(-1, 4, 2)
        height, width = shape[:2]
        lo, hi = px.reshape(-1, 2).min(axis=0), px.reshape(-1, 2).max(axis=0)
        margin = np.maximum(self.roi_margin * (hi - lo), self.min_margin_px)
        x0, y0 = np.floor(np.maximum(lo - margin, 0)).astype(int)
        x1, y1 = np.ceil(np.minimum(hi + margin, [width, height])).astype(int)
        if x1 - x0 < 16 or y1 - y0 < 16 or (x1 - x0) * (y1 - y0) > self.max_roi_fraction * width * height:
            return None
        sides = np.linalg.norm(np.roll(px, -1, axis=1) - px, axis=2).mean(axis=1)  # per marker
        side = float(sides.min()) / (1.0 + 2.0 / self._cells)  # the black square's side
        return int(x0), int(y0), int(x1), int(y1), side

    def _acquire(self, gray: np.ndarray, corner_noise_px: float, rng: np.random.Generator | None,
                 maps: tuple[np.ndarray, np.ndarray] | None) -> BoardPose | None:
        """The whole-image search without a prediction, coarse to fine (ArUco3's idea): markers
        and marker-like quads are looked for on the image halved (``pyrDown``, a quarter of the
        pixels); the board is then detected at full resolution only in the region a board marker
        found there spans (the board reaches ``_board_reach_sides`` of a marker's sides from its
        centre), or, where none could be read at half size, first in windows around the quads
        rejected there (too small or too blurred to decode, which is how the farthest markers
        look halved). Nothing marker-like at half size: None, without a full-size search. Fewer
        board markers at full size than were read at half size: the full-size search."""
        small = cv2.pyrDown(gray)
        corners, ids, rejected = self._coarse_detector.detectMarkers(small)
        ids = [] if ids is None else np.asarray(ids).ravel().tolist()
        # pyrDown's output pixel i is centred on input pixel 2i
        read = [2.0 * np.asarray(c, np.float64).reshape(4, 2) for c, i in zip(corners, ids, strict=True)
                if int(i) in self._board_ids]
        if not read:
            for quad in sorted((2.0 * np.asarray(c, np.float64).reshape(4, 2) for c in rejected),
                               key=lambda q: -_mean_side(q)):
                pad = _mean_side(quad) + 4.0
                x0, y0 = np.floor(np.maximum(quad.min(axis=0) - pad, 0)).astype(int)
                x1, y1 = np.ceil(np.minimum(quad.max(axis=0) + pad, gray.shape[1::-1])).astype(int)
                if x1 - x0 < 8 or y1 - y0 < 8:
                    continue
                found_corners, found_ids, _ = self._detect_raw(gray, int(x0), int(y0), int(x1), int(y1))
                read = [np.asarray(c, np.float64).reshape(4, 2)
                        for c, i in zip(found_corners, found_ids, strict=True) if int(i) in self._board_ids]
                if read:
                    break
            if not read:
                return None
        centres = np.array([q.mean(axis=0) for q in read])
        reach = self._board_reach_sides * 1.25 * np.array(
            [np.linalg.norm(np.roll(q, -1, axis=0) - q, axis=1).max() for q in read])
        x0, y0 = np.floor(np.maximum((centres - reach[:, None]).min(axis=0), 0)).astype(int)
        x1, y1 = np.ceil(np.minimum((centres + reach[:, None]).max(axis=0), gray.shape[1::-1])).astype(int)
        if (x1 - x0) * (y1 - y0) > self.max_roi_fraction * gray.size:
            quads, marker_ids = detect_board_markers(gray, self.board, self.camera_matrix, self.dist,
                                                     self.detector, self.config)
        else:
            quads, marker_ids = self._detect_in(gray, int(x0), int(y0), int(x1), int(y1))
        return _pose_from_markers(gray, quads, marker_ids, self.board, self.camera_matrix, self.dist,
                                  self.config, None, corner_noise_px, rng, self._templates, maps)

    def _detect_raw(self, gray: np.ndarray, x0: int, y0: int, x1: int, y1: int,
                    side: float | None = None) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
        """ArUco detection in the window: corners, ids (N,) and rejected quads, in whole-image
        pixels. With ``side``, for markers of that black-square side in px: one threshold window
        and a smallest perimeter chosen for them, the window shrunk when they are large; without,
        the whole-image search's detector on the window."""
        window = gray[y0:y1, x0:x1]
        if side is None:
            params = self._window_params
            smallest = self.detector.getDetectorParameters().minMarkerPerimeterRate * max(gray.shape)
            params.minMarkerPerimeterRate = float(min(smallest / max(window.shape), 4.0))
            self._window_detector.setDetectorParameters(params)
            corners, ids, rejected = self._window_detector.detectMarkers(window)
            if ids is None or len(ids) == 0:
                return [], np.zeros(0, dtype=int), []
            offset = np.array([x0, y0], dtype=np.float32)
            return ([np.asarray(c, np.float32) + offset for c in corners], np.asarray(ids).ravel(),
                    [np.asarray(c, np.float32) + offset for c in rejected])
        params = self._roi_params
        scale = np.ones(2)
        if side > self.detect_side_px:  # large markers: detect on the region shrunk (area average)
            f = self.detect_side_px / side
            size = (max(16, round((x1 - x0) * f)), max(16, round((y1 - y0) * f)))
            window = cv2.resize(window, size, interpolation=cv2.INTER_AREA)
            scale = np.array([size[0] / (x1 - x0), size[1] / (y1 - y0)])
            side *= float(scale.mean())
        threshold = int(np.clip(round(self.threshold_window_cells * side / self._cells), 3, 63)) | 1
        params.adaptiveThreshWinSizeMin = params.adaptiveThreshWinSizeMax = threshold
        params.adaptiveThreshWinSizeStep = 2
        params.minMarkerPerimeterRate = float(np.clip(2.0 * side / max(window.shape), 1e-3, 4.0))
        self._roi_detector.setDetectorParameters(params)
        corners, ids, rejected = self._roi_detector.detectMarkers(window)
        if ids is None or len(ids) == 0:
            return [], np.zeros(0, dtype=int), []
        offset, scale = np.array([x0, y0], dtype=np.float32), scale.astype(np.float32)
        corners = [(np.asarray(c, np.float32) + 0.5) / scale - 0.5 + offset for c in corners]
        rejected = [(np.asarray(c, np.float32) + 0.5) / scale - 0.5 + offset for c in rejected]
        return corners, np.asarray(ids).ravel(), rejected

    def _detect_in(self, gray: np.ndarray, x0: int, y0: int, x1: int, y1: int,
                   side: float | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """Board markers found in the window (corners in whole-image pixels; ``side``: see
        ``_detect_raw``), missed ones recovered on the whole image as
        :func:`detect_board_markers` does."""
        corners, ids, rejected = self._detect_raw(gray, x0, y0, x1, y1, side)
        if len(ids) == 0:
            return [], np.zeros(0, dtype=int)
        config = self.config
        board_ids = self._board_ids
        if config.recover_missing and not board_ids <= set(ids.tolist()):
            corners, ids, _, _ = self.detector.refineDetectedMarkers(
                gray, self.board, corners, ids.reshape(-1, 1), rejected, self.camera_matrix, self.dist)
        keep = [i for i, mid in enumerate(np.asarray(ids).ravel()) if int(mid) in board_ids]
        quads = [np.asarray(corners[i], dtype=np.float64).reshape(4, 2) for i in keep]
        if config.detector_refinement == "apriltag":
            quads = [q - APRILTAG_CORNER_OFFSET_PX for q in quads]
        return quads, np.asarray(ids).ravel()[keep].astype(int)


def _mean_side(quad: np.ndarray) -> float:
    """Mean side of a (4, 2) quadrilateral, px."""
    return float(np.linalg.norm(np.roll(quad, -1, axis=0) - quad, axis=1).mean())
