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

Where things live: this module holds :func:`estimate_board_pose` and re-exports the rest, so that
all of it imports from ``orbitree.skills.board``: the configuration, the result and the steps
(detection, corner refinement, the outlier check) in ``board_pipeline.py``, the PnP of step 3 in
``board_pnp.py``, the board model in ``board_model.py``, and :class:`BoardTracker` (frame after
frame) in ``board_tracker.py``.
"""

from __future__ import annotations

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
from orbitree.skills.board_pipeline import (  # re-exported: the pipeline's configuration and steps live there
    APRILTAG_CORNER_OFFSET_PX,
    BoardEstimatorConfig,
    BoardPose,
    CornerRefinement,
    DetectorRefinement,
    _pose_from_markers,
    detect_board_markers,
    make_detector,
    refine_corners,
)
from orbitree.skills.board_pnp import (  # re-exported: the PnP lives there
    PnpMethod,
    PoseRefinement,
    solve_board_pose,
)
from orbitree.skills.board_tracker import TRACKER_CONFIG, BoardTracker  # re-exported: the tracker lives there
from orbitree.skills.marker_refine import to_gray

__all__ = [
    "APRILTAG_CORNER_OFFSET_PX",
    "TRACKER_CONFIG",
    "BoardEstimatorConfig",
    "BoardModel",
    "BoardPose",
    "BoardTracker",
    "CornerRefinement",
    "DetectorRefinement",
    "PnpMethod",
    "PoseRefinement",
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
