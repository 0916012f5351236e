"""The image sensor's exposure (:meth:`orbitree.drivers.sim_sensor.ImageSensor.expose`) as one compiled pass.

The OpenCV exposure makes six passes over a float frame (light product, Gaussian blur, the noise's
variance, its square root, the noise's scaling, the rounding sum to 8 bits). :func:`expose` does
the same arithmetic row by row: each albedo row is multiplied by the light and blurred along the
row into a ring of ``2 r + 1`` rows, and as soon as the ring holds an output row's neighbours the
column blur, the noise and the quantisation of that row follow, in cache.

The arithmetic is OpenCV's, operation for operation, as OpenCV runs it on a CPU with fused
multiply-adds (AVX2/FMA3 and up; checked against ``cv2.GaussianBlur`` etc. in
``tests/drivers/test_sim_expose.py``):

* the kernel taps are ``cv2.getGaussianKernel(ksize, sigma, CV_32F)`` with ``ksize =
  cvRound(8 sigma + 1) | 1`` (``GaussianBlur``'s size for a float image; 1 along an axis of one
  pixel), the border ``BORDER_REFLECT_101`` of the image given;
* along a row, kernels of 3 or 5 taps are summed symmetrically (``(x-1 + x1) k1``, then
  ``fma(x0, k0, s)``, then ``fma(x-2 + x2, k2, s)``: OpenCV's small symmetric row filter), longer
  ones left to right (``x-r k-r``, then ``fma(x, k, s)``: ``RowVec_32f``); along a column
  symmetrically from the centre (``k0 x0``, then ``fma(x-j + xj, kj, s)``: ``SymmColumnVec_32f``);
  orders found by comparing with ``cv2.GaussianBlur`` bit for bit (OpenCV 5.1 here);
* ``sigma**2 = fma(signal, gain, read**2)`` in float32 (``addWeighted``'s vector loop), ``sqrt``,
  ``noise * sigma * sign``, ``signal + that`` in float32, rounded half to even and saturated to
  0..255 (``cv2.add`` to ``CV_8U``), then the gamma table if any.

Each pixel is computed the same way whatever the image around it (no lanes, no tails: LLVM
vectorises the loops without reassociating), so a region (:mod:`orbitree.drivers.sim_region`)
gets the whole frame's pixels wherever it starts. On a CPU without FMA OpenCV rounds its blur and
``addWeighted`` differently (by an ulp now and then); the test bounds the 8-bit pixels that differ.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["blur_taps", "expose", "warm_up"]


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (float32), as the FMA instructions OpenCV's loops use."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fn, args)

    return sig, codegen


def blur_taps(sigma_px: float, size: int) -> np.ndarray:
    """The float32 Gaussian taps ``cv2.GaussianBlur(img, (0, 0), sigma_px)`` uses along an axis of
    ``size`` pixels of a float image: ``getGaussianKernel(cvRound(8 sigma + 1) | 1, sigma)``; one
    tap (1.0) for no blur or an axis of one pixel."""
    import cv2

    if sigma_px <= 0 or size == 1:
        return np.ones(1, np.float32)
    ksize = int(np.rint(sigma_px * 8 + 1)) | 1
    return cv2.getGaussianKernel(ksize, sigma_px, ktype=cv2.CV_32F).ravel().copy()


def expose(albedo: np.ndarray, light: np.ndarray, noise: np.ndarray, origin: tuple[int, int],
           sigma_px: float, shot_gain: float, read_noise: float, sign: float,
           lut: np.ndarray | None) -> np.ndarray:
    """The 8-bit image (H, W) of ``albedo`` (H, W) float32, C-contiguous: ``light`` (the lens's
    whole image, float32, DN per unit albedo) times the albedo, blurred (Gaussian ``sigma_px``,
    reflected at ``albedo``'s edges), plus ``noise`` (the whole image's N(0, 1) draws, float32)
    times ``sign`` times ``sqrt(read_noise**2 + shot_gain * signal)``, rounded and saturated, then
    ``lut`` (256 uint8) if given. ``origin`` (x0, y0): where ``albedo``'s first pixel is in the
    lens's image (light and noise are read there)."""
    h, w = albedo.shape
    ox, oy = int(origin[0]), int(origin[1])
    if ox < 0 or oy < 0 or oy + h > light.shape[0] or ox + w > light.shape[1] or noise.shape != light.shape:
        raise ValueError(f"expose: an albedo of {h}x{w} at {origin} does not fit a light field of "
                         f"{light.shape} and noise of {noise.shape}")
    out = np.empty((h, w), np.uint8)
    table = np.arange(256, dtype=np.uint8) if lut is None else lut
    _expose(albedo, light, noise, ox, oy, blur_taps(sigma_px, w), blur_taps(sigma_px, h),
            np.float32(shot_gain), np.float32(read_noise**2), np.float32(sign), table, lut is not None, out)
    return out


def warm_up() -> None:
    """Compile :func:`_expose` for the types a sensor passes (about 2 s once per install: numba
    caches the machine code next to this file) or load it (about 0.1 s), outside any frame."""
    albedo = np.full((8, 8), 0.5, np.float32)
    noise = np.zeros((8, 8), np.float32)
    noise.flags.writeable = False  # the sensor's draws are a read-only window of its table
    for lut in (None, np.arange(256, dtype=np.uint8)):
        for n in (noise, noise.copy()):
            expose(albedo, np.full((8, 8), 255.0, np.float32), n, (0, 0), 0.7, 0.04, 1.5, 1.0, lut)


@numba.njit(cache=True, inline="always")
def _reflect101(p: int, n: int) -> int:
    """OpenCV's ``borderInterpolate(p, n, BORDER_REFLECT_101)``: ``dcb|abcd|cba``, repeated."""
    if n == 1:
        return 0
    while p < 0 or p >= n:
        p = -p if p < 0 else 2 * n - 2 - p
    return p


@numba.njit(cache=True)
def _expose(albedo, light, noise, ox, oy, kx, ky, gain, read2, sign, lut, use_lut, out):
    """:func:`expose`'s loops (see the module docstring for the order of the arithmetic).

    Written for LLVM's vectoriser: the inner loops index their rows by the loop's variable only
    (views for the shifts: no wrap-around of negative indices), and each reads at most a few rows
    (several taps a loop, the running sum kept in a register), so that the run-time checks that
    the row written overlaps none read stay within what LLVM emits (8)."""
    h, w = albedo.shape
    rx, ry = len(kx) // 2, len(ky) // 2
    ring_rows = 2 * ry + 1
    ring = np.empty((ring_rows, w), np.float32)  # the row-blurred rows, row y in slot y % ring_rows
    padded = np.empty(w + 2 * rx, np.float32)  # a row's light product, its borders reflected
    product = padded[rx:rx + w]
    column = np.empty(w, np.float32)
    symmetric_rows = len(kx) == 3 or len(kx) == 5
    done = -1  # the last row blurred along the row
    for y in range(h):
        while done < min(y + ry, h - 1):
            done += 1
            source, lit = albedo[done], light[oy + done, ox:ox + w]
            for x in range(w):
                product[x] = source[x] * lit[x]
            for i in range(1, rx + 1):
                padded[rx - i] = padded[rx + _reflect101(-i, w)]
                padded[rx + w - 1 + i] = padded[rx + _reflect101(w - 1 + i, w)]
            dst = ring[done % ring_rows]
            if rx == 0:
                for x in range(w):
                    dst[x] = product[x] * kx[0]
            elif symmetric_rows:
                _row_small(padded, dst, kx, rx, w)
            else:
                _row_chain(padded, dst, kx, w)
        _column(ring, column, ky, y, h)
        draws = noise[oy + y, ox:ox + w]
        row = out[y]
        for x in range(w):
            signal = column[x]
            sigma = np.sqrt(_fma(signal, gain, read2))
            value = np.rint(signal + draws[x] * sigma * sign)
            row[x] = np.uint8(min(max(value, np.float32(0.0)), np.float32(255.0)))
        if use_lut:
            for x in range(w):
                row[x] = lut[row[x]]
    return out


@numba.njit(cache=True, inline="always")
def _row_chain(padded, dst, kx, w):
    """``dst[x] = sum_i kx[i] padded[x + i]``: ``padded[x] kx[0]``, then ``fma`` tap after tap,
    three taps a loop."""
    n = len(kx)
    p0, p1, p2 = padded[0:w], padded[1:1 + w], padded[2:2 + w]
    k0, k1, k2 = kx[0], kx[1], kx[2]
    for x in range(w):
        dst[x] = _fma(p2[x], k2, _fma(p1[x], k1, p0[x] * k0))
    i = 3
    while i < n:
        if n - i >= 3:
            p0, p1, p2 = padded[i:i + w], padded[i + 1:i + 1 + w], padded[i + 2:i + 2 + w]
            k0, k1, k2 = kx[i], kx[i + 1], kx[i + 2]
            for x in range(w):
                dst[x] = _fma(p2[x], k2, _fma(p1[x], k1, _fma(p0[x], k0, dst[x])))
            i += 3
        else:
            p0, k0 = padded[i:i + w], kx[i]
            for x in range(w):
                dst[x] = _fma(p0[x], k0, dst[x])
            i += 1


@numba.njit(cache=True, inline="always")
def _row_small(padded, dst, kx, rx, w):
    """OpenCV's order for a symmetric row kernel of 3 or 5 taps (``rx`` 1 or 2): ``(x-1 + x1) k1``,
    ``fma(x0, k0, .)``, then ``fma(x-2 + x2, k2, .)``."""
    before, center, after = padded[rx - 1:rx - 1 + w], padded[rx:rx + w], padded[rx + 1:rx + 1 + w]
    k0, k1 = kx[rx], kx[rx + 1]
    if rx == 1:
        for x in range(w):
            dst[x] = _fma(center[x], k0, (before[x] + after[x]) * k1)
    else:
        far_before, far_after, k2 = padded[0:w], padded[4:4 + w], kx[4]
        for x in range(w):
            dst[x] = _fma(far_before[x] + far_after[x], k2, _fma(center[x], k0, (before[x] + after[x]) * k1))


@numba.njit(cache=True, inline="always")
def _column(ring, column, ky, y, h):
    """Row ``y``'s blur along the columns from the row-blurred rows in ``ring`` (row ``y`` in slot
    ``y % len(ring)``, those beyond the image's edges reflected): ``k0 x0``, then ``fma(x-j + xj,
    kj, .)`` for j = 1, 2...; two pairs of rows a loop."""
    ring_rows, w = ring.shape
    ry = len(ky) // 2
    center, k0 = ring[y % ring_rows], ky[ry]
    if ry == 0:
        for x in range(w):
            column[x] = center[x] * k0
        return
    a1, b1 = ring[_reflect101(y - 1, h) % ring_rows], ring[_reflect101(y + 1, h) % ring_rows]
    k1 = ky[ry + 1]
    if ry == 1:
        for x in range(w):
            column[x] = _fma(a1[x] + b1[x], k1, center[x] * k0)
        return
    a2, b2 = ring[_reflect101(y - 2, h) % ring_rows], ring[_reflect101(y + 2, h) % ring_rows]
    k2 = ky[ry + 2]
    for x in range(w):
        column[x] = _fma(a2[x] + b2[x], k2, _fma(a1[x] + b1[x], k1, center[x] * k0))
    j = 3
    while j <= ry:
        a1, b1, k1 = ring[_reflect101(y - j, h) % ring_rows], ring[_reflect101(y + j, h) % ring_rows], ky[ry + j]
        if j + 1 <= ry:
            a2, b2 = ring[_reflect101(y - j - 1, h) % ring_rows], ring[_reflect101(y + j + 1, h) % ring_rows]
            k2 = ky[ry + j + 1]
            for x in range(w):
                column[x] = _fma(a2[x] + b2[x], k2, _fma(a1[x] + b1[x], k1, column[x]))
            j += 2
        else:
            for x in range(w):
                column[x] = _fma(a1[x] + b1[x], k1, column[x])
            j += 1
