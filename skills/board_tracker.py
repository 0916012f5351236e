"""Board pose frame after frame: :class:`BoardTracker`, searching where the board should be.

Detection narrowed to the predicted region, markers aligned by ECC straight from their
predicted corners, a coarse-to-fine search when the board is lost; everything after detection is
the single-image pipeline's (``board_pipeline.py``, behind
:func:`orbitree.skills.board.estimate_board_pose`). ``orbitree.skills.board`` re-exports
:class:`BoardTracker` and :data:`TRACKER_CONFIG`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import cv2
import numpy as np

from orbitree.skills.board_pipeline import (
    APRILTAG_CORNER_OFFSET_PX,
    BoardEstimatorConfig,
    BoardPose,
    _pose_from_ideal,
    _pose_from_markers,
    detect_board_markers,
    make_detector,
)
from orbitree.skills.board_pnp import _EYE4
from orbitree.skills.marker_refine import ecc_source_boxes, refine_ecc, to_gray, undistortion_maps

__all__ = ["TRACKER_CONFIG", "BoardTracker", "RegionSource"]


class RegionSource(Protocol):
    """An image made on demand: ``shape`` (H, W); ``image`` the whole of it; ``region(boxes)``
    an array of that shape whose pixels inside the boxes (x0, y0, x1, y1) are the image's."""

    shape: tuple[int, ...]

    @property
    def image(self) -> np.ndarray: ...

    def region(self, boxes: Sequence[tuple[int, int, int, int]]) -> np.ndarray: ...


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
    ``track_min_correlation`` and the pose explains them all within ``max_marker_rms_px`` or
    ``track_rms_per_side`` of the markers' mean side, whichever is larger (a wrong prediction or a
    marker hidden since fails this and the frame is detected). The pipeline's own RMS error grows
    with the markers' size in the image: a board as printed and stuck on (markers a few tenths of
    a millimetre off their drawing) and a lens as calibrated misfit the model by fixed fractions
    of the board, so in pixels by a fixed fraction of the markers' side (over the flagship's
    approaches, with the simulated world's per-run errors, 0.009-0.011 of it at most from 30 to
    120 px: ``benchmarks/marker_rms.py``). A fixed pixel limit refused the alignments of close
    range, from 0.13 m on, and had them detected again at four times the cost for the same pose
    (within 0.03 mm with three markers). A wrong lock is off by a sizeable part of a cell (an
    eighth of the side or more), ten times the limit. Without
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
        track_rms_per_side: float = 0.015,
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
        self.track_rms_per_side = track_rms_per_side
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

        ``image`` may instead be a frame made on demand (:class:`RegionSource`, e.g. the simulated
        camera's ``LazyFrame``): tracking then asks it only for the windows the markers' alignment
        reads, and for the whole image when it has to search.
        ``prior``: (4, 4) predicted ``board2cam`` for this frame (e.g. the last pose moved by the
        camera's motion since); default: the last pose found. ``corner_noise_px`` and ``rng``: as
        for :func:`estimate_board_pose`.
        """
        source = None if isinstance(image, np.ndarray) else image
        gray = to_gray(image) if source is None else None
        maps = self._undistortion_maps(gray.shape if source is None else source.shape)
        predicted = prior if prior is not None else self._extrapolated()
        found = None
        if predicted is not None and self.last is not None and self.config.corner_refinement == "ecc":
            found = self._align_predicted(gray if source is None else source,
                                          np.asarray(predicted, dtype=np.float64), corner_noise_px, rng)
            if found is not None:
                self.searches["track"] += 1
        if found is None and source is not None:
            gray = to_gray(source.image)  # searching: the whole image
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

    def _align_predicted(self, image: np.ndarray | RegionSource, predicted: np.ndarray, corner_noise_px: float,
                         rng: np.random.Generator | None) -> BoardPose | None:
        """The pose from the last frame's markers aligned by ECC straight from their predicted
        corners, no detection; None (detect) unless every one of them is in the image, aligns with
        a correlation of at least ``track_min_correlation`` and the pose explains them all within
        ``max_marker_rms_px`` or ``track_rms_per_side`` of their mean side, the larger.
        ``image``: grey, or a source asked for the windows ECC reads."""
        ids, obj = self._track_points(self.last.marker_ids)
        cam = obj @ predicted[:3, :3].T + predicted[:3, 3]
        if min(cam[:, 2].tolist()) <= 1e-3:
            return None
        px, _ = cv2.projectPoints(cam, _ZERO3, _ZERO3, self.camera_matrix, self.dist)
        xs, ys = px[:, 0, 0].tolist(), px[:, 0, 1].tolist()
        height, width = image.shape[:2]
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
        maps = self._maps[1] if self._maps else None
        if isinstance(image, np.ndarray):
            gray = image
        else:  # only the windows' pixels made (the rest of the array is 0: ECC never reads it)
            boxes = ecc_source_boxes(ideal, image.shape, self.dist, maps, config.ecc_white_margin_cells)
            gray = to_gray(image.image if boxes is None else image.region(boxes))
        ideal = refine_ecc(gray, ideal, self.last.marker_ids, self._dictionary, self.camera_matrix, self.dist,
                           white_margin_cells=config.ecc_white_margin_cells, templates=self._templates,
                           max_side_px=config.ecc_max_side_px, coarse_first=config.ecc_coarse_first,
                           eps=config.ecc_eps, correlations=correlations, ideal_corners=True,
                           undistort_maps=maps)
        if any(rho is None or rho < self.track_min_correlation for rho in correlations):
            return None
        found = _pose_from_ideal(ideal, ids, self.board, self.camera_matrix, config, predicted,
                                 corner_noise_px, rng, obj)
        if found is None or found.marker_ids != self.last.marker_ids:
            return None
        if found.reprojection_error_px > config.max_marker_rms_px:  # allowed more for large markers
            side = float(np.mean([_mean_side(q) for q in np.asarray(ideal, dtype=np.float64).reshape(-1, 4, 2)]))
            if found.reprojection_error_px > self.track_rms_per_side * side:
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
