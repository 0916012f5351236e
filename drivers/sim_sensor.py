"""The simulated camera's image sensor: what turns the scene's albedo into an 8-bit image.

:class:`SensorModel` is the photometric model (exposure, illumination gradient, vignetting,
optical blur, read and shot noise, gamma); :class:`ImageSensor` applies it frame after frame,
with what it keeps between frames (the light field per model and lens, a table of noise draws
made once from the camera's seed, a float work image); the exposure itself is one compiled
pass (:mod:`orbitree.drivers.sim_expose`), OpenCV's passes kept beside it (``expose_opencv``,
the same pixels) for what the kernel does not take. :func:`line_kernel` is the image of a
uniform motion over the exposure (the camera's motion blur). The geometry of what is seen is
:mod:`orbitree.drivers.sim_render`'s; :mod:`orbitree.drivers.sim_camera` puts the two together.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import cv2
import numpy as np

from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.drivers.sim_expose import expose as expose_compiled

__all__ = ["NOISE_OFFSETS", "ImageSensor", "SensorModel", "line_kernel"]

NOISE_OFFSETS = 2**21  # offsets of a frame's window in the sensor's table of noise draws


@dataclass(frozen=True)
class SensorModel:
    """Photometric model. Albedos are in [0, 1]; digital numbers (DN) on 0..255.

    Pixel value = 255 * exposure * light(x, y) * albedo, blurred, plus noise of standard
    deviation ``sqrt(read_noise_dn**2 + shot_noise_gain * value)``.
    """

    exposure: float = 1.0
    gradient: tuple[float, float] = (0.15, -0.1)  # relative change across the width / height
    vignetting: float = 0.15  # relative loss at the image corner
    blur_sigma_px: float = 0.7
    read_noise_dn: float = 1.5
    shot_noise_gain: float = 0.04  # DN per DN: sigma 3.4 DN at 255 with the read noise
    gamma: float = 1.0  # output = 255 * (linear / 255) ** (1 / gamma), applied last

    @classmethod
    def sample(cls, rng: np.random.Generator, *, stress: bool = False) -> SensorModel:
        """Random conditions for accuracy campaigns: nominal (exposure 0.75-1.15, gradient
        +-0.2, blur sigma 0.5-1.0 px, read noise 1-2.5 DN, shot gain 0.02-0.06) or ``stress``
        (exposure 0.4-1.3, gradient +-0.4, vignetting 0.3, blur 0.8-1.5 px, read noise 2-4 DN,
        shot gain 0.05-0.1, gamma 0.6-1.6)."""
        if stress:
            return cls(rng.uniform(0.4, 1.3), tuple(rng.uniform(-0.4, 0.4, 2)), 0.3,
                       rng.uniform(0.8, 1.5), rng.uniform(2.0, 4.0), rng.uniform(0.05, 0.1),
                       rng.uniform(0.6, 1.6))
        return cls(rng.uniform(0.75, 1.15), tuple(rng.uniform(-0.2, 0.2, 2)), 0.15,
                   rng.uniform(0.5, 1.0), rng.uniform(1.0, 2.5), rng.uniform(0.02, 0.06))


class ImageSensor:
    """A camera's sensor at work: ``expose`` reads one frame out of the rendered albedo.

    ``seed``: the camera's seed; the table of noise draws comes from it, and ``rng`` (a generator
    of the same seed) draws each frame's offset into the table. ``restart`` puts a copy (the
    camera's render process) where the original is, so both draw the same noise.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._noise_table: np.ndarray | None = None  # N(0, 1) float32 draws (see standard_normal)
        self._light: tuple[SensorModel, CameraIntrinsics, np.ndarray] | None = None
        self._work: np.ndarray | None = None

    def restart(self, seed: int, rng_state: dict) -> None:
        """Continue from another sensor's seed and generator state (its next frame's noise)."""
        self.seed, self._noise_table = seed, None
        self.rng.bit_generator.state = rng_state

    compiled = True  # expose through the compiled kernel (sim_expose) where it applies; False: OpenCV's passes

    def expose(self, albedo: np.ndarray, model: SensorModel, lens: CameraIntrinsics,
               origin: tuple[int, int] | None = None,
               draw: tuple[np.ndarray, float] | None = None) -> np.ndarray:
        """The 8-bit grey image (H, W) the sensor reads out of ``albedo`` (H, W) float32 (spent:
        may be used as work space): light, optical blur, read and shot noise, quantisation, gamma.
        ``origin`` (x0, y0): ``albedo`` is only the lens's image's pixels from there (the image's
        light and noise; ``sim_region``); ``draw``: the frame's noise draw, already made
        (``standard_normal`` of the whole image), else made here.

        A C-contiguous float32 albedo goes through :func:`orbitree.drivers.sim_expose.expose` (one
        compiled pass, OpenCV's arithmetic); anything else (another dtype or layout, ``compiled``
        False) through OpenCV's passes (:meth:`expose_opencv`)."""
        s = model
        light = self._light_field(model, lens)
        noise, sign = draw or self.standard_normal(albedo.shape if origin is None else (lens.height, lens.width))
        if (self.compiled and albedo.dtype == np.float32 and albedo.ndim == 2 and albedo.flags.c_contiguous
                and noise.shape == light.shape):
            lut = _gamma_table(s.gamma) if s.gamma != 1.0 else None
            return expose_compiled(albedo, light, noise, origin or (0, 0), s.blur_sigma_px, s.shot_noise_gain,
                                   s.read_noise_dn, sign, lut)
        return self.expose_opencv(albedo, model, lens, origin, (noise, sign))

    def expose_opencv(self, albedo: np.ndarray, model: SensorModel, lens: CameraIntrinsics,
                      origin: tuple[int, int] | None, draw: tuple[np.ndarray, float]) -> np.ndarray:
        """:meth:`expose` through OpenCV's passes (``albedo`` spent: used as work space), the frame's
        noise ``draw`` given: multiply, GaussianBlur, addWeighted, sqrt, multiply, add to 8 bits,
        LUT."""
        s = model
        light = self._light_field(model, lens)
        if origin is None:
            signal = self._buffer(albedo.shape)
        else:
            box = (slice(origin[1], origin[1] + albedo.shape[0]), slice(origin[0], origin[0] + albedo.shape[1]))
            signal, light = np.empty_like(albedo), light[box]
        cv2.multiply(albedo, light, dst=signal)
        if s.blur_sigma_px > 0:
            cv2.GaussianBlur(signal, (0, 0), s.blur_sigma_px, dst=albedo)  # the albedo is spent
            signal, albedo = albedo, signal
        # sigma**2 = read**2 + gain * signal, never negative (the signal is a blur of a product
        # of non-negative planes)
        sigma = cv2.addWeighted(signal, s.shot_noise_gain, signal, 0.0, s.read_noise_dn**2, dst=albedo)
        cv2.sqrt(sigma, dst=sigma)
        noise, sign = draw
        if origin is not None:
            noise = noise[box]
        cv2.multiply(noise, sigma, dst=sigma, scale=sign)
        image = cv2.add(signal, sigma, dtype=cv2.CV_8U)  # rounds, saturates
        if s.gamma != 1.0:
            image = cv2.LUT(image, _gamma_table(s.gamma))
        return image

    def _buffer(self, shape: tuple[int, int]) -> np.ndarray:
        """A float32 image of ``shape`` kept between frames (the exposure's work space)."""
        if self._work is None or self._work.shape != shape:
            self._work = np.empty(shape, np.float32)
        return self._work

    def standard_normal(self, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
        """A frame of N(0, 1) draws ``shape`` (a read-only view) and a sign (+-1) to apply to it.

        The draws are a window of a table of ``H*W + NOISE_OFFSETS`` independent N(0, 1) float32
        draws made once per sensor (from the camera's seed), read at an offset and with a sign
        drawn per frame from the sensor's generator (one draw a frame instead of H*W: the noise
        cost 3 passes over the frame, now none). Within a frame the values are independent
        standard normals, so the noise stays white and per pixel; across frames the noise is
        not independent but a shifted copy (by a random offset among ``NOISE_OFFSETS``, read in
        row order) of the same table, possibly negated: a pixel's noise in two frames is
        independent unless their offsets and signs coincide (2 in 4.2 million), and nothing
        that compares frames at the same or nearby pixels sees a correlation."""
        size = shape[0] * shape[1]
        table = self._noise_table
        if table is None or len(table) != size + NOISE_OFFSETS:
            table = self._noise_table = noise_table(self.seed, size + NOISE_OFFSETS)
        draw = int(self.rng.integers(0, 2 * NOISE_OFFSETS))
        offset = draw >> 1
        return table[offset:offset + size].reshape(shape), -1.0 if draw & 1 else 1.0

    def _light_field(self, model: SensorModel, lens: CameraIntrinsics) -> np.ndarray:
        """255 * exposure * illumination, per pixel (cached per sensor model and lens)."""
        cached = self._light
        if cached is not None and cached[0] == model and cached[1] is lens:
            return cached[2]
        s, intr = model, lens
        u = (np.arange(intr.width, dtype=np.float32) / intr.width - 0.5)[None, :]
        v = (np.arange(intr.height, dtype=np.float32) / intr.height - 0.5)[:, None]
        r2 = (u**2 + v**2) / 0.5  # 1 at the image corners
        light = (1 + s.gradient[0] * u + s.gradient[1] * v) * (1 - s.vignetting * r2)
        field_ = (255.0 * s.exposure * light).astype(np.float32)
        self._light = (s, intr, field_)
        return field_


_NOISE_TABLES: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
NOISE_TABLES_KEPT = 6
"""Noise tables a process keeps (12 MB each at 1280x720): a campaign's worker runs the same few
seeds (seed0 + cycle) case after case, and drawing a table costs ~55 ms, 1-2 % of a run."""


def noise_table(seed: int, length: int) -> np.ndarray:
    """``length`` N(0, 1) float32 draws from the generator of ``[seed, 2]``, read-only; the last
    few tables made are kept and shared (the same draws: a table depends only on its key)."""
    key = (int(seed), int(length))
    table = _NOISE_TABLES.get(key)
    if table is None:
        table = np.random.default_rng([seed, 2]).standard_normal(length, dtype=np.float32)
        table.flags.writeable = False
        _NOISE_TABLES[key] = table
        while len(_NOISE_TABLES) > NOISE_TABLES_KEPT:
            _NOISE_TABLES.popitem(last=False)
    else:
        _NOISE_TABLES.move_to_end(key)
    return table


def _gamma_table(gamma: float) -> np.ndarray:
    """The 8-bit gamma table: ``255 * (v / 255) ** (1 / gamma)``, rounded, for v in 0..255."""
    lut = 255.0 * (np.arange(256) / 255.0) ** (1.0 / gamma)
    return np.clip(np.rint(lut), 0, 255).astype(np.uint8)


def line_kernel(shift: np.ndarray) -> np.ndarray:
    """A normalised (odd, odd) kernel: a uniform segment of length ``|shift|`` pixels along
    ``shift`` (2,), centred (the image of a uniform motion seen over the exposure): 8 samples a
    pixel along it, each split bilinearly between its four neighbouring pixels."""
    shift = np.asarray(shift, dtype=np.float64)
    half = np.ceil(np.abs(shift) / 2.0).astype(int) + 1
    rows, cols = 2 * half[1] + 1, 2 * half[0] + 1
    count = max(int(np.ceil(8.0 * np.linalg.norm(shift))), 2)
    points = half + ((np.arange(count) + 0.5) / count - 0.5)[:, None] * shift  # (x, y) in the kernel
    base = np.floor(points).astype(int)
    fx, fy = (points - base).T
    gx, gy = 1 - fx, 1 - fy
    # the four neighbours' shares, accumulated per pixel in one pass in this order (neighbour
    # (0, 0) of every sample, then (0, 1), (1, 0), (1, 1)): bincount's sums from zero in input
    # order, the sums four np.add.at passes in the same order made
    flat = base[:, 1] * cols + base[:, 0]
    index = np.concatenate([flat, flat + cols, flat + 1, flat + cols + 1])
    weight = np.concatenate([gx * gy, gx * fy, fx * gy, fx * fy])
    kernel = np.bincount(index, weight, minlength=rows * cols).reshape(rows, cols)
    return (kernel / kernel.sum()).astype(np.float32)
