"""Sub-pixel refinement of detected ArUco marker corners (pure functions).

All functions return corners in *ideal pixels*: undistorted image coordinates of the same camera
matrix (``K @ normalised ray``), so that PnP can run with zero distortion. Pixel centres are at
integer coordinates (OpenCV's convention).

Methods:

* :func:`undistort_corners` — the detector's corners, only undistorted;
* :func:`refine_corner_subpix` — ``cv2.cornerSubPix`` on the grey image with a window scaled to
  the marker (a corner only sees two edges in a small window);
* :func:`refine_edge_lines` — fits a straight line to each side of the black square (edge
  points from the gradient centroid of profiles across the side, in the locally undistorted
  image) and intersects neighbouring lines;
* :func:`refine_ecc` — dense alignment of the *known marker pattern* to the image: per marker,
  the image is undistorted around the marker and ``cv2.findTransformECC`` (homography motion,
  enhanced correlation coefficient, invariant to gain and offset) aligns a rendering of the
  marker (its bit pattern and part of its white quiet zone) to it. Every black/white cell edge of
  the marker contributes, not only the four outer corners, which is why it beats corner-based
  refinements by a factor of 3-10 on small markers (see ``skills/board.py`` for the table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

ECC_UPSAMPLE = 8  # the template is drawn at 8x and area-averaged down: exact anti-aliasing
_COUNT_OR_EPS = cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS


def to_gray(image: np.ndarray) -> np.ndarray:
    """(H, W) uint8 grey from grey or BGR input."""
    if image.ndim == 2:
        return image
    if image.ndim == 3 and image.shape[2] == 3:
        return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    raise ValueError(f"image must be (H, W) or (H, W, 3), got {image.shape}")


def undistort_corners(
    corners: np.ndarray, camera_matrix: np.ndarray, dist_coeffs: np.ndarray | None
) -> np.ndarray:
    """(..., 2) distorted pixels to ideal pixels (same camera matrix, zero distortion)."""
    pts = np.asarray(corners, dtype=np.float64).reshape(-1, 1, 2)
    if dist_coeffs is None or not np.any(dist_coeffs):
        return pts.reshape(np.shape(corners))
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-10)
    ideal = cv2.undistortPoints(pts, camera_matrix, dist_coeffs, P=camera_matrix,
                                criteria=criteria)
    return ideal.reshape(np.shape(corners))


def side_length_px(corners: np.ndarray) -> float:
    """Mean side of a (4, 2) quadrilateral, pixels."""
    return float(np.mean(np.linalg.norm(np.roll(corners, -1, axis=0) - corners, axis=1)))


def refine_corner_subpix(
    gray: np.ndarray,
    corners: Sequence[np.ndarray],
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    window_fraction: float = 0.12,
    min_window: int = 2,
    max_window: int = 8,
) -> list[np.ndarray]:
    """``cv2.cornerSubPix`` per marker, half-window = ``window_fraction`` x marker side."""
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-3)
    out = []
    for quad in corners:
        quad = np.asarray(quad, dtype=np.float32).reshape(4, 1, 2)
        half = int(np.clip(round(window_fraction * side_length_px(quad.reshape(4, 2))),
                           min_window, max_window))
        refined = cv2.cornerSubPix(gray, quad.copy(), (half, half), (-1, -1), criteria)
        out.append(undistort_corners(refined.reshape(4, 2), camera_matrix, dist_coeffs))
    return out


def _line_intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection of two lines given as (vx, vy, x0, y0)."""
    m = np.array([[a[0], -b[0]], [a[1], -b[1]]])
    t = np.linalg.solve(m, [b[2] - a[2], b[3] - a[3]])
    return np.array([a[2] + t[0] * a[0], a[3] + t[0] * a[1]])


def refine_edge_lines(
    gray: np.ndarray,
    corners: Sequence[np.ndarray],
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    cells: int = 9,
    white_margin_cells: float = 0.5,
    samples_per_side: int = 24,
) -> list[np.ndarray]:
    """Corners as intersections of lines fitted to the four sides of each black square.

    Profiles across a side span half a cell inwards (the black border is one cell wide, then
    data bits) and ``white_margin_cells`` outwards (the quiet zone); the edge is the centroid of
    the positive (dark to light) gradient along the profile.
    """
    out = []
    for quad in corners:
        ideal = undistort_corners(np.asarray(quad).reshape(4, 2), camera_matrix, dist_coeffs)
        cell = side_length_px(ideal) / cells
        pad = int(np.ceil(2 * cell)) + 4
        x0, y0 = np.floor(ideal.min(axis=0)).astype(int) - pad
        x1, y1 = np.ceil(ideal.max(axis=0)).astype(int) + pad
        roi = _undistorted_roi(gray, camera_matrix, dist_coeffs, x0, y0, x1 - x0, y1 - y0)
        local = ideal - np.array([x0, y0])
        centre = local.mean(axis=0)
        offsets = np.arange(-0.5 * cell, white_margin_cells * cell + 1e-9, 0.25)
        lines = []
        for a, b in zip(local, np.roll(local, -1, axis=0), strict=True):
            along = (b - a) / np.linalg.norm(b - a)
            normal = np.array([along[1], -along[0]])
            if normal @ (a - centre) < 0:
                normal = -normal
            t = np.linspace(0.12, 0.88, samples_per_side)[:, None]
            base = a + t * (b - a)  # (S, 2)
            pts = base[:, None, :] + offsets[None, :, None] * normal  # (S, D, 2)
            prof = cv2.remap(roi, pts[..., 0].astype(np.float32), pts[..., 1].astype(np.float32),
                             cv2.INTER_LINEAR)
            grad = np.clip(np.diff(prof, axis=1), 0, None)
            mid = 0.5 * (offsets[1:] + offsets[:-1])
            weight = grad.sum(axis=1)
            shift = (grad * mid).sum(axis=1) / np.where(weight > 0, weight, 1)
            edge = (base + shift[:, None] * normal)[weight > 0]
            if len(edge) >= 3:
                lines.append(cv2.fitLine(edge.astype(np.float32), cv2.DIST_HUBER, 0, 0.01,
                                         0.01).ravel())
        if len(lines) < 4:  # a side without contrast: keep the detector's corners
            out.append(ideal)
            continue
        refined = np.array([_line_intersection(lines[i - 1], lines[i]) for i in range(4)])
        out.append(refined + np.array([x0, y0]))
    return out


def marker_template(
    dictionary: cv2.aruco.Dictionary,
    marker_id: int,
    side_px: float,
    white_margin_cells: float,
    blur_px: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The marker drawn with its black square about ``side_px`` wide plus a white band.

    Returns the float32 template and its black-square corners (4, 2) TL, TR, BR, BL in template
    pixel coordinates (pixel centres on integers).
    """
    cells = dictionary.markerSize + 2
    cell_hi = max(1, round(side_px * ECC_UPSAMPLE / cells))
    side_hi = cell_hi * cells
    margin_hi = round(white_margin_cells * cell_hi)
    img = cv2.aruco.generateImageMarker(dictionary, marker_id, side_hi, borderBits=1)
    img = cv2.copyMakeBorder(img, margin_hi, margin_hi, margin_hi, margin_hi,
                             cv2.BORDER_CONSTANT, value=255)
    size = max(8, round(img.shape[0] / ECC_UPSAMPLE))
    scale = size / img.shape[0]
    template = cv2.resize(img.astype(np.float32), (size, size), interpolation=cv2.INTER_AREA)
    if blur_px > 0:
        template = cv2.GaussianBlur(template, (0, 0), blur_px)
    lo, hi = margin_hi * scale - 0.5, (margin_hi + side_hi) * scale - 0.5
    quad = np.array([[lo, lo], [hi, lo], [hi, hi], [lo, hi]], dtype=np.float32)
    return template, quad


class _Templates:
    """One marker's ECC templates at one drawn size: the fine template, its black-square quad
    (4, 2) float32 and (1, 4, 2) float64, and its coarse (blurred) versions, each blurred only
    when a coarse pass needs it."""

    __slots__ = ("quad", "quad64", "sigmas", "template")

    def __init__(self, template: np.ndarray, quad: np.ndarray) -> None:
        self.template, self.quad, self.quad64 = template, quad, quad[None].astype(np.float64)
        self.sigmas: dict = {}  # sigma rounded to 0.01 -> [sigma it was first seen with, coarse]

    def coarse(self, rounded: float) -> np.ndarray:
        entry = self.sigmas[rounded]
        if entry[1] is None:
            entry[1] = cv2.GaussianBlur(self.template, (0, 0), entry[0])
        return entry[1]


def _templates(
    cache: dict | None, dictionary: cv2.aruco.Dictionary, marker_id: int, side: float,
    white_margin_cells: float, blur_px: float, cells: int,
) -> tuple[_Templates, float]:
    """The marker's ECC templates for a black square ``side`` px wide (from ``cache`` when
    given) and the rounded sigma under which its coarse template is kept. The fine template
    depends on the 8x cell size (an integer); the coarse one is blurred by max(1, side / 30),
    with the sigma of the first side that rounded to the same 0.01 (as drawing every pair of
    size and rounded sigma once would); the cache is emptied past 256 such pairs. ``cells``: the
    marker's side in cells, border included (``dictionary.markerSize + 2``)."""
    cell_hi = max(1, round(side * ECC_UPSAMPLE / cells))
    sigma = max(1.0, side / 30)
    rounded = round(sigma, 2)
    if cache is None:
        made = _Templates(*marker_template(dictionary, marker_id, side, white_margin_cells, blur_px))
        made.sigmas[rounded] = [sigma, None]
        return made, rounded
    key = (marker_id, cell_hi, white_margin_cells, blur_px)
    made = cache.get(key)
    if made is not None and rounded in made.sigmas:
        return made, rounded
    pairs = cache.get("pairs", 0)
    if pairs > 256:
        cache.clear()
        pairs, made = 0, None
    if made is None:
        made = _Templates(*marker_template(dictionary, marker_id, side, white_margin_cells, blur_px))
        cache[key] = made
    made.sigmas[rounded] = [sigma, None]
    cache["pairs"] = pairs + 1
    return made, rounded


def undistortion_maps(
    camera_matrix: np.ndarray, dist_coeffs: np.ndarray | None, size: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray] | None:
    """(map_x, map_y), each (H, W) float32: for every ideal pixel of a ``size`` = (W, H) image
    the distorted pixel it comes from (same camera matrix); None without distortion. A window
    of these is exactly what ``initUndistortRectifyMap`` computes for that window alone (the
    principal point shifted), so :func:`refine_ecc` can slice them instead, frame after frame."""
    if dist_coeffs is None or not np.any(dist_coeffs):
        return None
    k = np.asarray(camera_matrix, dtype=np.float64)
    return cv2.initUndistortRectifyMap(k, np.asarray(dist_coeffs, np.float64), None, k,
                                       (int(size[0]), int(size[1])), cv2.CV_32FC1)


def _undistorted_roi(
    gray: np.ndarray,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    x0: int,
    y0: int,
    width: int,
    height: int,
    maps: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Ideal-pixel window ``[x0, x0+width) x [y0, y0+height)`` resampled from the image.
    ``maps``: the whole image's undistortion maps (:func:`undistortion_maps`), sliced when the
    window lies inside the image instead of computing the window's own (the same values)."""
    if dist_coeffs is None or not np.any(dist_coeffs):
        shift = np.float32([[1, 0, -x0], [0, 1, -y0]])
        return cv2.warpAffine(gray, shift, (width, height), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    if maps is not None and x0 >= 0 and y0 >= 0 and x0 + width <= maps[0].shape[1] \
            and y0 + height <= maps[0].shape[0]:
        return cv2.remap(gray, maps[0][y0:y0 + height, x0:x0 + width],
                         maps[1][y0:y0 + height, x0:x0 + width], cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    shifted = camera_matrix.astype(np.float64).copy()
    shifted[0, 2] -= x0
    shifted[1, 2] -= y0
    map_x, map_y = cv2.initUndistortRectifyMap(
        camera_matrix, dist_coeffs, None, shifted, (width, height), cv2.CV_32FC1
    )
    return cv2.remap(gray, map_x, map_y, cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).astype(np.float32)


def refine_ecc(
    gray: np.ndarray,
    corners: Sequence[np.ndarray],
    ids: Sequence[int],
    dictionary: cv2.aruco.Dictionary,
    camera_matrix: np.ndarray,
    dist_coeffs: np.ndarray | None,
    *,
    white_margin_cells: float = 0.5,
    template_blur_px: float = 0.8,
    gauss_filter_size: int = 1,
    coarse_filter_size: int = 5,
    max_iterations: int = 50,
    min_correlation: float = 0.6,
    max_shift_fraction: float = 0.25,
    templates: dict | None = None,
    max_side_px: float | None = None,
    coarse_first: bool = True,
    eps: float = 1e-5,
    correlations: list | None = None,
    ideal_corners: bool = False,
    undistort_maps: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Refine each marker by ECC alignment of its known pattern; ideal-pixel corners (4, 2).

    ``white_margin_cells``: width of the white quiet zone included in the template, in marker
    cells (SIROM: border 1 mm = 0.5 cell of 2 mm). Only what is certainly white may be included:
    beyond it the background is unknown. A marker whose alignment fails to converge, correlates
    below ``min_correlation`` or moves a corner by more than ``max_shift_fraction`` of its side
    (or 2 px) keeps its detected corners. ``templates``: a dict the caller keeps between calls
    (one per dictionary), where the drawn templates are cached (a tracker sees the same markers
    at nearly the same size frame after frame; drawing one at 8x costs as much as aligning it).
    ``max_side_px``: a marker larger than this in the image is aligned on the window shrunk
    (area-averaged) to that size, the corners scaled back: ECC's cost goes with the window's
    pixels, and a marker 300 px wide has far more edge pixels than its corners need.
    ``coarse_first``: run the wide-basin coarse pass before the fine one (detector corners may
    sit a cell's fraction off); False runs the fine pass alone and falls back to coarse + fine
    only for a marker it fails on (good starting corners, e.g. a tracker's: a third of the
    cost). ``eps``: ECC's convergence threshold on the correlation's increment.
    ``correlations``: a list to which each marker's final correlation is appended (None for a
    marker that kept its detected corners). ``ideal_corners``: ``corners`` are already ideal
    pixels (e.g. projected from a predicted pose), not the detector's distorted ones.
    ``undistort_maps``: :func:`undistortion_maps` of the image, reused between calls.
    """
    criteria = (_COUNT_OR_EPS, max_iterations, eps)
    out: list[np.ndarray] = []
    if len(corners) != len(ids):
        raise ValueError(f"{len(corners)} corner sets for {len(ids)} ids")
    if len(ids) == 0:
        return out
    all_ideal = np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2)
    if not ideal_corners:
        all_ideal = undistort_corners(all_ideal, camera_matrix, dist_coeffs)
    maps = undistort_maps if dist_coeffs is not None and bool(np.asarray(dist_coeffs).any()) else None
    map_h, map_w = (0, 0) if maps is None else maps[0].shape
    pad_rate = 0.1 + white_margin_cells / 9
    cells = dictionary.markerSize + 2
    passes = (True,) if coarse_first else (False, True)
    # per marker, its side, window and starting corners in the window in Python floats: a few
    # dozen numbers, cheaper than as arrays (the same IEEE operations, so the same values)
    for i, (quad, marker_id) in enumerate(zip(all_ideal.tolist(), ids, strict=True)):
        side, x0, y0, x1, y1 = _ecc_window(quad, pad_rate)
        if maps is not None and x0 >= 0 and y0 >= 0 and x1 <= map_w and y1 <= map_h:
            roi = cv2.remap(gray, maps[0][y0:y1, x0:x1], maps[1][y0:y1, x0:x1],
                            cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
        else:
            roi = _undistorted_roi(gray, camera_matrix, dist_coeffs, x0, y0, x1 - x0, y1 - y0)
        local = [[x - x0, y - y0] for x, y in quad]
        scale = 1.0
        shrunk = max_side_px is not None and side > max_side_px
        if shrunk:  # aligned on the window shrunk (INTER_AREA keeps pixel areas: edges map exactly)
            size = (max(8, round((x1 - x0) * max_side_px / side)),
                    max(8, round((y1 - y0) * max_side_px / side)))
            roi = cv2.resize(roi, size, interpolation=cv2.INTER_AREA)
            sx, sy = size[0] / (x1 - x0), size[1] / (y1 - y0)
            scale = (sx + sy) / 2
            local = [[(x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5] for x, y in local]
        made, rounded = _templates(templates, dictionary, int(marker_id), side * scale,
                                   white_margin_cells, template_blur_px, cells)
        start = cv2.getPerspectiveTransform(made.quad, np.array(local, dtype=np.float32))
        limit = max(2.0, max_shift_fraction * side)
        refined = None
        for coarse in passes:
            found, rho = _align(roi, start, made, rounded, coarse, coarse_filter_size,
                                gauss_filter_size, criteria, min_correlation)
            if found is not None:
                if shrunk:
                    found = [[(x + 0.5) / sx - 0.5 + x0, (y + 0.5) / sy - 0.5 + y0] for x, y in found]
                else:
                    found = [[x + x0, y + y0] for x, y in found]
                if max(math.sqrt((x - xi) * (x - xi) + (y - yi) * (y - yi))
                       for (x, y), (xi, yi) in zip(found, quad, strict=True)) <= limit:
                    refined = found
                    break
        out.append(all_ideal[i] if refined is None else np.array(refined))
        if correlations is not None:
            correlations.append(None if refined is None else rho)
    return out


def _ecc_window(quad: list[list[float]], pad_rate: float) -> tuple[float, int, int, int, int]:
    """A marker's mean side and the ideal-pixel window (x0, y0, x1, y1) ECC aligns it in, from
    its ideal corners (four [x, y] lists)."""
    side = 0.0
    for (xa, ya), (xb, yb) in zip(quad, quad[1:] + quad[:1], strict=True):
        side += math.sqrt((xb - xa) * (xb - xa) + (yb - ya) * (yb - ya))
    side /= 4
    pad = math.ceil(side * pad_rate) + 4
    xs, ys = [p[0] for p in quad], [p[1] for p in quad]
    return (side, math.floor(min(xs)) - pad, math.floor(min(ys)) - pad,
            math.ceil(max(xs)) + pad, math.ceil(max(ys)) + pad)


def ecc_source_boxes(
    ideal_corners: np.ndarray,
    shape: tuple[int, ...],
    dist_coeffs: np.ndarray | None,
    undistort_maps: tuple[np.ndarray, np.ndarray] | None,
    white_margin_cells: float = 0.5,
) -> list[tuple[int, int, int, int]] | None:
    """The boxes (x0, y0, x1, y1) of an image of ``shape`` that :func:`refine_ecc` reads when
    given these ideal-pixel corners (N, 4, 2) (``ideal_corners=True``), ``white_margin_cells``
    and ``undistort_maps``: one per marker, each holding every pixel its window's bilinear
    resampling touches (with a pixel to spare). None when a window would be resampled through
    maps of its own (it reaches outside the image's maps): then the whole image is read."""
    height, width = shape[:2]
    pad_rate = 0.1 + white_margin_cells / 9
    distorted = dist_coeffs is not None and bool(np.asarray(dist_coeffs).any())
    boxes = []
    for quad in np.asarray(ideal_corners, dtype=np.float64).reshape(-1, 4, 2).tolist():
        _, x0, y0, x1, y1 = _ecc_window(quad, pad_rate)
        if distorted:
            if undistort_maps is None or x0 < 0 or y0 < 0 or x1 > undistort_maps[0].shape[1] \
                    or y1 > undistort_maps[0].shape[0]:
                return None
            # the maps' extremes over the window (minMaxLoc: both in one pass, the same values as
            # numpy's min and max, at a third of their cost on a window of the maps)
            lo_x, hi_x = cv2.minMaxLoc(undistort_maps[0][y0:y1, x0:x1])[:2]
            lo_y, hi_y = cv2.minMaxLoc(undistort_maps[1][y0:y1, x0:x1])[:2]
            # remap reads the pixel at the floor of each (1/32-rounded) coordinate and the next
            x0, x1 = math.floor(lo_x) - 1, math.floor(hi_x) + 3
            y0, y1 = math.floor(lo_y) - 1, math.floor(hi_y) + 3
        else:
            x0, y0, x1, y1 = x0 - 1, y0 - 1, x1 + 2, y1 + 2
        boxes.append((max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)))
    return boxes


def _align(roi: np.ndarray, warp: np.ndarray, made: _Templates, rounded: float, coarse: bool,
           coarse_filter_size: int, fine_filter_size: int, criteria,
           min_correlation: float) -> tuple[list | None, float]:
    """The template quad (four [x, y] lists) in ``roi`` after ECC from ``warp``: the coarse
    template's pass (when ``coarse``), then the fine one's; None if it did not converge or
    correlates too little; and the final correlation."""
    rho = -1.0
    warp = warp.astype(np.float32)
    try:
        if coarse:
            rho, warp = cv2.findTransformECC(made.coarse(rounded), roi, warp, cv2.MOTION_HOMOGRAPHY,
                                             criteria, None, coarse_filter_size)
        rho, warp = cv2.findTransformECC(made.template, roi, warp, cv2.MOTION_HOMOGRAPHY,
                                         criteria, None, fine_filter_size)
    except cv2.error:  # did not converge (e.g. blurred beyond recognition)
        return None, rho
    if rho < min_correlation:
        return None, rho
    return cv2.perspectiveTransform(made.quad64, warp.astype(np.float64))[0].tolist(), rho
