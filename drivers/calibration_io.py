"""Read and write camera intrinsics files.

Two formats are read, both keyed by the names OpenCV's calibration sample writes
(``samples/cpp/calibration.cpp`` and the ``camera_calibration`` tutorial):

* **OpenCV FileStorage** (YAML, JSON or XML) as written by ``cv2.FileStorage``::

      %YAML 1.2
      ---
      image_width: 1280
      image_height: 720
      camera_matrix: !!opencv-matrix {rows: 3, cols: 3, dt: d, data: [...]}
      distortion_coefficients: !!opencv-matrix {rows: 5, cols: 1, dt: d, data: [...]}

  Other keys the sample writes (``avg_reprojection_error``, ``extrinsic_parameters``, ...) are
  ignored.

* **Plain YAML** (orbitree's own, easy to write by hand), the same keys as plain values::

      image_width: 1280
      image_height: 720
      camera_matrix: [[900.0, 0.0, 640.0], [0.0, 900.0, 360.0], [0.0, 0.0, 1.0]]
      distortion_coefficients: [0.1, -0.05, 0.0, 0.0, 0.0]

  ``camera_matrix`` may also be nine numbers row by row, or be replaced by ``fx``, ``fy``,
  ``cx``, ``cy``.

A file is treated as FileStorage when it is XML, starts with a ``%YAML`` directive or mentions
``opencv-matrix``; otherwise it is loaded with ``yaml.safe_load`` within the bounds of
:mod:`orbitree.drivers.bounded_yaml` (size, aliases, nesting), which also bound the file read.

The hand-eye result (the camera's pose in the TCP frame, ``cam2tcp``) is a third key of the
same files, a 4x4 matrix (``!!opencv-matrix`` or nested lists), read by :func:`load_mount`
(``camera.mount: FILE`` in a mission); :func:`save_camera_calibration` writes intrinsics, mount
and what the calibration measured (``avg_reprojection_error``, ``hand_eye_method``) in one file.

Distortion: :class:`CameraIntrinsics` carries OpenCV's five coefficients (k1, k2, p1, p2, k3).
Four coefficients are padded with k3 = 0; longer vectors (rational, thin-prism, tilted models)
are accepted only when the extra terms are zero.
"""

from __future__ import annotations

import codecs
import math
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml

from orbitree.drivers.bounded_yaml import TextTooLarge, read_limited, safe_load
from orbitree.drivers.interfaces import CameraIntrinsics

__all__ = ["CalibrationFileError", "load_intrinsics", "load_mount", "save_camera_calibration", "save_intrinsics"]

_MATRIX_KEY = "camera_matrix"
_DIST_KEY = "distortion_coefficients"
_WIDTH_KEY = "image_width"
_HEIGHT_KEY = "image_height"
_MOUNT_KEY = "cam2tcp"
ROTATION_TOLERANCE = 1e-6
"""``cam2tcp``'s rotation block may differ from an exact rotation by this much (max |R^T R - I|)."""


class CalibrationFileError(ValueError):
    """A calibration file is missing, unreadable or lacks a required value."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def load_intrinsics(path: str | Path) -> CameraIntrinsics:
    """Load camera intrinsics from an OpenCV FileStorage file or a plain YAML file.

    Raises :class:`CalibrationFileError` naming the file and what is missing or malformed.
    """
    path = Path(path)
    return _build(path, _read_raw(path, (_MATRIX_KEY, _DIST_KEY)))


def _read_raw(path: Path, matrices: tuple[str, ...]) -> dict[str, Any]:
    """The calibration keys of ``path`` as read (matrices named in ``matrices`` from FileStorage)."""
    if not path.is_file():
        raise CalibrationFileError(path, "calibration file not found")
    try:
        raw = read_limited(path)
    except TextTooLarge as exc:
        raise CalibrationFileError(path, f"not a calibration file: {exc}") from None
    except OSError as exc:
        raise CalibrationFileError(path, f"cannot read calibration file ({exc.strerror or exc})") from exc
    try:
        text = raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(raw[: exc.start].decode("utf-8", "replace"))
        raise CalibrationFileError(path, f"line {line}, column {col}: not UTF-8 text (byte "
                                         f"0x{raw[exc.start]:02x})") from None
    if _is_file_storage(path, text):
        _check_nesting(path, text)  # OpenCV's parsers recurse per level: deep nesting crashes them
        return _read_file_storage(path, text, matrices)
    return _read_plain_yaml(path, text)


def load_mount(path: str | Path) -> np.ndarray:
    """The hand-eye mount ``cam2tcp`` (4, 4) of a calibration file (key ``cam2tcp``).

    Raises :class:`CalibrationFileError` naming the file and the key: missing, not 4x4, last row
    not ``[0, 0, 0, 1]``, or a rotation block that is not a rotation (orthonormal, det +1).
    """
    path = Path(path)
    raw = _read_raw(path, (_MOUNT_KEY,))
    if _MOUNT_KEY not in raw:
        raise CalibrationFileError(path, f"missing {_MOUNT_KEY!r} (the camera's pose in the TCP frame, a 4x4 "
                                         "matrix: write it with 'orbitree calibrate camera')")
    return check_mount(path, raw[_MOUNT_KEY])


def check_mount(path: Path, value: Any) -> np.ndarray:
    """``value`` as a rigid transform (4, 4), or :class:`CalibrationFileError` naming ``cam2tcp``."""
    matrix = _as_float_array(path, _MOUNT_KEY, value)
    if matrix.shape not in ((4, 4), (16,)):
        raise CalibrationFileError(path, f"{_MOUNT_KEY!r} must be 4x4, got shape {matrix.shape}")
    matrix = matrix.reshape(4, 4)
    if not np.allclose(matrix[3], [0.0, 0.0, 0.0, 1.0]):
        raise CalibrationFileError(path, f"{_MOUNT_KEY!r} last row must be [0, 0, 0, 1], got {matrix[3].tolist()}")
    rotation = matrix[:3, :3]
    deviation = float(np.abs(rotation.T @ rotation - np.eye(3)).max())
    determinant = float(np.linalg.det(rotation))
    if deviation > ROTATION_TOLERANCE or determinant < 0.0:
        raise CalibrationFileError(
            path, f"{_MOUNT_KEY!r} rotation block is not a rotation (|R^T R - I| = {deviation:.2g}, "
                  f"det = {determinant:.6g}; want orthonormal with det +1)")
    return matrix


def save_camera_calibration(
    path: str | Path, intrinsics: CameraIntrinsics, cam2tcp: np.ndarray | None = None,
    *, reprojection_error_px: float | None = None, hand_eye_method: str | None = None,
) -> None:
    """Write intrinsics, the hand-eye mount and what the calibration measured to one OpenCV
    FileStorage file: what ``camera.calibration`` and ``camera.mount`` read."""
    save_intrinsics(path, intrinsics, _extras={
        _MOUNT_KEY: None if cam2tcp is None else np.asarray(cam2tcp, dtype=np.float64),
        "avg_reprojection_error": reprojection_error_px, "hand_eye_method": hand_eye_method})


def save_intrinsics(path: str | Path, intrinsics: CameraIntrinsics, _extras: dict[str, Any] | None = None) -> None:
    """Write ``intrinsics`` with ``cv2.FileStorage`` (JSON for ``.json``, XML for ``.xml``,
    YAML otherwise), readable by :func:`load_intrinsics` and by OpenCV tools."""
    path = Path(path)
    flags = cv2.FILE_STORAGE_WRITE
    if path.suffix.lower() == ".json":
        flags |= cv2.FILE_STORAGE_FORMAT_JSON
    storage = cv2.FileStorage(str(path), flags)
    if not storage.isOpened():
        raise CalibrationFileError(path, "cannot open calibration file for writing")
    try:
        storage.write(_WIDTH_KEY, int(intrinsics.width))
        storage.write(_HEIGHT_KEY, int(intrinsics.height))
        storage.write(_MATRIX_KEY, np.asarray(intrinsics.camera_matrix, dtype=np.float64))
        dist = np.asarray(intrinsics.dist_coeffs, dtype=np.float64).reshape(-1, 1)
        storage.write(_DIST_KEY, dist)
        for key, value in (_extras or {}).items():
            if value is not None:
                storage.write(key, float(value) if isinstance(value, float) else value)
    finally:
        storage.release()


def _position(before: str) -> tuple[int, int]:
    """1-based line and column of the character that follows the text ``before``."""
    line = before.count("\n") + 1
    return line, len(before) - (before.rfind("\n") + 1) + 1


# Nesting levels of brackets or XML elements in an OpenCV FileStorage file. Calibration files
# nest 2 or 3 levels deep; OpenCV 5's YAML, JSON and XML parsers recurse once a level and crash
# the process (a segmentation fault, no exception) between 20,000 and 40,000 levels on an 8 MB
# stack (sooner on a thread's smaller one), which 80 kB of '[' reach within the file size bound.
# Counted naively (brackets in strings count too): no calibration file has brackets in its strings.
MAX_FILE_STORAGE_DEPTH = 64

_OPENERS = re.compile(r"[\[{\]}]|<(/?)[A-Za-z_][^<>]*?(/?)>")


def _check_nesting(path: Path, text: str) -> None:
    depth = 0
    for match in _OPENERS.finditer(text):
        token = match.group(0)
        if token in "]}" or (token.startswith("<") and match.group(1)):
            depth = max(depth - 1, 0)
        elif token in "[{" or not match.group(2):
            depth += 1
            if depth > MAX_FILE_STORAGE_DEPTH:
                line, col = _position(text[: match.start()])
                raise CalibrationFileError(path, f"line {line}, column {col}: nested more than "
                                                 f"{MAX_FILE_STORAGE_DEPTH} levels deep")


def _is_file_storage(path: Path, text: str) -> bool:
    if path.suffix.lower() == ".xml":
        return True
    return text.lstrip().startswith("%YAML") or "opencv-matrix" in text


def _read_file_storage(
    path: Path, _text: str, matrices: tuple[str, ...] = (_MATRIX_KEY, _DIST_KEY)
) -> dict[str, Any]:
    try:
        storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    except (cv2.error, SystemError) as exc:  # OpenCV 5 wraps parse errors in SystemError
        raise CalibrationFileError(
            path, f"not a valid OpenCV FileStorage file ({_cv_reason(exc)})"
        ) from exc
    if not storage.isOpened():
        raise CalibrationFileError(path, "OpenCV FileStorage could not open the file")
    try:
        raw: dict[str, Any] = {}
        for key in matrices:
            node = storage.getNode(key)
            if not (node.empty() or node.isNone()):
                raw[key] = _read_matrix_node(path, key, node)
        for key in (_WIDTH_KEY, _HEIGHT_KEY):
            node = storage.getNode(key)
            if node.empty() or node.isNone():
                continue
            raw[key] = node.real() if (node.isInt() or node.isReal()) else node.string()
        return raw
    finally:
        storage.release()


def _read_matrix_node(path: Path, key: str, node: cv2.FileNode) -> Any:
    if node.isSeq():
        return [node.at(i).real() for i in range(node.size())]
    if node.isMap():
        try:
            matrix = node.mat()
        except cv2.error as exc:
            raise CalibrationFileError(
                path, f"{key!r} is not a readable opencv-matrix ({_cv_reason(exc)})"
            ) from exc
        if matrix is not None:
            return matrix
    return node.string() or "<not a matrix>"


def _cv_reason(exc: BaseException) -> str:
    cause = exc.__cause__ if isinstance(exc.__cause__, cv2.error) else exc
    message = getattr(cause, "msg", None) or str(cause)
    return " ".join(message.split())


def _read_plain_yaml(path: Path, text: str) -> dict[str, Any]:
    try:
        data = safe_load(text)  # bounded: an alias bomb here would hang np.asarray below
    except TextTooLarge as exc:
        raise CalibrationFileError(path, f"not a calibration file: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise CalibrationFileError(path, f"malformed YAML: {where}{exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise CalibrationFileError(path, f"malformed YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise CalibrationFileError(
            path, f"expected a mapping of calibration keys, got {type(data).__name__}"
        )
    if _MATRIX_KEY not in data and all(k in data for k in ("fx", "fy", "cx", "cy")):
        data = dict(data)
        data[_MATRIX_KEY] = [
            [data["fx"], 0.0, data["cx"]],
            [0.0, data["fy"], data["cy"]],
            [0.0, 0.0, 1.0],
        ]
    return data


def _build(path: Path, raw: dict[str, Any]) -> CameraIntrinsics:
    missing = [k for k in (_MATRIX_KEY, _DIST_KEY, _WIDTH_KEY, _HEIGHT_KEY) if k not in raw]
    if missing:
        raise CalibrationFileError(
            path,
            f"missing {', '.join(repr(k) for k in missing)} (a calibration file needs "
            f"{_MATRIX_KEY!r} 3x3, {_DIST_KEY!r} (4 or 5 values), {_WIDTH_KEY!r} and "
            f"{_HEIGHT_KEY!r} in pixels)",
        )
    return CameraIntrinsics(
        camera_matrix=_camera_matrix(path, raw[_MATRIX_KEY]),
        dist_coeffs=_dist_coeffs(path, raw[_DIST_KEY]),
        width=_positive_int(path, _WIDTH_KEY, raw[_WIDTH_KEY]),
        height=_positive_int(path, _HEIGHT_KEY, raw[_HEIGHT_KEY]),
    )


def _as_float_array(path: Path, key: str, value: Any) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CalibrationFileError(path, f"{key!r} must be numbers, got {_short(value)}") from exc
    if not np.all(np.isfinite(array)):
        raise CalibrationFileError(path, f"{key!r} contains non-finite values: {_short(value)}")
    return array


def _camera_matrix(path: Path, value: Any) -> np.ndarray:
    matrix = _as_float_array(path, _MATRIX_KEY, value)
    if matrix.size != 9:
        raise CalibrationFileError(path, f"{_MATRIX_KEY!r} must be 3x3, got shape {matrix.shape}")
    matrix = matrix.reshape(3, 3)
    if matrix[0, 0] <= 0 or matrix[1, 1] <= 0:
        raise CalibrationFileError(
            path,
            f"{_MATRIX_KEY!r} focal lengths must be > 0, got fx={matrix[0, 0]}, fy={matrix[1, 1]}",
        )
    if not np.allclose(matrix[2], [0.0, 0.0, 1.0]):
        raise CalibrationFileError(
            path, f"{_MATRIX_KEY!r} last row must be [0, 0, 1], got {matrix[2].tolist()}"
        )
    return matrix


def _dist_coeffs(path: Path, value: Any) -> np.ndarray:
    coeffs = _as_float_array(path, _DIST_KEY, value).ravel()
    if coeffs.size == 4:
        return np.append(coeffs, 0.0)
    if coeffs.size == 5:
        return coeffs
    if coeffs.size in (8, 12, 14) and np.allclose(coeffs[5:], 0.0):
        return coeffs[:5].copy()
    raise CalibrationFileError(
        path,
        f"{_DIST_KEY!r} must hold 4 or 5 values (k1, k2, p1, p2[, k3]); got {coeffs.size}"
        + (" with non-zero higher-order terms" if coeffs.size in (8, 12, 14) else ""),
    )


def _positive_int(path: Path, key: str, value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CalibrationFileError(path, f"{key!r} must be an integer, got {_short(value)}") from exc
    if not math.isfinite(number) or number <= 0 or number != int(number):
        raise CalibrationFileError(path, f"{key!r} must be a positive integer, got {_short(value)}")
    return int(number)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
