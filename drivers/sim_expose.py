"""The image sensor's exposure (:meth:`orbitree.drivers.sim_sensor.ImageSensor.expose`) as one compiled pass.

The OpenCV exposure makes six passes over a float frame (light product, Gaussian blur, the noise's
variance, its square root, the noise's scaling, the rounding sum to 8 bits). :func:`expose` does
the same arithmetic row by row: each albedo row is multiplied by the light and blurred along the
row into a ring of ``2 r + 1`` rows, and as soon as the ring holds an output row's neighbours the
column blur, the noise and the quantisation of that row follow in one loop, in cache. The taps
are a tuple, so numba compiles the kernel once per kernel size (each pixel's sums unrolled, the
loops over a row vectorised): :func:`warm_up` does it for ``TAPS_WARMED``, and a sim camera's
``setup`` loads its sensor's. On the flagship's frames: 1.3 ms a 1280 x 720 exposure against
1.9 ms for OpenCV's passes (``benchmarks/expose_side_by_side.py``).

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

import functools

import cv2
import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["TAPS_WARMED", "blur_taps", "expose", "warm_up"]


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (float32), as the FMA instructions OpenCV's loops use."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fn, args)

    return sig, codegen


TAPS_WARMED = (1, 3, 5, 7, 9, 11, 13)  # kernel sizes warm_up() compiles: blur sigma 0 and 0.25 to 1.5 px


@functools.lru_cache(maxsize=64)
def blur_taps(sigma_px: float, size: int) -> tuple[np.float32, ...]:
    """The float32 Gaussian taps ``cv2.GaussianBlur(img, (0, 0), sigma_px)`` uses along an axis of
    ``size`` pixels of a float image: ``getGaussianKernel(cvRound(8 sigma + 1) | 1, sigma)``; one
    tap (1.0) for no blur or an axis of one pixel. A tuple: its length is the kernel's type."""
    if sigma_px <= 0 or size == 1:
        return (np.float32(1.0),)
    ksize = int(np.rint(sigma_px * 8 + 1)) | 1
    return tuple(cv2.getGaussianKernel(ksize, sigma_px, ktype=cv2.CV_32F).ravel())


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
    table = _IDENTITY if lut is None else lut
    _expose(_read_only(albedo), _read_only(light), _read_only(noise), ox, oy, blur_taps(sigma_px, w),
            blur_taps(sigma_px, h), np.float32(shot_gain), np.float32(read_noise**2), np.float32(sign), table,
            lut is not None, out)
    return out


def warm_up(taps: tuple[int, ...] = TAPS_WARMED) -> None:
    """Compile :func:`_expose` for Gaussian kernels of ``taps`` taps (about 1.5 s each once per
    install: numba caches the machine code next to this file) or load it (a few ms each),
    outside any frame; a kernel of another size is compiled when first used."""
    sigma_of = {1: 0.0, 3: 0.3, 5: 0.5, 7: 0.7, 9: 1.0, 11: 1.2, 13: 1.5}
    albedo = np.full((8, 8), 0.5, np.float32)
    for n in taps:
        sigma = sigma_of.get(n, (n - 1.5) / 8)
        assert len(blur_taps(sigma, 8)) == n
        expose(albedo, np.full((8, 8), 255.0, np.float32), np.zeros((8, 8), np.float32), (0, 0), sigma, 0.04, 1.5,
               1.0, None)


_IDENTITY = np.arange(256, dtype=np.uint8)


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view: the kernel's arguments always of one type (numba compiles one per type)."""
    if not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


@numba.njit(cache=True, inline="always")
def _reflect101(p: int, n: int) -> int:
    """OpenCV's ``borderInterpolate(p, n, BORDER_REFLECT_101)``: ``dcb|abcd|cba``, repeated."""
    if n == 1:
        return 0
    while p < 0 or p >= n:
        p = -p if p < 0 else 2 * n - 2 - p
    return p


@numba.njit(cache=True, nogil=True)  # a camera rendering in a thread leaves the loop's thread running
def _expose(albedo, light, noise, ox, oy, kx, ky, gain, read2, sign, lut, use_lut, out):
    """:func:`expose`'s loops (see the module docstring for the order of the arithmetic). ``kx``,
    ``ky``: tuples of taps, so that their lengths are constants and each pixel's sums unroll.

    Row-blurred rows are kept by virtual row ``v`` (from ``-ry`` to ``h - 1 + ry``: the rows past
    the image's edges are its reflected rows, blurred again) in two slots of ``ring``, ``(v + ry)
    % R`` and that ``+ R``, so that an output row's ``2 ry + 1`` neighbours are consecutive rows
    of one array from slot ``y % R``. The inner loops index by the loop's variable plus
    constants (views for the other shifts: no wrap-around of negative indices) and LLVM
    vectorises them."""
    h, w = albedo.shape
    nx, ny = len(kx), len(ky)
    rx, ry = nx // 2, ny // 2
    ring_rows = ny
    ring = np.empty((2 * ring_rows, w), np.float32)
    padded = np.empty(w + 2 * rx, np.float32)  # a row's light product, its borders reflected
    product = padded[rx:rx + w]
    virtual = -ry - 1  # the last virtual row blurred along the row
    for y in range(h):
        while virtual < y + ry:
            virtual += 1
            source = _reflect101(virtual, h)
            albedo_row, light_row = albedo[source], light[oy + source, ox:ox + w]
            for x in range(w):
                product[x] = albedo_row[x] * light_row[x]
            for i in range(1, rx + 1):
                padded[rx - i] = padded[rx + _reflect101(-i, w)]
                padded[rx + w - 1 + i] = padded[rx + _reflect101(w - 1 + i, w)]
            slot = (virtual + ry) % ring_rows
            first, second = ring[slot], ring[slot + ring_rows]
            if nx == 3:
                for x in range(w):
                    s = _fma(padded[x + 1], kx[1], (padded[x] + padded[x + 2]) * kx[0])
                    first[x] = s
                    second[x] = s
            elif nx == 5:
                for x in range(w):
                    s = _fma(padded[x + 2], kx[2], (padded[x + 1] + padded[x + 3]) * kx[1])
                    s = _fma(padded[x] + padded[x + 4], kx[0], s)
                    first[x] = s
                    second[x] = s
            else:
                for x in range(w):
                    s = padded[x] * kx[0]
                    for i in range(1, nx):
                        s = _fma(padded[x + i], kx[i], s)
                    first[x] = s
                    second[x] = s
        base = y % ring_rows + ry  # the output row's row-blurred row; its neighbours around it
        draws, row = noise[oy + y, ox:ox + w], out[y]
        for x in range(w):
            signal = ring[base, x] * ky[ry]
            for j in range(1, ry + 1):
                signal = _fma(ring[base - j, x] + ring[base + j, x], ky[ry + j], signal)
            sigma = np.sqrt(_fma(signal, gain, read2))
            value = np.rint(signal + draws[x] * sigma * sign)
            row[x] = np.uint8(min(max(value, np.float32(0.0)), np.float32(255.0)))
        if use_lut:
            for x in range(w):
                row[x] = lut[row[x]]
    return out
