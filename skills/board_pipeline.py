"""The steps of the board pose pipeline, shared by :func:`orbitree.skills.board.estimate_board_pose`
(one image) and :class:`orbitree.skills.board_tracker.BoardTracker` (frame after frame).

:class:`BoardEstimatorConfig` (how to detect, refine and solve) and :class:`BoardPose` (the
result); step 1, marker detection with recovery of missed board markers (:func:`make_detector`,
:func:`detect_board_markers`); step 2, corner refinement to ideal pixels (:func:`refine_corners`,
ECC by default: ``marker_refine.py``); steps 3-4 on refined corners, PnP (``board_pnp.py``) and
the one-outlier-marker check (``_pose_from_markers``, ``_pose_from_ideal``). The pipeline, the
measured comparison of its methods and why ECC: ``board.py``'s docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from orbitree.skills.board_pnp import PnpMethod, PoseRefinement, _solve_pose
from orbitree.skills.marker_refine import (
    refine_corner_subpix,
    refine_ecc,
    refine_edge_lines,
    undistort_corners,
)

__all__ = [
    "APRILTAG_CORNER_OFFSET_PX",
    "BoardEstimatorConfig",
    "BoardPose",
    "CornerRefinement",
    "DetectorRefinement",
    "detect_board_markers",
    "make_detector",
    "refine_corners",
]

DetectorRefinement = Literal["none", "subpix", "contour", "apriltag"]
CornerRefinement = Literal["none", "cornersubpix", "edgelines", "ecc"]

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
    """How to detect, refine and solve. Defaults: the best method of the comparison in
    ``board.py``'s docstring.

    detector_refinement : the ArucoDetector's own corner refinement.
    subpix_window_px, subpix_relative_window : its SUBPIX half-window, px, and cap relative to
        the marker cell (OpenCV uses the smaller).
    recover_missing : ``refineDetectedMarkers`` with the board layout.
    corner_refinement : second refinement ("ecc", "edgelines", "cornersubpix", "none").
    ecc_white_margin_cells : white quiet zone certainly printed around each marker, in cells
        (used by "ecc" and "edgelines"; SIROM: 1 mm of a 2 mm cell).
    pnp, pose_refinement : solver and polish (see ``board.py``'s docstring).
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
