"""Planar PnP with its two-fold ambiguity resolved: ``board2cam`` from a board's points and their
ideal pixels (pure functions, no state).

Step 3 of :func:`orbitree.skills.board.estimate_board_pose`'s pipeline (``board.py``'s docstring
gives the comparison behind the defaults): ``cv2.solvePnPGeneric`` with ``SOLVEPNP_IPPE`` returns
both planar candidates (SQPNP for non-planar points), each polished by Levenberg-Marquardt (or
VVS); the lower RMS reprojection error wins unless a prior pose decides between two that explain
the image about equally well. :func:`solve_board_pose` is the checked entry point;
``_solve_pose`` the one the pipeline (``board_pipeline.py``) calls on arrays it has checked.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

import cv2
import numpy as np

__all__ = ["PnpMethod", "PoseRefinement", "solve_board_pose"]

PnpMethod = Literal["ippe", "sqpnp", "iterative"]
PoseRefinement = Literal["none", "lm", "vvs"]


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
