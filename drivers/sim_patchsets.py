"""What :func:`~orbitree.drivers.sim_render.render_patches` computes for a body's patches all at once.

A frame (or a region of it) paints a few bodies of tens of patches each; the per-patch numpy
calls on tiny arrays were a good part of a tracked frame's region render. Here: the patches'
constants stacked once per list of patches and kept (:func:`stacked`), and the textured patches'
outline samples projected through the lens in one call (:func:`outlines_px`). Each value is the
one the per-patch code computed (the same elementwise operations; ``cv2.projectPoints`` maps each
point alone), so the pixels do not change.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from orbitree.drivers.sim_patches import Patch
from orbitree.drivers.sim_rays import RayTable

__all__ = ["outlines_px", "stacked"]

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
