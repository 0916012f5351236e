"""The web view's camera panel: an arm's latest frame, downscaled to a JPEG, with what perception
sees drawn on it — the board's markers found in the frame (outlined, first corner dotted, id
written) and the board's axes projected from the perception's estimate (``pose_cam``, x red,
y green, z blue) when that estimate comes from this very frame.

The markers are found again here (the same detector as ``perceive``: ``orbitree.skills.board``)
on the full frame, in the web view's camera thread, at ``CAMERA_HZ`` and only while a browser
watches; OpenCV releases the GIL while it works, so the tick loop does not wait for it
(``benchmarks/viewer_overhead.py`` measures it). Images are not written to the mission log:
a replay's camera panel says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from orbitree.skills.board import BoardEstimatorConfig, detect_board_markers, make_detector
from orbitree.skills.board_model import BOARDS, make_aruco_board

CAMERA_HZ = 2.0  # annotated images per second and arm
WIDTH_PX = 640  # width of the served image
JPEG_QUALITY = 80
AXIS_M = 0.03  # length of the drawn board axes


@dataclass
class CameraSetup:
    """What the panel needs of one arm's camera: intrinsics and the board it looks for."""

    robot: str
    camera_matrix: np.ndarray  # (3, 3)
    dist_coeffs: np.ndarray
    target: str | None
    board: Any = None  # cv2.aruco.Board
    detector: Any = None

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> dict[str, CameraSetup]:
        """One setup per arm with a camera in the header's scene (and the target its
        ``perceive`` looks for, if any)."""
        from orbitree.runtime.scene import observers_of

        scene = header.get("scene") or {}
        boards = {b["name"]: b.get("board") for b in scene.get("bodies", [])}
        watched = {robot: target for target, robot in observers_of(header.get("nodes", [])).items()}
        out = {}
        for robot, spec in (scene.get("robots") or {}).items():
            camera = spec.get("camera")
            if not camera or "k" not in camera:
                continue
            target = watched.get(robot)
            board = detector = None
            name = boards.get(target) if target is not None else None
            if name in BOARDS:
                board = make_aruco_board(BOARDS[name]())
                detector = make_detector(board, BoardEstimatorConfig())
            out[robot] = cls(robot, np.asarray(camera["k"], float).reshape(3, 3),
                             np.asarray(camera.get("dist") or np.zeros(5), float), target, board, detector)
        return out


def annotate(frame_image: np.ndarray, setup: CameraSetup, board2cam: np.ndarray | None,
             width: int = WIDTH_PX) -> tuple[bytes, dict[str, Any]]:
    """The JPEG of ``frame_image`` ((H, W) grey or (H, W, 3) BGR) at ``width`` pixels with the
    detections drawn, and its description: ``markers`` (ids found), ``corners`` (their 4 corners
    each, in the served image's pixels), ``axes`` (projected origin, x, y, z tips, or None)."""
    image = np.asarray(frame_image)
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    height, full = gray.shape[:2]
    quads: list[np.ndarray] = []
    ids = np.zeros(0, dtype=int)
    if setup.board is not None:
        quads, ids = detect_board_markers(gray, setup.board, setup.camera_matrix, setup.dist_coeffs,
                                          setup.detector, BoardEstimatorConfig())
    scale = min(1.0, width / full)
    size = (max(1, round(full * scale)), max(1, round(height * scale)))
    small = cv2.resize(gray, size, interpolation=cv2.INTER_AREA) if scale < 1.0 else gray
    out = cv2.cvtColor(small, cv2.COLOR_GRAY2BGR)
    corners = []
    for quad, marker in zip(quads, ids, strict=True):
        points = quad * scale
        corners.append([[round(float(x), 1), round(float(y), 1)] for x, y in points])
        cv2.polylines(out, [np.round(points * 16).astype(np.int32)], True, (40, 220, 40), 2, cv2.LINE_AA, 4)
        cv2.circle(out, tuple(np.round(points[0]).astype(int)), 4, (40, 220, 40), -1, cv2.LINE_AA)
        label = np.round(points.mean(axis=0) + np.array([-6.0, 5.0])).astype(int)
        cv2.putText(out, str(int(marker)), tuple(label), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 255, 255), 1,
                    cv2.LINE_AA)
    axes = None
    if board2cam is not None:
        pose = np.asarray(board2cam, float)
        ends = np.array([[0, 0, 0], [AXIS_M, 0, 0], [0, AXIS_M, 0], [0, 0, AXIS_M]], float)
        rvec, _ = cv2.Rodrigues(pose[:3, :3])
        projected, _ = cv2.projectPoints(ends, rvec, pose[:3, 3], setup.camera_matrix, setup.dist_coeffs)
        points = projected.reshape(-1, 2) * scale
        if np.isfinite(points).all():
            axes = [[round(float(x), 1), round(float(y), 1)] for x, y in points]
            origin = tuple(np.round(points[0] * 16).astype(int))
            for tip, colour in zip(points[1:], ((40, 40, 230), (40, 200, 40), (230, 90, 30)), strict=True):
                cv2.line(out, origin, tuple(np.round(tip * 16).astype(int)), colour, 2, cv2.LINE_AA, 4)
    ok, jpeg = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    info = {"width": size[0], "height": size[1], "markers": [int(m) for m in ids], "corners": corners,
            "axes": axes, "target": setup.target}
    return jpeg.tobytes(), info
