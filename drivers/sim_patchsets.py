"""What :func:`~orbitree.drivers.sim_render.render_patches` computes for a body's patches all at once.

A frame (or a region of it) paints a few bodies of tens of patches each; the per-patch numpy
calls on tiny arrays were a good part of a tracked frame's region render. Here: the patches'
constants stacked once per list of patches and kept (:func:`stacked`), the textured patches'
outline samples projected through the lens in one call (:func:`outlines_px`) and the uniform
faces' outlines turned into rays together (:func:`faces_rays`). Each value is the one the
per-patch code computed (the same elementwise operations; ``cv2.projectPoints`` maps each point
alone), so the pixels do not change.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from orbitree.drivers.sim_coverage import clip_box
from orbitree.drivers.sim_patches import Patch
from orbitree.drivers.sim_rays import RayTable

__all__ = ["NEAR_Z_M", "NOT_BATCHED", "faces_rays", "faces_reaching", "outlines_px", "pixel_boxes", "stacked"]

NEAR_Z_M = 1e-3  # m: the near plane, patches are clipped to (sim_render re-exports it)
NOT_BATCHED = object()  # a face faces_rays left to the per-face code
_NO_NORMAL = np.zeros(3)


def outlines_px(patches: Sequence[Patch], visible: np.ndarray, outline_all: np.ndarray, in_front_all: np.ndarray,
                 table: RayTable, project: Callable[[np.ndarray], np.ndarray]) -> dict[int, np.ndarray]:
    """The projected ``sim_render._outline_samples`` (16, 2) of the visible textured patches wholly in
    front of the camera and in view (``sim_render._within_view``), by index: one projection for all
    (each point is projected alone: the same pixels as patch by patch)."""
    chosen = visible & in_front_all.all(axis=1) & np.array([patch.polygon is None for patch in patches])
    if not chosen.any():
        return {}
    indices = np.flatnonzero(chosen)
    outlines = outline_all[indices].transpose(0, 2, 1)  # (P, 4, 3), as outline_all[index].T each
    rays = outlines[:, :, :2] / outlines[:, :, 2:3]
    grow = 0.1 * (table.rays_max - table.rays_min)
    within = np.all((rays >= table.rays_min - grow) & (rays <= table.rays_max + grow), axis=(1, 2))
    indices, outlines = indices[within], outlines[within]
    if not len(indices):
        return {}
    steps = (np.arange(4) / 4)[None, None, :, None]
    following = np.concatenate([outlines[:, 1:], outlines[:, :1]], axis=1)
    samples = outlines[:, :, None, :] + steps * (following - outlines)[:, :, None, :]  # (P, 4, 4, 3)
    pixels = project(samples.reshape(-1, 3)).reshape(len(indices), 16, 2)
    return dict(zip(indices.tolist(), pixels, strict=True))


_STACKED: dict[tuple[int, ...], tuple] = {}  # patches' ids -> (the patches, their stacked constants)
_STACKED_MAX = 64


def stacked(patches: Sequence[Patch]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The patches' constants stacked, as ``sim_render.render_patches`` reads them: plane2body (P, 3, 3),
    normals (P, 3) (zeros: none), one-sided (P,) bool, outlines transposed (P, 2, 4); kept per
    list of patches (a body's, in its painting order), read-only."""
    key = tuple(map(id, patches))
    entry = _STACKED.get(key)
    if entry is not None and all(map(operator.is_, entry[0], patches)):
        return entry[1]
    if len(_STACKED) >= _STACKED_MAX:
        _STACKED.clear()
    value = (np.stack([patch.plane2body for patch in patches]),
             np.stack([_NO_NORMAL if patch.normal is None else patch.normal for patch in patches]),
             np.array([patch.normal is not None for patch in patches]),
             np.stack([patch.outline_plane for patch in patches]).transpose(0, 2, 1))
    for array in value:
        array.flags.writeable = False
    _STACKED[key] = (tuple(patches), value)
    return value


def faces_rays(patches: Sequence[Patch], indices: np.ndarray, plane2cam_all: np.ndarray,
                table: RayTable) -> dict[int, np.ndarray | None]:
    """``sim_render._face_rays`` of the uniform polygon patches among ``patches[indices]`` whose vertices
    all lie in front of the camera, computed together (index -> rays (M, 2), or None when the
    polygon lies out of view); the others are left out (their near-plane clipping is per face)."""
    chosen = [i for i in indices.tolist() if patches[i].polygon is not None]
    if not chosen:
        return {}
    polygons = [patches[i].polygon for i in chosen]
    sizes = [len(polygon) for polygon in polygons]
    vertices = np.concatenate(polygons)
    planes = np.repeat(plane2cam_all[chosen], sizes, axis=0)  # (M, 3, 3)
    # as polygon @ plane2cam[:, :2].T + plane2cam[:, 2], vertex by vertex
    cam = vertices[:, :1] * planes[:, :, 0] + vertices[:, 1:] * planes[:, :, 1] + planes[:, :, 2]
    front = cam[:, 2] > NEAR_Z_M
    rays = cam[:, :2] / np.where(front, cam[:, 2], 1.0)[:, None]
    grow = 0.1 * (table.rays_max - table.rays_min)
    low, high = table.rays_min - grow, table.rays_max + grow
    inside = np.all((rays >= low) & (rays <= high), axis=1)
    ends = np.cumsum(sizes).tolist()
    all_front = np.logical_and.reduceat(front, [0, *ends[:-1]]).tolist()
    all_inside = np.logical_and.reduceat(inside, [0, *ends[:-1]]).tolist()
    out: dict[int, np.ndarray | None] = {}
    start = 0
    for n, (index, end) in enumerate(zip(chosen, ends, strict=True)):
        if all_front[n]:
            mine = rays[start:end]
            if not all_inside[n]:
                mine = clip_box(mine, low, high)
            out[index] = mine if len(mine) >= 3 else None
        start = end
    return out


def faces_reaching(faces: list[tuple[np.ndarray, float]], table: RayTable,
                   reach: Sequence[tuple[int, int, int, int]]) -> list[tuple[np.ndarray, float]]:
    """The uniform faces, (outline rays (M, 2), albedo) each (``sim_render._faces_step``), that may
    paint a pixel of one of the boxes ``reach`` (x0, y0, x1, y1), in order: a face left out paints
    none of them, so that leaving it out of a region render's plan changes no pixel.

    Why that holds (the lens's projection being one to one over the rays in view, as the renderer
    assumes throughout): the face's filled outline is a polygon through the projections P_i of
    rays inside its rays' bounding box B, and a pixel is painted only when one of its samples
    (within 3/8 px of its centre) lies inside that polygon. Every point p of the projection of B
    that lies in the image has a pixel centre within half a pixel whose ray is within
    ``table.ray_step()`` of p's ray, hence in B grown by that: its column's range of ray x (row's
    of ray y) meets B's, so it lies in the box of the columns and rows that do (``RayTable.
    pixels_of_ray_box``). When that box does not touch the image's border, the projection of B
    (a connected set) lies wholly inside the image, so inside the box's pixels grown by half a
    pixel, and so do the P_i, their polygon and the samples it holds: the face paints only the
    box's pixels. A face whose box touches the border, or that has none, is kept; all are kept
    when the table's column (row) ranges do not rise monotonically."""
    spans = table.pixel_spans()
    if spans is None:
        return faces
    starts = np.cumsum([0] + [len(rays) for rays, _ in faces[:-1]])
    points = np.concatenate([rays for rays, _ in faces])
    pad = table.ray_step()
    boxes = pixel_boxes(spans, np.minimum.reduceat(points, starts, axis=0) - pad,
                        np.maximum.reduceat(points, starts, axis=0) + pad)
    width, height = table.width, table.height
    kept = []
    for face, x0, y0, x1, y1 in zip(faces, *boxes, strict=True):
        x0, y0, x1, y1 = x0 - 1, y0 - 1, x1 + 1, y1 + 1  # a pixel more each side, to spare
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height or x1 - x0 <= 2 or y1 - y0 <= 2 or any(
                x0 < rx1 and rx0 < x1 and y0 < ry1 and ry0 < y1 for rx0, ry0, rx1, ry1 in reach):
            kept.append(face)
    return kept


def pixel_boxes(spans: tuple[np.ndarray, ...], low: np.ndarray, high: np.ndarray) -> tuple[list[int], ...]:
    """``RayTable.pixels_of_ray_box`` of the ray boxes [low, high] ((N, 2) each) at once, for a table
    whose ``pixel_spans()`` are ``spans``: the boxes' x0, y0, x1, y1 (lists; x0 >= x1 or y0 >= y1: no
    pixel). By bisection: the first column whose highest ray x reaches low x, the last whose lowest
    does not pass high x (the ranges rising, those between them are the columns that meet [low, high])."""
    col_lo, col_hi, row_lo, row_hi = spans
    return (col_hi.searchsorted(low[:, 0]).tolist(), row_hi.searchsorted(low[:, 1]).tolist(),
            col_lo.searchsorted(high[:, 0], "right").tolist(), row_lo.searchsorted(high[:, 1], "right").tolist())
