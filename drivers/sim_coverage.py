"""Pixel-space coverage of uniform polygons for the simulated camera (:mod:`orbitree.drivers.sim_render`).

The faces of solids (the two interfaces' outlines, already projected through the lens into
distorted pixels) are composited by their exact ``4 x 4`` point-sampled coverage: per sample row
the polygon's crossings give the covered span, a pixel wholly inside on all its sample rows is
filled at once and only the edge pixels are blended by their count. So the cost goes with the
outline and the polygons' heights in samples, not with their areas. Also here: clipping a convex
polygon to a box (Sutherland-Hodgman), which the renderer uses on the faces' rays.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numba
import numpy as np

SUPERSAMPLE = 4  # sample points per pixel side


def clip_box(polygon: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The part (M, 2) of a convex polygon (N, 2) inside the box [low, high] (Sutherland-Hodgman;
    on Python floats: a few points, where numpy's per-call cost would dominate)."""
    if np.all((polygon >= low) & (polygon <= high)):
        return polygon
    points = polygon.tolist()
    for axis in (0, 1):
        for bound, sign in ((float(low[axis]), 1.0), (float(high[axis]), -1.0)):
            if not points:
                return np.empty((0, 2))
            inside = [sign * (p[axis] - bound) >= 0 for p in points]
            out = []
            n = len(points)
            for i in range(n):
                a, b = points[i], points[(i + 1) % n]
                if inside[i]:
                    out.append(a)
                if inside[i] != inside[(i + 1) % n]:
                    t = (bound - a[axis]) / (b[axis] - a[axis])
                    out.append([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])])
            points = out
    return np.array(points, dtype=np.float64).reshape(-1, 2)


def fill_polygons(canvas: np.ndarray, outlines: Sequence[np.ndarray], albedos: Sequence[float],
                  window: tuple[int, int, int, int] | None = None, packed: tuple | None = None) -> None:
    """Composite uniform polygons (outlines (N, 2) distorted pixels, in order) over ``canvas``
    (H, W) float32, one after the other, by their 4x4 point-sampled coverage (see
    :func:`fill_polygons_numpy`, the same arithmetic on numpy arrays): compiled loops
    (:func:`_fill_convex`) for the faces whose sample rows cross their outline at most twice (the
    convex faces of the interfaces), the numpy code for the others. Same pixels, bit for bit; 5-8x
    less time for the flagship's faces (``benchmarks/render_side_by_side.py``).

    ``window`` (x0, y0, width, height): ``canvas`` holds only the pixels [x0, x0 + its width) x
    [y0, y0 + its height) of an image of that size; each of them gets what the whole image's
    fill would give it (the region render of :mod:`orbitree.drivers.sim_region`). ``packed``: the
    outlines as :func:`pack_polygons` gives them, made once for all the windows of a frame."""
    if not len(outlines):
        return
    if window is not None:
        ox, oy, width, height = window
    else:
        ox, oy, (height, width) = 0, 0, canvas.shape
    if canvas.dtype != np.float32 or not canvas.flags.c_contiguous:  # the kernel is compiled for these
        _fill_numpy(canvas, outlines, albedos, window)
        return
    points, ends, values = pack_polygons(outlines, albedos) if packed is None else packed
    face, n_faces = 0, len(outlines)
    while face < n_faces:
        face = _fill_convex(canvas, points, ends, values, face, ox, oy, width, height)
        if face < n_faces:  # a sample row crossing it more than twice: even-odd spans
            _fill_numpy(canvas, [outlines[face]], [albedos[face]], window)
            face += 1


def pack_polygons(outlines: Sequence[np.ndarray], albedos: Sequence[float]) -> tuple[np.ndarray, ...]:
    """What :func:`fill_polygons`'s compiled loops read of the polygons: their points (M, 2)
    float64 one outline after the other, each outline's end in them and the albedos, float32."""
    points = np.concatenate(outlines).astype(np.float64)
    return points, np.cumsum(np.array([len(o) for o in outlines])), np.asarray(albedos, dtype=np.float32)


def _fill_numpy(canvas: np.ndarray, outlines: Sequence[np.ndarray], albedos: Sequence[float],
                window: tuple[int, int, int, int] | None) -> None:
    """:func:`fill_polygons_numpy` over ``canvas``, a ``window`` of the image (see
    :func:`fill_polygons`): through an image-sized canvas, the window's pixels copied in and out."""
    if window is None:
        fill_polygons_numpy(canvas, outlines, albedos)
        return
    ox, oy, width, height = window
    box = (slice(oy, oy + canvas.shape[0]), slice(ox, ox + canvas.shape[1]))
    whole = np.zeros((height, width), canvas.dtype)
    whole[box] = canvas
    fill_polygons_numpy(whole, outlines, albedos)
    canvas[...] = whole[box]


def warm_up() -> None:
    """Compile :func:`_fill_convex` (about 3 s, once per install: numba caches the machine code
    next to this file) or load it (a fresh process, about 0.1 s), so that neither lands in a
    frame; the sim camera's ``setup`` calls it."""
    fill_polygons(np.zeros((4, 4), np.float32), [np.array([[0.5, 0.5], [2.5, 0.5], [2.5, 2.5]])], [0.5])


@numba.njit(cache=True)
def _fill_convex(canvas: np.ndarray, points: np.ndarray, ends: np.ndarray, albedos: np.ndarray,
                 first: int, ox: int = 0, oy: int = 0, width: int = -1, height: int = -1) -> int:
    """:func:`fill_polygons_numpy`'s arithmetic, face by face from ``first``, as loops: per face
    the crossings of its edges with the sample rows give each row's leftmost and rightmost
    crossing, then per pixel row the wholly covered pixels are filled and the edge pixels blended
    by their sample count. Stops before the first face a sample row of the canvas crosses more
    than twice (left untouched) and returns its index; the number of faces when all are drawn.
    ``canvas`` may hold only the pixels from (``ox``, ``oy``) of an image ``width`` x ``height``
    (default: the canvas's own size): the rows outside it are not looked at, the pixels outside
    it skipped, the others filled as in the image."""
    rows_held, cols_held = canvas.shape
    if width < 0:
        height, width = rows_held, cols_held
    k = SUPERSAMPLE
    big = k * (width + 2)
    for face in range(first, len(ends)):
        start = 0 if face == 0 else ends[face - 1]
        n = ends[face] - start
        r_first = np.empty(n, np.int64)
        r_end = np.empty(n, np.int64)
        lowest, highest = k * height, 0
        for i in range(n):
            a, b = start + i, start + (i + 1) % n
            ylo, yhi = min(points[a, 1], points[b, 1]), max(points[a, 1], points[b, 1])
            r_first[i] = int(min(max(np.ceil(k * ylo + (k - 1) / 2), 0.0), float(k * height)))
            r_end[i] = int(min(max(np.ceil(k * yhi + (k - 1) / 2), 0.0), float(k * height)))
            # only the sample rows of the canvas's pixel rows (each row's crossings are its own)
            r_first[i] = min(max(r_first[i], k * oy), k * (oy + rows_held))
            r_end[i] = min(max(r_end[i], k * oy), k * (oy + rows_held))
            if r_end[i] > r_first[i]:
                lowest, highest = min(lowest, r_first[i]), max(highest, r_end[i])
        if highest <= lowest:
            continue
        rows = highest - lowest
        crossings = np.zeros(rows, np.int64)
        left = np.full(rows, np.inf)
        right = np.full(rows, -np.inf)
        for i in range(n):
            a, b = start + i, start + (i + 1) % n
            ax, ay, bx, by = points[a, 0], points[a, 1], points[b, 0], points[b, 1]
            slope = (bx - ax) / ((by - ay) if max(ay, by) > min(ay, by) else 1.0)
            for r in range(r_first[i], r_end[i]):
                x = ax + ((r + 0.5) / k - 0.5 - ay) * slope
                j = r - lowest
                crossings[j] += 1
                left[j] = min(left[j], x)
                right[j] = max(right[j], x)
        for j in range(rows):
            if crossings[j] > 2:
                return face
        albedo = albedos[face]
        starts = np.empty(k, np.int64)
        stops = np.empty(k, np.int64)
        for y in range(max(lowest // k, oy), min((highest - 1) // k + 1, oy + rows_held)):
            for c in range(k):
                j = k * y + c - lowest
                s0, s1 = float(k * width), 0.0
                if 0 <= j < rows and crossings[j] > 0:
                    s0 = min(max(np.ceil(k * left[j] + (k - 1) / 2), 0.0), float(k * width))
                    s1 = min(max(np.ceil(k * right[j] + (k - 1) / 2), 0.0), float(k * width))
                if s1 > s0:
                    starts[c], stops[c] = int(s0), int(s1)
                else:
                    starts[c], stops[c] = big, -1
            lo = starts.min() // k
            hi = -(-stops.max() // k)
            full_lo = -(-starts.max() // k)
            full_hi = stops.min() // k
            inner = full_lo < full_hi
            if inner:
                for x in range(max(full_lo, ox), min(full_hi, ox + cols_held)):
                    canvas[y - oy, x - ox] = albedo
            left_end = full_lo if inner else hi
            right_lo = full_hi if inner else hi
            for x in range(max(lo, ox), min(hi, ox + cols_held)):
                if left_end <= x < right_lo:
                    continue
                cover = 0
                for c in range(k):
                    cover += min(max(min(stops[c], k * x + k) - max(starts[c], k * x), 0), k)
                alpha = np.float32(cover * (1.0 / k**2))
                under = canvas[y - oy, x - ox] * (np.float32(1.0) - alpha)
                canvas[y - oy, x - ox] = under + albedo * alpha
    return len(ends)


def fill_polygons_numpy(canvas: np.ndarray, outlines: Sequence[np.ndarray], albedos: Sequence[float]) -> None:
    """Composite uniform polygons (outlines (N, 2) distorted pixels, in order) over ``canvas``,
    one after the other. A polygon's coverage of a pixel is the share of the pixel's 4x4 sample
    points inside it (even-odd rule), counted per sample row from the row's crossings with the
    outline: a pixel wholly inside on all its sample rows is filled at once, the others (the
    edge pixels) get their count. So the work goes with the polygons' heights in samples and
    their edges, and with the interior only as a fill, all polygons at once."""
    height, width = canvas.shape
    k = SUPERSAMPLE
    n_faces = len(outlines)
    sizes = np.array([len(o) for o in outlines])
    a = np.concatenate(outlines).astype(np.float64)
    ends = np.cumsum(sizes)
    following = np.arange(1, len(a) + 1)
    following[ends - 1] = ends - sizes  # each outline closes on its first point
    b = a[following]
    face_of = np.repeat(np.arange(n_faces), sizes)
    # sample row r lies at y = (r + 0.5) / k - 0.5; an edge crosses the rows with ylo <= y < yhi
    ylo, yhi = np.minimum(a[:, 1], b[:, 1]), np.maximum(a[:, 1], b[:, 1])
    r_first = np.clip(np.ceil(k * ylo + (k - 1) / 2), 0, k * height).astype(np.int64)
    r_end = np.clip(np.ceil(k * yhi + (k - 1) / 2), 0, k * height).astype(np.int64)
    n_rows = r_end - r_first
    total = int(n_rows.sum())
    if total == 0:
        return
    edge = np.repeat(np.arange(len(a)), n_rows)
    row = np.arange(total) - np.repeat(np.cumsum(n_rows) - n_rows - r_first, n_rows)
    slope = (b[:, 0] - a[:, 0]) / np.where(yhi > ylo, b[:, 1] - a[:, 1], 1.0)
    x = a[edge, 0] + ((row + 0.5) / k - 0.5 - a[edge, 1]) * slope[edge]
    face = face_of[edge]
    # per face and sample row the leftmost and rightmost crossing (the span of a convex outline;
    # rows crossed more than twice go through _span_box), scattered without sorting
    row_lo = int(row.min()) // k
    n_lines = -(-(int(row.max()) + 1) // k) - row_lo  # pixel rows spanned by the polygons
    key = face * (k * n_lines) + (row - k * row_lo)
    size = n_faces * k * n_lines
    crossings = np.bincount(key, minlength=size)
    left, right = np.full(size, np.inf), np.full(size, -np.inf)
    np.minimum.at(left, key, x)
    np.maximum.at(right, key, x)
    special = {}
    for f in np.unique(key[crossings[key] > 2] // (k * n_lines)).tolist():  # not convex: even-odd spans
        mine = face == f
        order = np.lexsort((x[mine], row[mine]))
        xf, rf = x[mine][order], row[mine][order][0::2]
        first = np.clip(np.ceil(k * xf[0::2] + (k - 1) / 2), 0, k * width).astype(np.int64)
        end = np.clip(np.ceil(k * xf[1::2] + (k - 1) / 2), 0, k * width).astype(np.int64)
        if np.any(end > first):
            special[f] = _span_box(first[end > first], end[end > first], rf[end > first] // k, k)
        else:
            special[f] = None
    # sample column c (at (c + 0.5) / k - 0.5) is inside when left <= x < right
    big = k * (width + 2)
    with np.errstate(invalid="ignore"):
        starts = np.clip(np.ceil(k * left + (k - 1) / 2), 0, k * width)
        stops = np.clip(np.ceil(k * right + (k - 1) / 2), 0, k * width)
    empty = ~(stops > starts)  # no crossing (inf), or no sample inside
    starts = np.where(empty, big, starts).astype(np.int64).reshape(-1, k)  # (faces * n_lines, k)
    stops = np.where(empty, -1, stops).astype(np.int64).reshape(-1, k)
    columns = range(k)
    lo = functools.reduce(np.minimum, (starts[:, c] for c in columns)) // k  # pixels touched: [lo, hi)
    hi = -(-functools.reduce(np.maximum, (stops[:, c] for c in columns)) // k)
    full_lo = -(-functools.reduce(np.maximum, (starts[:, c] for c in columns)) // k)  # wholly inside
    full_hi = functools.reduce(np.minimum, (stops[:, c] for c in columns)) // k
    inner = full_lo < full_hi
    left_end, right_lo = np.where(inner, full_lo, hi), np.where(inner, full_hi, hi)
    runs = np.stack([np.maximum(left_end - lo, 0), np.maximum(hi - right_lo, 0)], axis=1).ravel()
    run_x = np.stack([lo, right_lo], axis=1).ravel()
    line = np.repeat(np.arange(n_faces * n_lines).repeat(2), runs)  # face * height + y of each edge pixel
    xs = np.repeat(run_x, runs) + np.arange(len(line)) - np.repeat(np.cumsum(runs) - runs, runs)
    cover = np.minimum(stops[line], k * xs[:, None] + k) - np.maximum(starts[line], k * xs[:, None])
    alpha = (np.clip(cover, 0, k).sum(axis=1) * (1.0 / k**2)).astype(np.float32)
    ys = line % n_lines + row_lo
    bounds = np.searchsorted(line, np.arange(n_faces + 1) * n_lines).tolist()
    inner = inner.reshape(n_faces, n_lines)
    has_inner = inner.any(axis=1).tolist()
    full_lo, full_hi = full_lo.reshape(n_faces, n_lines), full_hi.reshape(n_faces, n_lines)
    # each face's box of wholly covered pixels (rows [r0, r1), columns [c0, c1)), and its rows'
    # spans as start and width on 16 bits when the image is narrower than 2**15
    r0s = np.argmax(inner, axis=1).tolist()
    r1s = (n_lines - np.argmax(inner[:, ::-1], axis=1)).tolist()
    c0s = np.where(inner, full_lo, k * width).min(axis=1).tolist()
    c1s = np.where(inner, full_hi, 0).max(axis=1).tolist()
    signed, unsigned = (np.int16, np.uint16) if width < 2**15 else (np.int64, np.uint64)
    span_lo = full_lo.astype(signed)[:, :, None]
    span_width = np.maximum(full_hi - full_lo, 0).astype(unsigned)[:, :, None]
    for f in range(n_faces):
        albedo = np.float32(albedos[f])
        if f in special:
            if special[f] is not None:
                x0, y0, counts = special[f]
                _composite_coverage(canvas[y0:y0 + counts.shape[0], x0:x0 + counts.shape[1]], counts, albedo)
            continue
        if has_inner[f]:
            r0, r1, c0, c1 = r0s[f], r1s[f], c0s[f], c1s[f]
            # lo <= col < lo + width as one unsigned comparison of col - lo with the width: 6x
            # cheaper than two comparisons and an and
            mask = (np.arange(c0, c1, dtype=signed) - span_lo[f, r0:r1]).view(unsigned) < span_width[f, r0:r1]
            np.copyto(canvas[row_lo + r0:row_lo + r1, c0:c1], albedo, where=mask)
        e0, e1 = bounds[f], bounds[f + 1]
        if e1 > e0:
            y, x_, a_ = ys[e0:e1], xs[e0:e1], alpha[e0:e1]
            under = canvas[y, x_]
            under *= 1.0 - a_
            under += albedo * a_
            canvas[y, x_] = under


def _span_box(first: np.ndarray, end: np.ndarray, row: np.ndarray, k: int) -> tuple[int, int, np.ndarray]:
    """(x0, y0, counts) of spans [first, end) of sample columns on pixel rows ``row``: the
    covered samples per pixel over the spans' pixel box."""
    x0, y0 = int(first.min()) // k, int(row.min())
    w, h = -(-int(end.max()) // k) - x0, int(row.max()) + 1 - y0
    return x0, y0, _span_counts(first - k * x0, end - k * x0, row - y0, w, h, k)


def _span_counts(first: np.ndarray, end: np.ndarray, row: np.ndarray, w: int, h: int, k: int) -> np.ndarray:
    """(h, w) number of covered samples per pixel from spans [first, end) of sample columns on
    pixel rows ``row`` (any number of spans per row)."""
    full_lo, full_hi = -(-first // k), end // k  # pixels [full_lo, full_hi) wholly inside the span
    spans = full_hi > full_lo
    one = full_lo > full_hi  # the span inside a single pixel
    cut_lo = ~one & (first < k * full_lo)
    cut_hi = ~one & (end > k * full_hi)
    starts = row[spans] * (w + 1)
    diff = np.bincount(np.concatenate([starts + full_lo[spans], starts + full_hi[spans]]),
                       np.repeat([k, -k], len(starts)), h * (w + 1))
    part = np.bincount(
        np.concatenate([row[one] * w + first[one] // k, row[cut_lo] * w + first[cut_lo] // k,
                        row[cut_hi] * w + full_hi[cut_hi]]),
        np.concatenate([(end - first)[one], (k * full_lo - first)[cut_lo], (end - k * full_hi)[cut_hi]]),
        h * w)
    return np.cumsum(diff.reshape(h, w + 1)[:, :w], axis=1) + part.reshape(h, w)


def _composite_coverage(roi: np.ndarray, counts: np.ndarray, albedo: float) -> None:
    """A uniform ``albedo`` over ``roi`` with coverage ``counts`` of 16 samples a pixel."""
    alpha = (counts * (1.0 / SUPERSAMPLE**2)).astype(np.float32)
    roi *= 1.0 - alpha
    roi += np.float32(albedo) * alpha
