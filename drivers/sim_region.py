"""A region of the simulated camera's frame, rendered alone: the same pixels as the whole frame's.

``SimCamera.render(..., region=(x0, y0, x1, y1))`` returns an (H, W) uint8 image whose pixels in
the region are, bit for bit, those of the whole frame rendered from the same state (the same
noise draw: one per frame from the sensor's generator, whatever is rendered), and 0 elsewhere,
at a cost that goes with the region and what the scene puts in it (the board's markers around
it are sampled over their own boxes, see below), not with the image size. A tracker that reads
a few windows of a frame needs only those.

How each step of the frame (:meth:`SimCamera._render`) is made region-exact:

* the sensor (:meth:`ImageSensor.expose`): the light field, the noise (pixel (y, x) reads the
  frame's window of the table of draws at ``y * W + x``) and the quantisation are per pixel; the
  Gaussian optical blur reaches ``exposure_margin`` pixels (OpenCV's kernel for a float image:
  ``cvRound(8 sigma + 1) | 1`` taps), so the albedo is made on the region grown by that much.
* the motion blur (``cv2.filter2D`` with the line kernel, replicated border): the albedo is
  made on that box grown by the kernel's half-sizes. From ``DFT_TAPS`` taps on (a blur of about
  14 px diagonally, 60 px along a row) OpenCV convolves a float image through a DFT (in double,
  tiled over the image: the time per frame jumps from 3.8 ms at 11 x 11 taps to 9.8 ms at
  13 x 13, then stays flat); its crops agreed with the region's on every box tried, but a
  rounding in double of the whole image is not the region's by construction, so such frames are
  rendered whole.
* OpenCV's SIMD loops and their scalar tails round differently (fused multiply-adds): the
  GaussianBlur, ``filter2D`` and ``addWeighted`` of a box starting at an arbitrary column differ
  from the whole image's by 1 ulp (3e-5 DN) on 30-60 % of random boxes, which moves an 8-bit
  pixel now and then. Every box the sensor and the motion blur see starts and ends on columns
  that are multiples of ``ALIGN_PX`` (or the image's edge), so each pixel falls in the same SIMD
  lane as in the whole image: exact (16 suffice on this AVX-512 machine; 32 for a margin). The
  sensor's compiled exposure (:mod:`orbitree.drivers.sim_expose`) computes each pixel alike from
  any column; the alignment is for the motion blur and the sensor's OpenCV path. That
  needs an image width that is a multiple of ``ALIGN_PX`` (640, 1280, 1920...): OpenCV runs an
  element-wise operation over a contiguous image as one long row, whose lanes straddle the rows
  of any other width (whole rows from a lane's start still left ``addWeighted`` differing on the
  last 4 pixels of a 1000 x 601 image, its scalar tail), so other images are rendered whole.
* the patches (:func:`~orbitree.drivers.sim_render.render_patches` with a ``window``): a
  textured patch's texture coordinates are computed on its pixel box and enlarged k x k
  (``cv2.resize``, bilinear: a box's first and last pixel clamp what their neighbours outside
  would give), and a smooth patch (the table) is sampled on 2x2 blocks from the box's origin and
  enlarged x2; :func:`sub_box` picks the part of the box a window needs, grown by
  ``PATCH_MARGIN_PX`` (1 suffices, 0 does not) and cut on the box's 2x2 blocks and on columns
  ``PATCH_ALIGN_PX`` apart from its first (remap and resize gave the same pixels from any column
  here: a cheap insurance), and :func:`paint_clipped` draws it through a buffer of that part. The
  faces' compiled fill skips the pixels outside the window (``sim_coverage.fill_polygons``, exact
  per pixel). The on-camera tool's cached layer is per pixel. ``cv2.fillPoly`` (the image
  occluders) is not translation-invariant where the canvas cuts the polygon: see :func:`_occlude`.

What is not made cheaper: the markers inside a window cost what they cost in the whole frame (the
compiled kernel, ``sim_texkernel``, samples only their cells' edges, and each pixel from its
neighbours in the marker's whole box, so that a window's part of it is the whole frame's), and
each window pays some Python per patch it draws (what the objects draw, the lens's projections
and the patches' boxes, is planned once per frame: ``SimCamera._plan``, ``sim_render.plan_patches``;
boxes close together are still drawn as one, ``MERGE_PX``). The BoardTracker reads its frames this way
(``LazyFrame.region``): the windows of its markers' alignment, 5 % of the image on the flagship's
approach.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

__all__ = ["ALIGN_PX", "DFT_TAPS", "PATCH_ALIGN_PX", "PATCH_MARGIN_PX", "Window", "exposure_margin",
           "paint_clipped", "render_region", "sub_box"]

Window = tuple[int, int, int, int]  # (x0, y0, image width, image height): a canvas's place in the image
ALIGN_PX = 32  # columns the sensor's and the motion blur's boxes start and end on (see above)
PATCH_ALIGN_PX = 4  # columns of a patch's box its part drawn starts on (from the box's first)
PATCH_MARGIN_PX = 4  # pixels of a patch's box drawn beyond a window (its bilinear enlargements' reach)
FULL_SHARE = 0.6  # a region whose boxes cover more of the image than this is rendered whole
MERGE_PX = 20_000  # boxes merged when that adds at most this many pixels (~0.2 ms of work, a box's overhead)
DFT_TAPS = 130  # a motion-blur kernel of this many taps or more: cv2.filter2D goes through a DFT


def exposure_margin(sigma_px: float) -> int:
    """Pixels the sensor's Gaussian blur of ``sigma_px`` reaches (OpenCV's float kernel radius)."""
    if sigma_px <= 0:
        return 0
    return (int(np.rint(sigma_px * 8 + 1)) | 1) // 2


def _grown(box: tuple[int, int, int, int], dx: int, dy: int, width: int, height: int) -> tuple[int, int, int, int]:
    """``box`` (x0, y0, x1, y1) grown by (dx, dy), its columns cut on ``ALIGN_PX``, in the image."""
    x0, y0, x1, y1 = box
    x0, x1 = (x0 - dx) // ALIGN_PX * ALIGN_PX, -(-(x1 + dx) // ALIGN_PX) * ALIGN_PX
    return max(x0, 0), max(y0 - dy, 0), min(x1, width), min(y1 + dy, height)


def sub_box(box: tuple[int, int, int, int], held: tuple[int, int], window: Window,
            halved: bool) -> tuple[int, int, int, int] | None:
    """The part (x0, y0, x1, y1) of a patch's pixel ``box`` to draw for a canvas of shape ``held``
    at ``window``: the box's pixels in the canvas grown by ``PATCH_MARGIN_PX``, its columns cut on
    the box's own grid of ``ALIGN_PX`` and its rows on the box's 2x2 blocks (``halved``) or
    anywhere; None when the box misses the canvas."""
    x0, y0, x1, y1 = box
    wx0, wy0 = window[:2]
    ix0, iy0 = max(x0, wx0), max(y0, wy0)
    ix1, iy1 = min(x1, wx0 + held[1]), min(y1, wy0 + held[0])
    if ix0 >= ix1 or iy0 >= iy1:
        return None
    m, a = PATCH_MARGIN_PX, PATCH_ALIGN_PX
    sx0, sx1 = x0 + (ix0 - m - x0) // a * a, x0 - (-(ix1 + m - x0) // a) * a
    step = 2 if halved else 1
    sy0, sy1 = y0 + (iy0 - m - y0) // step * step, y0 - (-(iy1 + m - y0) // step) * step
    return max(sx0, x0), max(sy0, y0), min(sx1, x1), min(sy1, y1)


def paint_clipped(canvas: np.ndarray, window: Window, sub: tuple[int, int, int, int],
                  draw: Callable[[np.ndarray], None]) -> None:
    """``draw`` (which paints a buffer of the image's pixels ``sub``, (x0, y0, x1, y1), in place)
    applied to ``canvas`` (the image's pixels from ``window``'s corner): straight on the canvas
    when it holds all of ``sub``, else on a buffer holding the canvas's pixels, copied back."""
    sx0, sy0, sx1, sy1 = sub
    ox, oy = window[:2]
    rows, cols = canvas.shape
    ix0, iy0, ix1, iy1 = max(sx0, ox), max(sy0, oy), min(sx1, ox + cols), min(sy1, oy + rows)
    held = canvas[iy0 - oy:iy1 - oy, ix0 - ox:ix1 - ox]
    if (ix0, iy0, ix1, iy1) == (sx0, sy0, sx1, sy1):
        draw(held)
        return
    buffer = np.zeros((sy1 - sy0, sx1 - sx0), canvas.dtype)
    inner = buffer[iy0 - sy0:iy1 - sy0, ix0 - sx0:ix1 - sx0]
    inner[...] = held
    draw(buffer)
    held[...] = inner


def render_region(camera: Any, region: Sequence, cam2world: np.ndarray | None,
                  motion: tuple[np.ndarray, np.ndarray] | None, object_poses: dict[int, np.ndarray],
                  draw: tuple[np.ndarray, float] | None = None,
                  blur: tuple[np.ndarray | None, float] | None = None) -> np.ndarray:
    """:meth:`SimCamera._render` over ``region`` only, a box (x0, y0, x1, y1) or a sequence of
    them (see the module docstring): the (H, W) uint8 image, the boxes' pixels as the whole
    frame's, 0 elsewhere. The frame's noise is drawn once, as the whole frame draws it (or is
    ``draw``, drawn at the frame's capture; ``blur``: the motion blur's kernel and length as
    ``camera._blur_kernel`` gave them at the capture, else made here). Boxes
    are rendered one by one, those whose boxes for the sensor lie close together (their bounding
    box adds at most ``MERGE_PX`` pixels to theirs: each box costs some Python and the parts of
    the markers it cuts) as one (:func:`_merged`); when what they need of the image exceeds
    ``FULL_SHARE`` of it, the image's width is no multiple of ``ALIGN_PX`` or the motion blur's
    kernel has ``DFT_TAPS`` taps or more, the whole frame is rendered."""
    intr = camera.lens
    width, height = intr.width, intr.height
    boxes = [region] if len(region) and np.ndim(region[0]) == 0 else list(region)  # one box, or boxes
    out = np.zeros((height, width), np.uint8)
    if blur is None:
        kernel = camera._blur_kernel(motion, object_poses)
    else:
        kernel, camera.last_blur_px = blur
    g = exposure_margin(camera.sensor.blur_sigma_px)
    wanted = []
    for box in boxes:
        x0, y0, x1, y1 = (int(v) for v in box)
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        if x0 < x1 and y0 < y1:
            wanted.append((x0, y0, x1, y1))
    plans = []
    for exposed, inside in _merged([(_grown(box, g, g, width, height), [box]) for box in wanted]):
        painted = exposed if kernel is None else _grown(
            exposed, kernel.shape[1] // 2, kernel.shape[0] // 2, width, height)
        plans.append((inside, exposed, painted))
    if sum(_area(p) for _, _, p in plans) > FULL_SHARE * width * height or width % ALIGN_PX or (
            kernel is not None and kernel.size >= DFT_TAPS):
        image = camera._render(cam2world, motion, object_poses, draw)
        for x0, y0, x1, y1 in wanted:
            out[y0:y1, x0:x1] = image[y0:y1, x0:x1]
        return out
    if draw is None:
        draw = camera.imager.standard_normal((height, width))  # the frame's draw, as the whole frame's
    world2cam = np.linalg.inv(camera.cam2world() if cam2world is None else cam2world)
    world2cam_now = world2cam if motion is None else np.linalg.inv(motion[1])
    objects = sorted(camera.objects, key=lambda o: o.layer)
    # what the objects draw, planned once for all the boxes (the lens's projections, the patches' boxes)
    painting = [camera._plan(obj, world2cam, object_poses.get(id(obj)), (height, width))
                for obj in objects if not obj.on_camera]
    layers = [camera._layer((height, width), obj, world2cam_now, object_poses.get(id(obj)))
              for obj in objects if obj.on_camera]
    for inside, exposed, painted in plans:
        px0, py0, px1, py1 = painted
        canvas = np.full((py1 - py0, px1 - px0), camera.background_albedo, np.float32)
        for plan in painting:
            camera._draw_plan(canvas, plan, (px0, py0, width, height))
        if kernel is not None:
            canvas = cv2.filter2D(canvas, -1, kernel, borderType=cv2.BORDER_REPLICATE)
        ex0, ey0, ex1, ey1 = exposed
        canvas = np.ascontiguousarray(canvas[ey0 - py0:ey1 - py0, ex0 - px0:ex1 - px0])
        window = (ex0, ey0, width, height)
        for layer_box, planes in layers:
            if layer_box is not None:
                _apply_layer(canvas, window, layer_box, planes)
        for occ in camera.occluders:
            _occlude(canvas, occ.polygon, occ.albedo, window)
        image = camera.imager.expose(canvas, camera.sensor, intr, (ex0, ey0), draw)
        for x0, y0, x1, y1 in inside:
            out[y0:y1, x0:x1] = image[y0 - ey0:y1 - ey0, x0 - ex0:x1 - ex0]
    return out


def _area(box: tuple[int, int, int, int]) -> int:
    return (box[2] - box[0]) * (box[3] - box[1])


def _merged(groups: list[tuple[tuple[int, int, int, int], list]]) -> list[tuple[tuple[int, int, int, int], list]]:
    """(box, the boxes it serves) pairs, the two whose bounding box adds the fewest pixels to
    theirs merged into it (its served boxes joined) while that is at most ``MERGE_PX``."""
    groups = list(groups)
    while len(groups) > 1:
        best = None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                a, b = groups[i][0], groups[j][0]
                union = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                added = _area(union) - _area(a) - _area(b)
                if best is None or added < best[0]:
                    best = (added, i, j, union)
        added, i, j, union = best
        if added > MERGE_PX:
            break
        joined = (union, groups[i][1] + groups[j][1])
        groups = [group for k, group in enumerate(groups) if k not in (i, j)] + [joined]
    return groups


def _apply_layer(canvas: np.ndarray, window: Window, box: tuple[slice, slice], planes: tuple) -> None:
    """An on-camera object's cached layer (``SimCamera._layer``: its image ``box`` and its
    transmission and premultiplied albedo there) over the part of ``canvas`` (at ``window``) it
    touches: per pixel, as over the whole image."""
    (ys, xs), (ox, oy) = box, window[:2]
    y0, y1 = max(ys.start, oy), min(ys.stop, oy + canvas.shape[0])
    x0, x1 = max(xs.start, ox), min(xs.stop, ox + canvas.shape[1])
    if y0 < y1 and x0 < x1:
        inner = (slice(y0 - ys.start, y1 - ys.start), slice(x0 - xs.start, x1 - xs.start))
        roi = canvas[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
        roi *= planes[0][inner]
        roi += planes[1][inner]


def _occlude(canvas: np.ndarray, polygon: np.ndarray, albedo: float, window: Window) -> None:
    """An image occluder (``polygon`` (N, 2) pixels) painted over ``canvas`` at ``window`` as
    over the whole image. ``cv2.fillPoly`` is not translation-invariant where the image cuts the
    polygon (a canvas cut elsewhere moves the clipped edges' start: up to ~100 pixels differ), so
    the polygon is filled on a mask over its own bounding box in the image (exact: the same
    cuts), then the canvas's part of it painted."""
    polygon = np.asarray(polygon, dtype=np.float64)
    ox, oy, width, height = window
    x0, y0 = np.clip(np.floor(polygon.min(axis=0)).astype(int) - 1, 0, [width, height])
    x1, y1 = np.clip(np.ceil(polygon.max(axis=0)).astype(int) + 2, 0, [width, height])
    ix0, iy0 = max(x0, ox), max(y0, oy)
    ix1, iy1 = min(x1, ox + canvas.shape[1]), min(y1, oy + canvas.shape[0])
    if ix0 >= ix1 or iy0 >= iy1:
        return
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    pts = np.round(polygon * 16).astype(np.int32) - np.array([16 * x0, 16 * y0], np.int32)
    cv2.fillPoly(mask, [pts], 255, cv2.LINE_8, shift=4)
    np.copyto(canvas[iy0 - oy:iy1 - oy, ix0 - ox:ix1 - ox], np.float32(albedo),
              where=mask[iy0 - y0:iy1 - y0, ix0 - x0:ix1 - x0] != 0)
