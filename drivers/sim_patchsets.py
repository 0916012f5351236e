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

__all__ = ["NEAR_Z_M", "NOT_BATCHED", "faces_rays", "outlines_px", "stacked"]

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
