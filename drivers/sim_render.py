"""Rendering core of the simulated camera: textured planar patches seen through a distorted lens.

Every visible thing is a planar patch with a texture: the markers (real ArUco images from
``cv2.aruco.generateImageMarker`` with their white border), the table, and the faces of solids
(the two interfaces: :func:`polygon_patch`, a convex polygon as a coverage mask, drawn only from
the side it faces). There is no depth buffer: a scene paints its patches from far to near
(``orbitree.drivers.sim_camera``). A patch is drawn by inverse mapping: for each output pixel
the *undistorted* viewing ray (a per-camera lookup table, computed once with
``cv2.undistortPoints``) is sent through the homography plane → camera, inverted, to texture
coordinates, and the texture is sampled there. So lens distortion is exact per pixel and nothing
is resampled twice.

Anti-aliasing: inside the patch's bounding box each pixel gets ``k x k`` samples (the texture
coordinates of the pixel centres, from the ray table through the homography, interpolated
bilinearly to the samples: the homography bends them by ~1e-4 texel over a pixel, the ray table's
own interpolation is exact to well below 1e-3 px for smooth distortion; where the plane's horizon
is in view the rays themselves are interpolated), the texture is sampled bilinearly and the
samples are box-averaged (``INTER_AREA``), i.e. each pixel integrates the scene over its area.
Marker textures come as a pyramid of exact power-of-two
resolutions (2 texels per marker cell at level 0, cell edges on texel edges) and the level is
chosen so that one texel spans 2/k to 4/k output pixels: the bilinear ramp of a black/white edge
then covers at least two samples, so a rendered edge moves continuously with the pose (no 1/k
quantisation bias), and stays sharp (a ramp of at most one pixel, like a 0.3 px blur). Checked
in the tests: a rendered square's summed intensity equals its projected area and its intensity
centroid sits within 0.03 px of the projected centroid, through the distorted lens. Uniform
faces (:func:`polygon_patch`) get the same 4x4 point-sampled coverage, counted per sample row
from its crossings with the projected outline, for all faces of a body at once: the interior is
filled, only edge pixels are composited, so the cost goes with the outline, not the area.
Textured patches (k > 1, the plane's horizon out of view: the markers) are sampled the same way
by compiled loops (:mod:`orbitree.drivers.sim_texkernel`) that give a pixel whose samples can
only read texels of one value that value, and sample only the others (a marker cell's edges).

Compositing uses premultiplied alpha: textures are (H, W, 2) float32 ``(albedo*alpha, alpha)``,
sampled as two one-channel images (``Patch.planes``): OpenCV 5 remaps a single float channel
3.5x faster than two and at the exact coordinates, where two channels go through a 1/32-texel
fixed-point grid (the flagship's images change by 1 DN in 0.03 % of their pixels, unbiased).

Conventions: continuous texture coordinates put texel ``(i, j)`` on ``[j, j+1) x [i, i+1)``;
OpenCV's image functions put pixel centres on integers, hence the half-texel shifts below.

The patches and their textures are in :mod:`orbitree.drivers.sim_patches`, the lens's ray table
in :mod:`orbitree.drivers.sim_rays`; this module holds the rasteriser (:func:`render_patches`)
and re-exports their public names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import cv2
import numpy as np

from orbitree.drivers.sim_coverage import clip_box, fill_polygons, pack_polygons
from orbitree.drivers.sim_patches import (
    Patch,
    marker_patch,
    marker_texture_levels,
    plane_basis,
    polygon_patch,
    premultiplied,
    rect_patch,
)
from orbitree.drivers.sim_patchsets import NEAR_Z_M, NOT_BATCHED, faces_rays, outlines_px, stacked
from orbitree.drivers.sim_rays import RAY_GRID_PX, RayTable, ray_table, undistorted_rays
from orbitree.drivers.sim_region import Window, paint_clipped, sub_box
from orbitree.drivers.sim_texkernel import draw_box

__all__ = ["NEAR_Z_M", "RAY_GRID_PX", "ROI_PAD_PX", "SMOOTH_MIN_PIXELS", "Patch", "RayTable", "draw_patches",
           "marker_patch", "marker_texture_levels", "plan_patches", "plane_basis", "polygon_patch",
           "premultiplied", "ray_table", "rect_patch", "render_patch", "render_patches", "undistorted_rays"]

ROI_PAD_PX = 3


_SHIFTS: dict[int, np.ndarray] = {}  # pyramid level -> texture coordinates of its texel centres from level 0's


def _half_texel_shift() -> np.ndarray:
    return np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])


def _choose_level(patch: Patch, plane2cam: np.ndarray, focal_px: float, k: int) -> int:
    """Pyramid level whose texel spans at most 4/k output pixels (2/k to 4/k when available),
    judged at the patch's nearest outline corner without foreshortening (the finest need)."""
    outline_cam = patch.outline_h @ plane2cam.T
    depth = max(float(outline_cam[:, 2].min()), NEAR_Z_M)
    px_per_texel0 = focal_px * _texel_m(patch) / depth
    level = 0
    while level + 1 < len(patch.levels) and px_per_texel0 / 2**level > 4.0 / k:
        level += 1
    return level


def _texel_m(patch: Patch) -> float:
    """Size of a level-0 texel on the patch, metres (along the texture's v axis)."""
    return patch.texel_m


def _outline_samples(outline_cam: np.ndarray, per_edge: int = 4) -> np.ndarray:
    """Points along the four edges (edges bulge under distortion, corners alone do not bound)."""
    s = (np.arange(per_edge) / per_edge)[None, :, None]
    nxt = np.concatenate([outline_cam[1:], outline_cam[:1]])
    return (outline_cam[:, None, :] + s * (nxt - outline_cam)[:, None, :]).reshape(-1, outline_cam.shape[1])


def _within_view(points_cam: np.ndarray, table: RayTable) -> bool:
    """All points inside the camera's ray box grown by 10 % (where the distortion model holds,
    so projecting them and taking a bounding box is safe)."""
    rays = points_cam[:, :2] / points_cam[:, 2:3]
    grow = 0.1 * (table.rays_max - table.rays_min)
    return bool(np.all((rays >= table.rays_min - grow) & (rays <= table.rays_max + grow)))


def render_patch(
    canvas: np.ndarray,
    patch: Patch,
    body2cam: np.ndarray,
    table: RayTable,
    project: Callable[[np.ndarray], np.ndarray],
) -> None:
    """Composite one patch over ``canvas`` (H, W) float32 albedo, in place.

    ``project`` maps (N, 3) camera-frame points to (N, 2) distorted pixels.
    """
    render_patches(canvas, [patch], body2cam, table, project)


def render_patches(
    canvas: np.ndarray,
    patches: Sequence[Patch],
    body2cam: np.ndarray,
    table: RayTable,
    project: Callable[[np.ndarray], np.ndarray],
    window: Window | None = None,
) -> None:
    """Composite ``patches`` of one body, in order, over ``canvas`` (as ``render_patch`` one
    after the other); each run of uniform polygon faces is projected and filled with one set of
    array operations (``sim_coverage.fill_polygons``), the per-face cost of a solid being mostly
    Python. ``window`` (x0, y0, image width, image height): ``canvas`` holds only the image's
    pixels from (x0, y0), each painted as in the whole image (``sim_region``)."""
    size = canvas.shape if window is None else (window[3], window[2])
    draw_patches(canvas, plan_patches(patches, body2cam, table, project, size), window)


def draw_patches(canvas: np.ndarray, plan: list[tuple], window: Window | None = None) -> None:
    """:func:`plan_patches`'s steps drawn over ``canvas`` (at ``window``, as in
    :func:`render_patches`): a plan made once serves every window of a frame."""
    for step in plan:
        if step[0] is _FACES:
            fill_polygons(canvas, step[1], step[2], window, step[3])
        else:
            _draw_texture(canvas, *step[1:], window)


_FACES, _TEXTURE = object(), object()  # the kinds of a plan's steps


def plan_patches(patches: Sequence[Patch], body2cam: np.ndarray, table: RayTable,
                 project: Callable[[np.ndarray], np.ndarray], size: tuple[int, int]) -> list[tuple]:
    """What :func:`render_patches` draws of ``patches`` in an image of ``size`` (h, w), in order,
    all that does not depend on the part of the image drawn: runs of uniform faces (their
    projected outlines and albedos) and textured patches (their level, homography and box)."""
    plan: list[tuple] = []
    faces: list[tuple[np.ndarray, float]] = []
    if not patches:
        return plan
    # every patch's plane in the camera frame, back faces and outlines at once
    rot = body2cam[:3, :3]
    plane2body_all, normals, one_sided, outlines_t = stacked(patches)
    plane2cam_all = np.matmul(rot, plane2body_all)
    plane2cam_all[:, :, 2] += body2cam[:3, 3]
    facing = np.einsum("pi,pi->p", normals @ rot.T, plane2cam_all[:, :, 2]) < 0.0  # no normal: 0 < 0 false
    outline_all = np.matmul(plane2cam_all[:, :, :2], outlines_t) + plane2cam_all[:, :, 2:]  # (P, 3, 4)
    in_front_all = outline_all[:, 2, :] > NEAR_Z_M  # (P, 4)
    visible = (~one_sided | facing) & in_front_all.any(axis=1)
    shown = np.flatnonzero(visible)
    face_rays = faces_rays(patches, shown, plane2cam_all, table)
    projected = outlines_px(patches, visible, outline_all, in_front_all, table, project)
    all_in_front = in_front_all.all(axis=1).tolist()
    for index in shown.tolist():
        patch, plane2cam = patches[index], plane2cam_all[index]
        outline_cam = outline_all[index].T
        if not all_in_front[index] and _outside_view(_clip_near(outline_cam), table):
            continue  # crosses the camera's plane but the part in front is out of view
        if patch.polygon is not None:
            rays = face_rays.get(index, NOT_BATCHED)
            if rays is NOT_BATCHED:
                rays = _face_rays(patch, plane2cam, table)
            if rays is not None:
                faces.append((rays, patch.albedo))
            continue
        if faces:
            plan.append(_faces_step(faces, project))
            faces = []
        step = _texture_step(size, patch, plane2cam, outline_cam, all_in_front[index], table, project,
                             projected.get(index))
        if step is not None:
            plan.append(step)
    if faces:
        plan.append(_faces_step(faces, project))
    return plan




def _texture_step(size: tuple[int, int], patch: Patch, plane2cam: np.ndarray, outline_cam: np.ndarray,
                  in_front: bool, table: RayTable, project: Callable[[np.ndarray], np.ndarray],
                  outline_px: np.ndarray | None = None) -> tuple | None:
    """A textured patch's step of a plan (some of it in front of the camera, all of it when
    ``in_front``; None: nothing in an image of ``size``): its level, homography, whether the
    plane's horizon is out of view and pixel box, for :func:`_draw_texture`.
    ``outline_px``: its projected outline samples when wholly in front and in view
    (``sim_patchsets.outlines_px``), else None."""
    height, width = size
    k = patch.supersample
    level = _choose_level(patch, plane2cam, table.focal_px, k)
    x0, y0, x1, y1 = 0, 0, width, height
    if outline_px is not None or (in_front and _within_view(outline_cam, table)):
        if outline_px is None:
            outline_px = project(_outline_samples(outline_cam))
        texel_px = table.focal_px * _texel_m(patch) / 2**level / float(outline_cam[:, 2].min())
        pad = ROI_PAD_PX + math.ceil(texel_px)  # the bilinear ramp reaches half a texel out
        (low_x, low_y), (high_x, high_y) = outline_px.min(axis=0).tolist(), outline_px.max(axis=0).tolist()
        x0, y0 = max(math.floor(low_x) - pad, 0), max(math.floor(low_y) - pad, 0)
        x1, y1 = min(math.ceil(high_x) + pad + 1, width), min(math.ceil(high_y) + pad + 1, height)
        if x0 >= x1 or y0 >= y1:
            return None
    elif in_front:
        # partly or wholly out of view: the pinhole image of a planar convex patch in front of
        # the camera lies inside its corners' ray box, whatever the lens distortion does after
        rays_out = outline_cam[:, :2] / outline_cam[:, 2:3]
        texel_ray = _texel_m(patch) / 2**level / float(outline_cam[:, 2].min())
        pad = (ROI_PAD_PX / table.focal_px) + texel_ray
        box = table.pixels_of_ray_box(rays_out.min(axis=0) - pad, rays_out.max(axis=0) + pad)
        if box is None:
            return None
        x0, y0, x1, y1 = box
    shift = _SHIFTS.get(level)
    if shift is None:  # the half-texel shift after the level's scale (the same product each time)
        shift = _SHIFTS[level] = _half_texel_shift() @ np.diag([2.0**level, 2.0**level, 1.0])
    ray2tex = shift @ np.linalg.inv(plane2cam @ patch.tex2plane)
    # sampled at the centres of 2x2 pixel blocks, enlarged bilinearly
    halved = patch.smooth and k == 1 and (y1 - y0) * (x1 - x0) >= SMOOTH_MIN_PIXELS
    no_horizon = in_front or _rays_all_in_front(table, plane2cam)  # once for all the windows
    return _TEXTURE, patch, level, ray2tex, plane2cam, no_horizon, table, (x0, y0, x1, y1), halved


def _draw_texture(canvas: np.ndarray, patch: Patch, level: int, ray2tex: np.ndarray, plane2cam: np.ndarray,
                  no_horizon: bool, table: RayTable, box: tuple[int, int, int, int], halved: bool,
                  window: Window | None = None) -> None:
    """A textured patch's step (:func:`_texture_step`) drawn: sampled over its pixel ``box``, or
    over the part of it a ``window`` needs (``sim_region.sub_box``)."""
    x0, y0, x1, y1 = box
    if window is None:
        _draw_box(canvas[y0:y1, x0:x1], patch, level, ray2tex, plane2cam, no_horizon, table, box, box, halved)
        return
    sub = sub_box(box, canvas.shape, window, halved)
    if sub is not None:
        paint_clipped(canvas, window, sub, lambda roi: _draw_box(
            roi, patch, level, ray2tex, plane2cam, no_horizon, table, box, sub, halved))


def _draw_box(roi: np.ndarray, patch: Patch, level: int, ray2tex: np.ndarray, plane2cam: np.ndarray,
              no_horizon: bool, table: RayTable, box: tuple[int, int, int, int],
              sub: tuple[int, int, int, int], halved: bool) -> None:
    """A textured patch drawn over ``roi``, the pixels ``sub`` of its box ``box`` (both (x0, y0,
    x1, y1)); ``no_horizon``: the plane's horizon out of view; ``halved``: from the centres of
    the box's 2x2 pixel blocks (``half`` (w2, h2) of them over ``sub``)."""
    k = patch.supersample
    texture = patch.levels[level]
    x0, y0, x1, y1 = sub
    rays = table.rays[y0:y1, x0:x1]
    h, w = rays.shape[:2]
    half = None
    if halved:
        bx0, by0 = box[:2]
        rays = table.half_rays(*box)[(y0 - by0) // 2:(y1 - by0 + 1) // 2, (x0 - bx0) // 2:(x1 - bx0 + 1) // 2]
        half = (rays.shape[1], rays.shape[0])
    if no_horizon and k > 1 and _compiled(roi, texture):
        # compiled: the pixels whose samples all read one texel value take it, the others are
        # sampled k x k (sim_texkernel), each pixel from its neighbours in the whole box
        draw_box(roi, texture, table.rays, ray2tex, k, box, sub)
        return
    if no_horizon and k > 1:
        # texture coordinates of the pixel centres, interpolated to the k x k samples: the
        # homography bends them by ~1e-4 texel over a pixel (the ray table's own interpolation
        # is of that order), k * k times fewer points to transform
        coords = cv2.perspectiveTransform(rays, ray2tex)
        coords = cv2.resize(coords, (w * k, h * k), interpolation=cv2.INTER_LINEAR)
    elif no_horizon:  # no horizon in view
        coords = cv2.perspectiveTransform(rays, ray2tex)
    else:
        if k > 1:
            rays = cv2.resize(rays, (w * k, h * k), interpolation=cv2.INTER_LINEAR)
        coords = _rays_to_texture_clipped(rays, ray2tex, plane2cam)
    planes = patch.planes[level]
    opaque = planes is None
    # an opaque texture sampled wholly inside (every bilinear neighbour a texel, with a margin
    # of 1/16 texel): no NaN to mask out
    inside = opaque and _within_texture(coords, texture.shape)
    if opaque and inside and half is not None and 2 * half[0] == w and 2 * half[1] == h and roi.flags.c_contiguous:
        # the enlarged samples written straight into the image (a whole-width box, even size)
        small = cv2.remap(texture, coords, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        enlarged = cv2.resize(small, (w, h), dst=roi, interpolation=cv2.INTER_LINEAR)
        if enlarged is not roi:  # (OpenCV writes into a contiguous box of the right size and type)
            roi[...] = enlarged
        return
    if opaque:
        sample = _sample(texture, coords, k, (w, h), half, float("nan"))
        if inside:
            roi[...] = sample
        else:  # NaN marks "off the texture"
            np.copyto(roi, sample, where=~np.isnan(sample))
        return
    roi *= 1.0 - _sample(planes[1], coords, k, (w, h), half, 0.0)  # premultiplied (albedo * alpha, alpha)
    roi += _sample(planes[0], coords, k, (w, h), half, 0.0)


def _compiled(roi: np.ndarray, texture: np.ndarray) -> bool:
    """The types the compiled sampling takes: float32 canvas and texture (opaque or premultiplied)."""
    return roi.dtype == np.float32 and texture.dtype == np.float32 and (
        texture.ndim == 2 or (texture.ndim == 3 and texture.shape[2] == 2))


def _sample(plane: np.ndarray, coords: np.ndarray, k: int, size: tuple[int, int],
            half: tuple[int, int] | None, border: float) -> np.ndarray:
    """One texture channel (th, tw) sampled bilinearly at ``coords`` (k*h, k*w, 2), box-averaged
    to ``size`` (w, h) pixels (from the centres of 2x2 blocks, ``half`` (w2, h2), enlarged)."""
    sample = cv2.remap(plane, coords, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                       borderValue=(border, 0.0, 0.0, 0.0))
    w, h = size
    if k > 1:
        sample = cv2.resize(sample, (w, h), interpolation=cv2.INTER_AREA)
    if half is not None:
        sample = cv2.resize(sample, (2 * half[0], 2 * half[1]), interpolation=cv2.INTER_LINEAR)[:h, :w]
    return sample


def _within_texture(coords: np.ndarray, shape: tuple[int, ...]) -> bool:
    """All texture coordinates (h, w, 2) (x, y) of a box of pixels at least 1/16 texel inside
    [0, w - 1] x [0, h - 1]; judged on the box's border, which holds the extremes (the rays to
    texture map is a homography with no horizon in the box, the pixels to rays map continuous)."""
    rim = np.concatenate([coords[0], coords[-1], coords[:, 0], coords[:, -1]]).T.copy()  # (2, n): fast reductions
    low, high = rim.min(axis=1), rim.max(axis=1)
    return bool(low.min() >= 1 / 16 and high[0] <= shape[1] - 1 - 1 / 16 and high[1] <= shape[0] - 1 - 1 / 16)


SMOOTH_MIN_PIXELS = 128 * 128  # a smooth patch smaller than this in the image is sampled whole


def _face_rays(patch: Patch, plane2cam: np.ndarray, table: RayTable) -> np.ndarray | None:
    """A uniform polygon patch's outline as rays (M, 2) (x/z, y/z: a convex polygon stays one):
    clipped to the near plane, then to the camera's ray box grown by 10 % (where the lens model
    holds; the cut edges fall outside the image); None when nothing is left."""
    polygon_cam = patch.polygon @ plane2cam[:, :2].T + plane2cam[:, 2]
    if not np.all(polygon_cam[:, 2] > NEAR_Z_M):
        polygon_cam = _clip_near(polygon_cam)
        if len(polygon_cam) < 3:
            return None
    rays = polygon_cam[:, :2] / polygon_cam[:, 2:3]
    grow = 0.1 * (table.rays_max - table.rays_min)
    rays = clip_box(rays, table.rays_min - grow, table.rays_max + grow)
    return rays if len(rays) >= 3 else None


def _faces_step(faces: list[tuple[np.ndarray, float]], project: Callable[[np.ndarray], np.ndarray]) -> tuple:
    """A plan's step of uniform polygons to fill in the image (``fill_polygons``), in order:
    (outline rays (M, 2), albedo) each, their edges sampled 8 times each so they bend through the
    lens as the texture path would draw them (one projection for all)."""
    per_edge = 8
    sizes = np.array([len(rays) for rays, _ in faces])
    rays = np.concatenate([rays for rays, _ in faces])
    ends = np.cumsum(sizes)
    following = np.arange(1, len(rays) + 1)
    following[ends - 1] = ends - sizes  # each outline closes on its first point
    steps = (np.arange(per_edge) / per_edge)[None, :, None]
    samples = np.ones((len(rays), per_edge, 3))
    samples[:, :, :2] = rays[:, None, :] + steps * (rays[following] - rays)[:, None, :]
    pixels = project(samples.reshape(-1, 3))
    bounds = (per_edge * ends).tolist()
    outlines = [pixels[start:end] for start, end in zip([0, *bounds[:-1]], bounds, strict=True)]  # as np.split
    albedos = [albedo for _, albedo in faces]
    return _FACES, outlines, albedos, pack_polygons(outlines, albedos)


def _clip_near(outline_cam: np.ndarray) -> np.ndarray:
    """The part of a convex polygon (N, 3), camera frame, in front of the near plane: each corner
    in front, followed by the point where its edge to the next corner crosses the plane (on
    Python floats: the same IEEE double arithmetic as numpy's, without its per-call cost)."""
    corners = outline_cam.tolist()
    out = []
    for a, b in zip(corners, corners[1:] + corners[:1], strict=True):
        a_in = a[2] > NEAR_Z_M
        if a_in:
            out.append(a)
        if a_in != (b[2] > NEAR_Z_M):
            t = (NEAR_Z_M - a[2]) / (b[2] - a[2])
            out.append([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2])])
    return np.array(out)


def _outside_view(points_cam: np.ndarray, table: RayTable) -> bool:
    """All points (in front of the camera) beyond one side of the camera's ray box grown by
    10 %: the convex polygon they span cannot reach the image."""
    grow = 0.1 * (table.rays_max - table.rays_min)
    (low_x, low_y), (high_x, high_y) = (table.rays_min - grow).tolist(), (table.rays_max + grow).tolist()
    rays = [(x / z, y / z) for x, y, z in points_cam.tolist()]  # a few points: Python floats, numpy's arithmetic
    return (all(x < low_x for x, _ in rays) or all(y < low_y for _, y in rays)
            or all(x > high_x for x, _ in rays) or all(y > high_y for _, y in rays))


def _rays_all_in_front(table: RayTable, plane2cam: np.ndarray) -> bool:
    """True when every pixel's ray meets the patch's plane in front of the camera (the plane's
    horizon is out of view): the test is linear in the ray, so the ray bounding box decides."""
    (x0, y0), (x1, y1) = table.rays_min, table.rays_max
    corners = np.array([[x0, y0, 1.0], [x1, y0, 1.0], [x1, y1, 1.0], [x0, y1, 1.0]])
    return bool(np.all(corners @ np.linalg.inv(plane2cam)[2] > 0))


def _rays_to_texture_clipped(
    rays: np.ndarray, ray2tex: np.ndarray, plane2cam: np.ndarray
) -> np.ndarray:
    """Texture coordinates of rays for a patch whose plane's horizon is in view; rays meeting
    the plane behind the camera get coordinates far outside the texture."""
    a, b, c = np.linalg.inv(plane2cam)[2]  # inverse depth along the ray (x, y, 1)
    behind = (a * rays[..., 0] + b * rays[..., 1] + c) <= 0
    uv = cv2.perspectiveTransform(rays, ray2tex)
    uv[behind] = -1e6
    return uv
