"""A textured patch's k x k supersampling as compiled loops, sampling only where it can matter.

The renderer (:mod:`orbitree.drivers.sim_render`) draws a textured patch over its pixel box by
inverse mapping: the texture coordinates of each pixel centre (its undistorted ray through the
homography ``ray2tex``, as ``cv2.perspectiveTransform``), interpolated bilinearly to the pixel's
``k x k`` samples (as ``cv2.resize`` ``INTER_LINEAR`` of the coordinate image enlarged k times:
sample ``s`` of pixel ``j`` sits at ``j + (s + 1/2)/k - 1/2`` between the centres of ``j`` and its
neighbour, clamped at the box's edge), the texture read bilinearly at each sample (a neighbour
off the texture reads the border: NaN for an opaque texture, 0 for a premultiplied one, as
``cv2.remap`` with ``BORDER_CONSTANT``) and the samples averaged (``INTER_AREA``).

:func:`draw_box` does the same per pixel, except where the samples cannot matter. Per pixel, a
bound on where its samples lie: each is its centre's coordinates plus ``wx Dx + wy Dy + wx wy X``
(``Dx``, ``Dy`` the differences to the neighbours' centres on its side, ``X`` the cross term,
``0 <= wx, wy <= f = (k - 1) / 2k``, 3/8 for k = 4), so per axis within ``f`` of the way to the
neighbours plus ``f^2`` of the cross terms; its bilinear reads reach one texel further. If that
block of texels lies off the texture, the pixel is left as it is (what NaN or a zero border
gives); if it lies on the texture and is uniform (two summed-area tables of where neighbouring
texels differ, :func:`uniform_tables`, made once per texture array: eight reads), the pixel is
that texel's value (``roi * (1 - alpha) + albedo`` premultiplied), which the k x k bilinear
samples and their mean reproduce exactly; else it is sampled as above, and when the block's
texels are equal down each column (or along each row: a pixel on one cell edge), each sample
reads one row (column) of it, the general read's lerp between two equal rows adding an exact 0
(``_LINE``; textures holding -0.0, NaN or infinities keep the general reads). Inside a marker's cells
and off the marker (the corners of its box) that is most pixels: over the flagship's frames 47 %
of the boxes' pixels are given a texel's value, 41 % are skipped, 13 % sampled (two thirds of
those read along one axis).

A pixel's result depends only on its neighbours' rays and the patch's box (the clamping at the
box's edge), never on the part of the box drawn (``sub``): a region render
(:mod:`orbitree.drivers.sim_region`) draws the same pixels as the whole frame.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

__all__ = ["PAD", "draw_box", "prepared", "uniform_tables", "warm_up"]

_PREPARED: dict[int, tuple] = {}  # id(texture level) -> (that level, what prepared() returns for it)
_PREPARED_MAX = 256
_WRAP = 1 << 16  # the uniform tables' sums are kept modulo this
_MARGIN = 1e-3  # texel: room for the rounding of the samples' coordinates in the uniform test
PAD = 2  # texels of border around the padded planes: a bilinear read clamped to it reads the border
_OPAQUE, _PREMULTIPLIED, _ALPHA_ONE = 0, 1, 2  # texture kinds
_WHOLE, _SAMPLED, _LINE = 1, 2, 3  # pixel paths (draw_box's classes)
_NO_CLASSES = np.zeros((0, 0), np.int8)


def uniform_tables(level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two (h + 1, w + 1) uint16 summed-area tables over ``level`` ((h, w) opaque albedo or (h, w, 2)
    premultiplied): of the texels differing (any channel) from their right neighbour, and from
    the one below. A block of texels is uniform when neither counts a difference inside it (four
    reads each). The sums wrap modulo 2**16 (half the memory of int32, fewer cache misses): a
    block's count, taken modulo 2**16 too, is still exact for a block of fewer than 2**16 texels."""
    planes = level[..., None] if level.ndim == 2 else level
    h, w = planes.shape[:2]
    across = np.zeros((h + 1, w + 1), np.int32)
    down = np.zeros((h + 1, w + 1), np.int32)
    across[1:, 1:w] = np.any(planes[:, 1:] != planes[:, :-1], axis=2)
    down[1:h, 1:] = np.any(planes[1:] != planes[:-1], axis=2)
    return across.cumsum(0).cumsum(1).astype(np.uint16), down.cumsum(0).cumsum(1).astype(np.uint16)


def prepared(level: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """What the kernel reads of a texture level ((h, w) opaque albedo or (h, w, 2) premultiplied):
    its kind (opaque, premultiplied, premultiplied and opaque all over: the markers), its
    :func:`uniform_tables` and its planes (albedo, alpha; an opaque texture's twice) padded by
    ``PAD`` texels of remap's constant border (NaN opaque, 0 premultiplied), so that a bilinear
    read near or off the edge needs no test. Made once per texture array (the markers' pyramids
    are shared, read-only: :mod:`orbitree.drivers.sim_patches`), level by level as drawn; and
    whether its texels are all finite and none -0.0 (the kernel's reads along one axis)."""
    entry = _PREPARED.get(id(level))
    if entry is not None and entry[0] is level:
        return entry[1]
    if len(_PREPARED) >= _PREPARED_MAX:
        _PREPARED.clear()
    across, down = uniform_tables(level)
    if level.ndim == 2:
        kind = _OPAQUE
        albedo = alpha = _padded(level, np.nan)
    else:
        kind = _ALPHA_ONE if bool(np.all(level[..., 1] == 1.0)) else _PREMULTIPLIED
        albedo, alpha = _padded(level[..., 0], 0.0), _padded(level[..., 1], 0.0)
    lines = bool(np.all(np.isfinite(level)) and not np.any(np.signbit(level)))
    value = (kind, across, down, albedo, alpha, lines)
    _PREPARED[id(level)] = (level, value)
    return value


def _padded(plane: np.ndarray, border: float) -> np.ndarray:
    out = np.full((plane.shape[0] + 2 * PAD, plane.shape[1] + 2 * PAD), border, np.float32)
    out[PAD:-PAD, PAD:-PAD] = plane
    return out


def draw_box(roi: np.ndarray, level: np.ndarray, rays: np.ndarray, ray2tex: np.ndarray, k: int,
             box: tuple[int, int, int, int], sub: tuple[int, int, int, int],
             classes: np.ndarray | None = None) -> None:
    """Composite a textured patch over ``roi`` (the pixels ``sub`` (x0, y0, x1, y1) of its pixel
    ``box``, float32) in place, from its texture ``level``: (h, w) an opaque albedo, which
    replaces the pixels whose samples all read the texture (the others are left as they are);
    (h, w, 2) premultiplied (albedo * alpha, alpha), composited ``roi * (1 - A) + P``. ``rays``:
    the ray table (H, W, 2) float32, ``ray2tex`` (3, 3) rays to the level's texture coordinates
    (texel centres on integers), ``k`` the samples per pixel side. ``classes``: an int8 array of
    the roi's shape, given each pixel's path (0: no read on the texture, left as it is; 1: one
    texel's value; 2: sampled k x k), for the tests."""
    kind, across, down, albedo, alpha, lines = prepared(level)
    _draw(roi, albedo, alpha, kind, across, down, rays, np.ascontiguousarray(ray2tex, np.float64), k,
          *(int(v) for v in box), *(int(v) for v in sub), _NO_CLASSES if classes is None else classes, lines)


@numba.njit(cache=True, inline="always")
def _uniform(across: Any, down: Any, r0: int, c0: int, r1: int, c1: int) -> bool:
    """Texels [r0, r1] x [c0, c1] (inclusive, on the texture) all equal."""
    return _rows_flat(across, r0, c0, r1, c1) and _columns_flat(down, r0, c0, r1, c1)


@numba.njit(cache=True, inline="always")
def _rows_flat(across: Any, r0: int, c0: int, r1: int, c1: int) -> bool:
    """Texels [r0, r1] x [c0, c1] (inclusive, on the texture, fewer than 2**16): each row of them
    one value."""
    return (np.int64(across[r1 + 1, c1]) - np.int64(across[r0, c1]) - np.int64(across[r1 + 1, c0])
            + np.int64(across[r0, c0])) & 0xFFFF == 0 and (r1 - r0 + 1) * (c1 - c0 + 1) < _WRAP


@numba.njit(cache=True, inline="always")
def _columns_flat(down: Any, r0: int, c0: int, r1: int, c1: int) -> bool:
    """Texels [r0, r1] x [c0, c1] (inclusive, on the texture, fewer than 2**16): each column of them
    one value."""
    return (np.int64(down[r1, c1 + 1]) - np.int64(down[r0, c1 + 1]) - np.int64(down[r1, c0])
            + np.int64(down[r0, c0])) & 0xFFFF == 0 and (r1 - r0 + 1) * (c1 - c0 + 1) < _WRAP


@numba.njit(cache=True, error_model="numpy")
def _centres(rays: Any, h: Any, bx0: int, by0: int, bx1: int, by1: int, x0: int, y0: int, x1: int,
             y1: int) -> tuple[Any, Any]:
    """The pixel centres' texture coordinates (u, v) over ``sub`` grown by one pixel, each
    (y1 - y0 + 2, x1 - x0 + 2) float32, as ``cv2.perspectiveTransform`` of the rays; a pixel of
    the ring outside the ``box`` repeats its neighbour inside (``cv2.resize``'s clamping)."""
    cu = np.empty((y1 - y0 + 2, x1 - x0 + 2), np.float32)
    cv = np.empty((y1 - y0 + 2, x1 - x0 + 2), np.float32)
    eps = 1.1920928955078125e-07  # FLT_EPSILON: perspectiveTransform's test for a point at infinity
    for r in range(y1 - y0 + 2):
        y = min(max(y0 - 1 + r, by0), by1 - 1)
        for c in range(x1 - x0 + 2):
            x = min(max(x0 - 1 + c, bx0), bx1 - 1)
            rx, ry = np.float64(rays[y, x, 0]), np.float64(rays[y, x, 1])
            wz = rx * h[2, 0] + ry * h[2, 1] + h[2, 2]
            if abs(wz) > eps:
                wz = 1.0 / wz
                cu[r, c] = (rx * h[0, 0] + ry * h[0, 1] + h[0, 2]) * wz
                cv[r, c] = (rx * h[1, 0] + ry * h[1, 1] + h[1, 2]) * wz
            else:
                cu[r, c] = 0.0
                cv[r, c] = 0.0
    return cu, cv


@numba.njit(cache=True, inline="always")
def _extent(c: Any, r: int, x: int, f: float) -> tuple[float, float]:
    """The range of a coordinate (``c``, padded) over the samples of pixel (r, x) (padded
    indices): sample - centre = wx Dx + wy Dy + wx wy X in each quadrant (its neighbours along
    x, along y and across), 0 <= wx, wy <= f."""
    m = np.float64(c[r, x])
    dxp, dxm = c[r, x + 1] - m, c[r, x - 1] - m
    dyp, dym = c[r + 1, x] - m, c[r - 1, x] - m
    xpp = c[r + 1, x + 1] - m - dxp - dyp
    xpm = c[r - 1, x + 1] - m - dxp - dym
    xmp = c[r + 1, x - 1] - m - dxm - dyp
    xmm = c[r - 1, x - 1] - m - dxm - dym
    lo = m + f * (min(0.0, min(dxp, dxm)) + min(0.0, min(dyp, dym))) + f * f * min(
        0.0, min(min(xpp, xpm), min(xmp, xmm)))
    hi = m + f * (max(0.0, max(dxp, dxm)) + max(0.0, max(dyp, dym))) + f * f * max(
        0.0, max(max(xpp, xpm), max(xmp, xmm)))
    return lo, hi


@numba.njit(cache=True, inline="always")
def _samples(c: Any, r: int, x: int, w_prev: Any, w_next: Any, k: int, out: Any) -> None:
    """A coordinate (``c``, padded) at pixel (r, x)'s k x k samples, into ``out``: bilinear between
    its centre and its neighbours', rounded to float32 (the coordinate image cv2.remap reads)."""
    for sy in range(k):
        ny, wy = (r - 1, w_prev[sy]) if w_prev[sy] > 0.0 else (r + 1, w_next[sy])
        cm = c[r, x - 1] + wy * (c[ny, x - 1] - c[r, x - 1])
        co = c[r, x] + wy * (c[ny, x] - c[r, x])
        cn = c[r, x + 1] + wy * (c[ny, x + 1] - c[r, x + 1])
        for sx in range(k):
            if w_prev[sx] > 0.0:
                out[sy * k + sx] = np.float32(co + w_prev[sx] * (cm - co))
            else:
                out[sy * k + sx] = np.float32(co + w_next[sx] * (cn - co))


@numba.njit(cache=True, inline="always")
def _line_read(plane: Any, su: float, sv: float, columns_flat: bool, r0: int, c0: int, tw: int, th: int) -> float:
    """The bilinear read of the general path at (su, sv) in a block of texels whose columns
    (``columns_flat``; else rows) are each one value, from row ``r0`` (column ``c0``) of the
    block: the same operations on the same values, less those that add an exact 0."""
    if columns_flat:  # a read's two rows equal: bottom == top, top + (bottom - top) * b == top
        fj = math.floor(su)
        a = su - fj
        j0 = min(max(fj, -PAD), tw + PAD - 2) + PAD
        p00, p01 = plane[r0 + PAD, j0], plane[r0 + PAD, j0 + 1]
        return p00 + (p01 - p00) * a
    # a read's two columns equal: p01 - p00 == 0, top == p00, the bottom lerp == p10
    fi = math.floor(sv)
    b = sv - fi
    i0 = min(max(fi, -PAD), th + PAD - 2) + PAD
    top, bottom = np.float64(plane[i0, c0 + PAD]), np.float64(plane[i0 + 1, c0 + PAD])
    return top + (bottom - top) * b


@numba.njit(cache=True, error_model="numpy", nogil=True)  # a camera rendering in a thread
def _draw(roi: Any, albedo: Any, alpha: Any, mode: int, across: Any, down: Any, rays: Any, h: Any, k: int,
          bx0: int, by0: int, bx1: int, by1: int, x0: int, y0: int, x1: int, y1: int, classes: Any,
          lines: bool) -> None:
    """:func:`draw_box`'s loops; ``classes`` (the roi's shape, or empty: not recorded) gets each
    pixel's path: 0 no read on the texture, ``_WHOLE`` one texel's value, ``_SAMPLED``."""
    cu, cv = _centres(rays, h, bx0, by0, bx1, by1, x0, y0, x1, y1)
    # sample s of a pixel side: offset (s + 1/2)/k - 1/2, its weights on the previous pixel's
    # centre, its own and the next's
    w_prev, w_own, w_next = np.zeros(k), np.zeros(k), np.zeros(k)
    for s in range(k):
        offset = (s + 0.5) / k - 0.5
        w_prev[s], w_next[s] = max(-offset, 0.0), max(offset, 0.0)
        w_own[s] = 1.0 - abs(offset)
    f = w_next[k - 1]  # the farthest sample's weight on a neighbour
    th, tw = albedo.shape[0] - 2 * PAD, albedo.shape[1] - 2 * PAD
    inv_n = 1.0 / (k * k)
    w = x1 - x0
    c0s, c1s = np.empty(w, np.int64), np.empty(w, np.int64)
    r0s, r1s = np.empty(w, np.int64), np.empty(w, np.int64)
    su, sv = np.empty(k * k), np.empty(k * k)
    record = classes.size > 0
    for r in range(1, y1 - y0 + 1):
        # the texels each pixel's samples can read (bilinear: one further): a vectorisable pass
        for x in range(1, w + 1):
            u_lo, u_hi = _extent(cu, r, x, f)
            v_lo, v_hi = _extent(cv, r, x, f)
            c0s[x - 1], c1s[x - 1] = math.floor(u_lo - _MARGIN), math.floor(u_hi + _MARGIN) + 1
            r0s[x - 1], r1s[x - 1] = math.floor(v_lo - _MARGIN), math.floor(v_hi + _MARGIN) + 1
        for x in range(1, w + 1):
            c0, c1, r0, r1 = c0s[x - 1], c1s[x - 1], r0s[x - 1], r1s[x - 1]
            if c1 < 0 or c0 >= tw or r1 < 0 or r0 >= th:
                continue  # every read off the texture: NaN (opaque) or nothing (premultiplied): class 0
            on_texture = c0 >= 0 and c1 < tw and r0 >= 0 and r1 < th
            rows_flat = on_texture and _rows_flat(across, r0, c0, r1, c1)
            columns_flat = on_texture and _columns_flat(down, r0, c0, r1, c1)
            if rows_flat and columns_flat:
                if mode == _OPAQUE:
                    roi[r - 1, x - 1] = albedo[r0 + PAD, c0 + PAD]
                else:
                    roi[r - 1, x - 1] = (roi[r - 1, x - 1] * (np.float32(1.0) - alpha[r0 + PAD, c0 + PAD])
                                         + albedo[r0 + PAD, c0 + PAD])
                if record:
                    classes[r - 1, x - 1] = _WHOLE
                continue
            # the k x k samples' coordinates: bilinear between the centre and its neighbours
            line = lines and (columns_flat or rows_flat)
            if record:
                classes[r - 1, x - 1] = _LINE if line else _SAMPLED
            if not line or columns_flat:
                _samples(cu, r, x, w_prev, w_next, k, su)
            if not line or not columns_flat:
                _samples(cv, r, x, w_prev, w_next, k, sv)
            # bilinear reads of the padded planes, clamped to their border (past it: all border)
            total_p = 0.0
            total_a = 0.0
            with_alpha = mode == _PREMULTIPLIED or (mode == _ALPHA_ONE and not on_texture)
            if line:
                # the block's texels equal down each column (or along each row): a read's two rows
                # (columns) equal, the general read's lerp between them adds an exact 0 (no
                # texel is -0.0, NaN or infinite: ``lines``), so only the other axis is read
                for s in range(k * k):
                    total_p += _line_read(albedo, su[s], sv[s], columns_flat, r0, c0, tw, th)
                    if with_alpha:
                        total_a += _line_read(alpha, su[s], sv[s], columns_flat, r0, c0, tw, th)
            else:
                for s in range(k * k):
                    fj, fi = math.floor(su[s]), math.floor(sv[s])
                    a, b = su[s] - fj, sv[s] - fi
                    j0 = min(max(fj, -PAD), tw + PAD - 2) + PAD
                    i0 = min(max(fi, -PAD), th + PAD - 2) + PAD
                    p00, p01 = albedo[i0, j0], albedo[i0, j0 + 1]
                    p10, p11 = albedo[i0 + 1, j0], albedo[i0 + 1, j0 + 1]
                    top = p00 + (p01 - p00) * a
                    total_p += top + (p10 + (p11 - p10) * a - top) * b
                    if with_alpha:
                        p00, p01 = alpha[i0, j0], alpha[i0, j0 + 1]
                        p10, p11 = alpha[i0 + 1, j0], alpha[i0 + 1, j0 + 1]
                        top = p00 + (p01 - p00) * a
                        total_a += top + (p10 + (p11 - p10) * a - top) * b
            if not with_alpha:
                total_a = k * k
            if mode == _OPAQUE and np.isnan(total_p):
                continue  # a read off the texture (NaN): the pixel left as it is
            if mode == _OPAQUE:
                roi[r - 1, x - 1] = np.float32(total_p * inv_n)
            else:
                mean_a = np.float32(total_a * inv_n)
                roi[r - 1, x - 1] = roi[r - 1, x - 1] * (np.float32(1.0) - mean_a) + np.float32(total_p * inv_n)


def warm_up() -> None:
    """Compile :func:`_draw` (about 4 s, once per install: numba caches the machine code next to
    this file) or load it (a fresh process), for a box of the canvas (a strided view) and a
    buffer of its own (a region render's), so that neither lands in a frame; the sim camera's
    ``setup`` calls it. (Every kind of texture is read through the same padded float32 planes.)"""
    texture = np.zeros((8, 8), np.float32)
    texture[2:6, 2:6] = 1.0
    rays = np.dstack(np.meshgrid(np.arange(6, dtype=np.float32), np.arange(6, dtype=np.float32)))
    rays.flags.writeable = False  # as the ray tables (read-only, shared)
    for canvas in (np.zeros((6, 6), np.float32), np.zeros((6, 8), np.float32)[:, 1:7]):
        draw_box(canvas, texture, rays, np.eye(3), 4, (0, 0, 6, 6), (0, 0, 6, 6))
