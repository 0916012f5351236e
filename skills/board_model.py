"""Marker board models: which ArUco markers sit where on a target, in the target's own frame.

A board is a set of square ArUco markers of one dictionary, each given by its four corners in
the board frame (metres), in OpenCV's marker order: top-left, top-right, bottom-right,
bottom-left (clockwise when the board is seen from the front, i.e. from +z).

The SIROM board is the one of the SIROM self-coupling paper ([SIROM] in the README's Sources,
section 3.1, eqs. 1-3): three 7x7 markers, ids 0, 1 and 2, side 18 mm, each with a 1 mm white
border, on the passive SIROM's connection triangle. Its corner table is used exactly as
published (in cm). The published values are rounded, so markers 1 and 2 are not perfect squares
(the largest departure from "marker 0 rotated by ∓120°" is 0.11 mm, marker 2 BL x); the
simulator prints the markers on these corners, so model and rendered world agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import cv2
import numpy as np

#: The SIROM paper's table ([SIROM], eqs. 1-3): corners in cm in the SIROM frame, order TL, TR, BR, BL.
SIROM_CORNERS_CM: dict[int, tuple[tuple[float, float, float], ...]] = {
    0: ((0.1, 3.9, 0.0), (1.9, 3.9, 0.0), (1.9, 2.1, 0.0), (0.1, 2.1, 0.0)),
    1: ((3.33, -2.04, 0.0), (2.43, -3.6, 0.0), (0.87, -2.7, 0.0), (1.77, -1.14, 0.0)),
    2: ((-3.43, -1.86, 0.0), (-4.33, -0.31, 0.0), (-2.77, 0.6, 0.0), (-1.88, -0.963, 0.0)),
}
SIROM_DICTIONARY: int = cv2.aruco.DICT_7X7_50
SIROM_MARKER_SIDE_M: float = 0.018
SIROM_BORDER_M: float = 0.001


@dataclass(frozen=True)
class BoardModel:
    """A planar or 3-D arrangement of ArUco markers.

    corners : (N, 4, 3) marker corners in the board frame, metres, order TL, TR, BR, BL.
    marker_ids : the N dictionary ids, in the same order.
    dictionary_id : an OpenCV predefined dictionary (``cv2.aruco.DICT_*``).
    marker_side_m : nominal side of the black square, metres.
    border_m : width of the white quiet zone printed around each marker, metres.
    """

    corners: np.ndarray
    marker_ids: tuple[int, ...]
    dictionary_id: int
    marker_side_m: float
    border_m: float

    def __post_init__(self) -> None:
        corners = np.asarray(self.corners, dtype=np.float64)
        if corners.ndim != 3 or corners.shape[1:] != (4, 3):
            raise ValueError(f"corners must have shape (N, 4, 3), got {corners.shape}")
        if corners.shape[0] != len(self.marker_ids):
            raise ValueError(
                f"{corners.shape[0]} corner sets for {len(self.marker_ids)} marker ids"
            )
        if len(set(self.marker_ids)) != len(self.marker_ids):
            raise ValueError(f"marker ids must be unique, got {self.marker_ids}")
        if self.marker_side_m <= 0 or self.border_m < 0:
            raise ValueError(
                f"marker_side_m must be > 0 and border_m >= 0, got "
                f"{self.marker_side_m} and {self.border_m}"
            )
        corners.setflags(write=False)
        object.__setattr__(self, "corners", corners)

    @property
    def dictionary(self) -> cv2.aruco.Dictionary:
        return cv2.aruco.getPredefinedDictionary(self.dictionary_id)

    def marker_corners(self, marker_id: int) -> np.ndarray:
        """(4, 3) corners of one marker in the board frame (a copy)."""
        return self.corners[self.marker_ids.index(marker_id)].copy()

    def is_planar(self, tol_m: float = 1e-9) -> bool:
        """True when every corner has z = 0 (within ``tol_m``)."""
        return bool(np.all(np.abs(self.corners[:, :, 2]) <= tol_m))


def board_model_from_corners(
    corners: Mapping[int, np.ndarray],
    dictionary_id: int,
    *,
    scale: float = 1.0,
    marker_side_m: float | None = None,
    border_m: float = 0.0,
) -> BoardModel:
    """Build a board from a table ``{marker_id: (4, 3) corners}``.

    ``scale`` converts the table's unit to metres (0.01 for a table in cm). The nominal marker
    side defaults to the mean edge length of the scaled corners.
    """
    ids = tuple(sorted(int(i) for i in corners))
    table = np.array([np.asarray(corners[i], dtype=np.float64) for i in ids]) * scale
    if marker_side_m is None:
        edges = np.linalg.norm(np.roll(table, -1, axis=1) - table, axis=2)
        marker_side_m = float(edges.mean())
    return BoardModel(table, ids, dictionary_id, marker_side_m, border_m)


def sirom_board_model() -> BoardModel:
    """The passive SIROM's three-marker board of the SIROM paper [SIROM], corners in metres."""
    return board_model_from_corners(
        {i: np.array(c) for i, c in SIROM_CORNERS_CM.items()},
        SIROM_DICTIONARY,
        scale=0.01,
        marker_side_m=SIROM_MARKER_SIDE_M,
        border_m=SIROM_BORDER_M,
    )


# The boards a target may carry, by the name missions give them (``targets.<name>.board``).
BOARDS: dict[str, Callable[[], BoardModel]] = {"sirom": sirom_board_model}


def make_aruco_board(model: BoardModel) -> cv2.aruco.Board:
    """The ``cv2.aruco.Board`` for a model (object points float32, metres)."""
    obj_points = [c.astype(np.float32) for c in model.corners]
    ids = np.array(model.marker_ids, dtype=np.int32)
    return cv2.aruco.Board(obj_points, model.dictionary, ids)


def aruco_board_from_corners(
    corners: Mapping[int, np.ndarray], dictionary_id: int, *, scale: float = 1.0
) -> cv2.aruco.Board:
    """A ``cv2.aruco.Board`` straight from a corner table ``{marker_id: (4, 3)}`` (TL, TR, BR,
    BL, board frame); ``scale`` converts the table's unit to metres."""
    return make_aruco_board(board_model_from_corners(corners, dictionary_id, scale=scale))


def sirom_board() -> cv2.aruco.Board:
    """The SIROM board as a ``cv2.aruco.Board`` (exact corner table of the SIROM paper [SIROM])."""
    return make_aruco_board(sirom_board_model())


def board_sheet(model: BoardModel, px_per_m: float, margin_m: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """A printable raster of a planar board seen from its front (+z), at ``px_per_m``.

    Returns ``(image, board2px)``: ``image`` (H, W) uint8, white with the black markers (their
    white quiet zone is the paper), and ``board2px`` (3, 3), the map from board-frame x, y in
    metres to pixel coordinates (x right, y down), so that a test can check the print's scale.
    """
    if not model.is_planar():
        raise ValueError("only a planar board can be printed on one sheet")
    if px_per_m <= 0 or margin_m < 0:
        raise ValueError(f"px_per_m must be > 0 and margin_m >= 0, got {px_per_m} and {margin_m}")
    xy = model.corners[:, :, :2].reshape(-1, 2)
    pad = model.border_m + margin_m
    low, high = xy.min(axis=0) - pad, xy.max(axis=0) + pad
    width, height = (int(np.ceil((high - low)[k] * px_per_m)) for k in (0, 1))
    board2px = np.array([[px_per_m, 0.0, -low[0] * px_per_m], [0.0, -px_per_m, high[1] * px_per_m], [0, 0, 1]])
    sheet = np.full((height, width), 255, np.uint8)
    side_px = max(int(np.ceil(model.marker_side_m * px_per_m)), 8)
    for corners, marker_id in zip(model.corners, model.marker_ids, strict=True):
        marker = cv2.aruco.generateImageMarker(model.dictionary, marker_id, side_px)
        src = np.array([[0, 0], [side_px, 0], [side_px, side_px], [0, side_px]], np.float32)
        dst = (board2px @ np.c_[corners[:, :2], np.ones(4)].T).T[:, :2].astype(np.float32)
        warp = cv2.getPerspectiveTransform(src, dst)
        ink = cv2.warpPerspective(255 - marker, warp, (width, height), flags=cv2.INTER_AREA)
        sheet = np.minimum(sheet, 255 - ink)
    return sheet, board2px
