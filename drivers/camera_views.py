"""A directory of calibration views (images with the arm's pose at each), and its calibration.

The format, written by the ``calibration_views`` leaf and read by the ``calibrate_camera`` leaf
and ``orbitree calibrate camera DIR``; on a real bench, take the pictures and note the poses
yourself::

    DIR/poses.yaml
    DIR/view_00.png, view_01.png, ...        (grey or colour, any format cv2.imread reads)

``poses.yaml``::

    board: {squares: [7, 5], square: 0.04, marker: 0.03, dictionary: DICT_5X5_100}   # m
    views:
      - image: view_00.png
        tcp2base: [[r11, r12, r13, x], [r21, r22, r23, y], [r31, r32, r33, z], [0, 0, 0, 1]]  # m
      - image: view_01.png
        tcp_pose: [x, y, z, rx, ry, rz]    # or the UR's getActualTCPPose: m and a rotation vector (rad)

Each view's ``tcp2base`` is the pose the arm reported when the picture was taken (at rest).
:func:`calibrate_views` detects the ChArUco corners, calibrates the intrinsics and solves the
hand-eye mount by every method of :data:`orbitree.skills.charuco.HAND_EYE_METHODS`, choosing the
one whose board placements agree best (:func:`orbitree.skills.charuco.hand_eye_spread`), which
needs no ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml
from scipy.spatial.transform import Rotation

from orbitree.drivers.bounded_yaml import TextTooLarge, read_limited, safe_load
from orbitree.drivers.calibration_io import CalibrationFileError, check_mount, save_camera_calibration
from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.skills import charuco

POSES_FILE = "poses.yaml"


@dataclass
class ViewSet:
    """The board and, per view, its image file and ``tcp2base`` (4, 4)."""

    board: charuco.CharucoSpec
    images: list[Path] = field(default_factory=list)
    tcp2base: list[np.ndarray] = field(default_factory=list)


def write_views(directory: Path, board: charuco.CharucoSpec, images: list[str], tcp2base: list[np.ndarray],
                extra: dict[str, Any] | None = None) -> Path:
    """Write ``poses.yaml`` for images already saved in ``directory``; its path."""
    data = {"board": {"squares": list(board.squares), "square": board.square_m, "marker": board.marker_m,
                      "dictionary": board.dictionary},
            "views": [{"image": name, "tcp2base": np.round(pose, 9).tolist()}
                      for name, pose in zip(images, tcp2base, strict=True)]}
    data |= extra or {}
    path = Path(directory) / POSES_FILE
    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120))
    return path


def read_views(directory: str | Path) -> ViewSet:
    """The views of ``directory`` (see the module notes); :class:`CalibrationFileError` naming the
    file and the key of anything missing or malformed."""
    directory = Path(directory)
    path = directory / POSES_FILE
    if not path.is_file():
        raise CalibrationFileError(path, f"no {POSES_FILE} (the views' images and arm poses) in {directory}")
    try:
        data = safe_load(read_limited(path).decode("utf-8"))
    except (TextTooLarge, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CalibrationFileError(path, f"not a poses file: {exc}") from None
    if not isinstance(data, dict) or "board" not in data or "views" not in data:
        raise CalibrationFileError(path, "needs 'board' ({squares, square, marker, dictionary}) and 'views'")
    raw = data["board"]
    try:
        board = charuco.CharucoSpec(tuple(raw.get("squares", (7, 5))), float(raw["square"]), float(raw["marker"]),
                                    str(raw.get("dictionary", "DICT_5X5_100")))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CalibrationFileError(path, f"'board': {exc}") from None
    views = ViewSet(board)
    if not isinstance(data["views"], list):
        raise CalibrationFileError(path, "'views' must be a list of {image, tcp2base | tcp_pose}")
    for i, view in enumerate(data["views"]):
        where = f"views[{i}]"
        if not isinstance(view, dict) or "image" not in view:
            raise CalibrationFileError(path, f"{where}: needs 'image' and 'tcp2base' or 'tcp_pose'")
        image = directory / str(view["image"])
        if not image.is_file():
            raise CalibrationFileError(path, f"{where}.image: {image} not found")
        if "tcp2base" in view:
            try:
                pose = check_mount(path, view["tcp2base"])
            except CalibrationFileError as exc:
                problem = exc.problem.replace("'cam2tcp' ", "")
                raise CalibrationFileError(path, f"{where}.tcp2base: {problem}") from None
        elif "tcp_pose" in view:
            vector = np.asarray(view["tcp_pose"], dtype=float) if isinstance(view["tcp_pose"], list) else None
            if vector is None or vector.shape != (6,) or not np.all(np.isfinite(vector)):
                raise CalibrationFileError(path, f"{where}.tcp_pose: must be 6 numbers [x, y, z, rx, ry, rz]")
            pose = np.eye(4)
            pose[:3, :3] = Rotation.from_rotvec(vector[3:]).as_matrix()
            pose[:3, 3] = vector[:3]
        else:
            raise CalibrationFileError(path, f"{where}: needs 'tcp2base' (4x4) or 'tcp_pose' (6 values)")
        views.images.append(image)
        views.tcp2base.append(pose)
    return views


@dataclass
class CameraCalibration:
    """What :func:`calibrate_views` found: the intrinsics, every method's mount and its spread
    (board position m, angle deg), the chosen method, and how many views were used."""

    intrinsics: CameraIntrinsics
    rms_px: float
    mounts: dict[str, np.ndarray]
    spreads: dict[str, tuple[float, float]]
    method: str
    views_used: int
    views_total: int

    @property
    def cam2tcp(self) -> np.ndarray:
        return self.mounts[self.method]

    def write(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_camera_calibration(path, self.intrinsics, self.cam2tcp, reprojection_error_px=self.rms_px,
                                hand_eye_method=self.method)


def detect_image(path: Path, board: charuco.CharucoSpec) -> tuple[charuco.Detection, tuple[int, int]]:
    """The corners in one image file, and its (width, height)."""
    image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise CalibrationFileError(path, "not an image cv2.imread can read")
    return charuco.detect(image, board), (image.shape[1], image.shape[0])


def calibrate_views(
    detections: list[charuco.Detection], tcp2base: list[np.ndarray], board: charuco.CharucoSpec,
    image_size: tuple[int, int], guess: np.ndarray | None = None, method: str = "auto",
) -> CameraCalibration:
    """Intrinsics and hand-eye mount from detected views (``method``: one of OpenCV's, or
    ``auto``: the one with the smallest spread). ValueError with too few usable views."""
    result = charuco.calibrate_intrinsics(detections, image_size, guess)
    arm = [tcp2base[i] for i in result.views]
    mounts, spreads = {}, {}
    for name in charuco.HAND_EYE_METHODS:
        mounts[name] = charuco.hand_eye(arm, result.board2cam, name)
        spreads[name] = charuco.hand_eye_spread(arm, result.board2cam, mounts[name], board.centre)
    if method == "auto":
        method = min(spreads, key=lambda m: spreads[m][0] + 1e-3 * spreads[m][1])
    elif method not in mounts:
        raise ValueError(f"unknown hand-eye method {method!r}; auto or one of {', '.join(mounts)}")
    intrinsics = CameraIntrinsics(result.camera_matrix, result.dist_coeffs, int(image_size[0]), int(image_size[1]))
    return CameraCalibration(intrinsics, result.rms_px, mounts, spreads, method, len(result.views),
                             len(detections))
