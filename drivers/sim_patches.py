"""What the simulated camera draws: textured planar patches fixed to bodies, and their textures.

A :class:`Patch` is a planar texture on a body (:func:`plane_basis` gives a plane's in-plane
basis): a marker (:func:`marker_patch`, on the pyramid of exact power-of-two resolutions that
:func:`marker_texture_levels` makes from ``cv2.aruco.generateImageMarker``), a rectangle
(:func:`rect_patch`: the table top) or a uniform convex face of a solid (:func:`polygon_patch`:
a coverage mask, drawn only from the side it faces). Textures are float32, premultiplied
``(albedo*alpha, alpha)`` (:func:`premultiplied`) or an opaque albedo map.

The scene's fixed parts are made once per process and shared read-only (:func:`_shared`,
:func:`_read_only`, the stores below): the markers' texture pyramids and the faces here, the
lens's ray tables for :mod:`orbitree.drivers.sim_rays`. How a patch is drawn:
:mod:`orbitree.drivers.sim_render`, which re-exports the public names of this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

# What the scene is built from, made once per process and shared (read-only arrays): a campaign's
# worker, or the test suite, builds the same interfaces, markers and lens run after run (0.2 s a
# sim world at 1280x720: the rays 0.1 s, the faces' coverage textures 0.07 s, the markers' 0.04 s).
_RAY_TABLES: dict[tuple, Any] = {}  # orbitree.drivers.sim_rays.RayTable by lens and image size
_FACES: dict[tuple, Patch] = {}
_MARKER_LEVELS: dict[tuple, tuple[np.ndarray, ...]] = {}
_SHARED_MAX = {id(_RAY_TABLES): 4, id(_FACES): 4096, id(_MARKER_LEVELS): 1024}


def _shared(store: dict, key: tuple, build: Callable[[], Any]) -> Any:
    """``store[key]``, built by ``build()`` the first time (the store emptied when full)."""
    value = store.get(key)
    if value is None:
        if len(store) >= _SHARED_MAX[id(store)]:
            store.clear()
        value = store[key] = build()
    return value


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array



@dataclass(frozen=True)
class Patch:
    """A planar textured patch fixed to a body.

    levels : texture pyramid, each (h, w, 2) float32 premultiplied ``(albedo*alpha, alpha)``, or
        (h, w) float32 albedo for an opaque patch (faster, hard edge); level ``l`` has ``2**l``
        times the resolution of level 0 (or a single level).
    tex2plane : (3, 3) homography from level-0 continuous texture coordinates to plane
        coordinates (s, t), metres.
    plane2body : (3, 3) columns ``[e1, e2, origin]``: the body point of plane coordinates (s, t)
        is ``s*e1 + t*e2 + origin``.
    supersample : k, samples per pixel side inside the patch's bounding box.
    marker_id : the ArUco id printed on the patch, if any.
    normal : outward normal (3,) in the body frame of a face of a solid: the patch is drawn only
        from the side it faces (back faces culled); None: seen from both sides.
    polygon : (N, 2) plane coordinates of a uniform convex polygon of albedo ``albedo`` (a
        face): when it lies wholly in front of the camera and in view it is filled directly in
        the image (its projected outline, edges through the lens, coverage from a 4x4 fill of
        its bounding box) instead of sampling the texture, which stays for the other cases.
    smooth : the texture varies slowly at the pixel scale (a table top's mottling): a patch
        that covers much of the image is sampled at half resolution and enlarged.
    """

    levels: tuple[np.ndarray, ...]
    tex2plane: np.ndarray
    plane2body: np.ndarray
    supersample: int = 4
    marker_id: int | None = None
    normal: np.ndarray | None = None
    polygon: np.ndarray | None = None
    albedo: float = 0.0
    smooth: bool = False
    outline_plane: np.ndarray = field(init=False, repr=False)
    planes: tuple[tuple[np.ndarray, np.ndarray] | None, ...] = field(init=False, repr=False)
    outline_h: np.ndarray = field(init=False, repr=False)  # (4, 3) outline_plane's corners, homogeneous
    texel_m: float = field(init=False, repr=False)  # a level-0 texel's size on the patch (texture's v axis)

    def __post_init__(self) -> None:
        h, w = self.levels[0].shape[:2]
        outline = np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]])
        pts = cv2.perspectiveTransform(outline[None], self.tex2plane)[0]
        object.__setattr__(self, "outline_plane", pts)
        object.__setattr__(self, "outline_h", np.column_stack([pts, np.ones(4)]))
        object.__setattr__(self, "texel_m", float(np.linalg.norm(pts[3] - pts[0])) / h)
        # a premultiplied level as two contiguous one-channel images: OpenCV remaps one float
        # channel 3.5x faster than two, and at the exact coordinates (two channels go through
        # a 1/32-texel fixed-point grid)
        object.__setattr__(self, "planes", tuple(
            None if level.ndim == 2 else (np.ascontiguousarray(level[..., 0]), np.ascontiguousarray(level[..., 1]))
            for level in self.levels))

    def outline_body(self) -> np.ndarray:
        """(4, 3) outer corners of the texture in the body frame."""
        st1 = np.column_stack([self.outline_plane, np.ones(4)])
        return st1 @ self.plane2body.T

    def with_levels(self, levels: tuple[np.ndarray, ...]) -> Patch:
        """The same geometry with another texture pyramid (same level-0 size)."""
        return Patch(levels, self.tex2plane, self.plane2body, self.supersample, self.marker_id,
                     self.normal, self.polygon, self.albedo, self.smooth)

    def centre_body(self) -> np.ndarray:
        """(3,) centre of the texture's outline in the body frame (for painter's sorting)."""
        return self.outline_body().mean(axis=0)


def plane_basis(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal in-plane basis of >= 3 coplanar points (N, 3).

    Returns ``plane2body`` (3, 3) with columns e1, e2, origin (origin = first point, e1 towards
    the second point) and the points' plane coordinates (N, 2).
    """
    origin = points[0]
    e1 = points[1] - origin
    e1 /= np.linalg.norm(e1)
    normal = np.cross(points[1] - origin, points[-1] - origin)
    normal /= np.linalg.norm(normal)
    e2 = np.cross(normal, e1)
    plane2body = np.column_stack([e1, e2, origin])
    rel = points - origin
    return plane2body, np.column_stack([rel @ e1, rel @ e2])


def premultiplied(albedo: np.ndarray, alpha: np.ndarray | None = None) -> np.ndarray:
    """(h, w, 2) float32 texture from an albedo map in [0, 1] and an optional coverage map."""
    albedo = albedo.astype(np.float32)
    alpha = np.ones_like(albedo) if alpha is None else alpha.astype(np.float32)
    return np.dstack([albedo * alpha, alpha])


def marker_texture_levels(
    dictionary: cv2.aruco.Dictionary,
    marker_id: int,
    bits: int,
    border_ratio: float,
    black: float,
    white: float,
    n_levels: int,
) -> tuple[np.ndarray, ...]:
    """Pyramid of marker images (black square plus white border), exact cell boundaries.

    At level 0 a cell is 2 texels and the white border ``2 * border_ratio * (bits + 2)``
    texels (``border_ratio`` = border width / marker side, must make that an integer).
    Read-only arrays, made once per process for the same marker and arguments (see
    :func:`_shared`).
    """
    key = (np.asarray(dictionary.bytesList).tobytes(), int(marker_id), int(bits), float(border_ratio),
           float(black), float(white), int(n_levels))
    return _shared(_MARKER_LEVELS, key, lambda: _marker_texture_levels(
        dictionary, marker_id, bits, border_ratio, black, white, n_levels))


def _marker_texture_levels(dictionary: cv2.aruco.Dictionary, marker_id: int, bits: int,
                           border_ratio: float, black: float, white: float,
                           n_levels: int) -> tuple[np.ndarray, ...]:
    cells = bits + 2
    border0 = 2 * border_ratio * cells
    if abs(border0 - round(border0)) > 1e-6:
        raise ValueError(f"border/side ratio {border_ratio} does not fit a half-cell grid")
    levels = []
    for level in range(n_levels):
        scale = 2**level
        side = 2 * cells * scale
        img = cv2.aruco.generateImageMarker(dictionary, marker_id, side, borderBits=1)
        pad = round(border0) * scale
        img = cv2.copyMakeBorder(img, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255)
        albedo = np.where(img > 127, white, black)
        levels.append(_read_only(premultiplied(albedo)))
    return tuple(levels)


def marker_patch(
    corners_body: np.ndarray,
    levels: tuple[np.ndarray, ...],
    border_texels: int,
    marker_id: int,
    supersample: int = 4,
) -> Patch:
    """A marker printed so that its black square's corners land on ``corners_body`` (4, 3)."""
    plane2body, st = plane_basis(corners_body)
    size = levels[0].shape[0]
    lo, hi = float(border_texels), float(size - border_texels)
    tex = np.array([[lo, lo], [hi, lo], [hi, hi], [lo, hi]], dtype=np.float32)
    tex2plane = cv2.getPerspectiveTransform(tex, st.astype(np.float32))
    return Patch(levels, tex2plane.astype(np.float64), plane2body, supersample, marker_id)


def rect_patch(
    texture: np.ndarray, width_m: float, height_m: float, center2body: np.ndarray, supersample: int
) -> Patch:
    """A rectangular texture centred on ``center2body`` (4, 4), its x/y axes along the texture's
    u / -v (the texture is seen upright from +z of that frame)."""
    h, w = texture.shape[:2]
    tex2plane = np.array(
        [[width_m / w, 0, -width_m / 2], [0, height_m / h, -height_m / 2], [0, 0, 1]]
    )
    rot, origin = center2body[:3, :3], center2body[:3, 3]
    plane2body = np.column_stack([rot[:, 0], -rot[:, 1], origin])
    return Patch((texture,), tex2plane, plane2body, supersample)


def polygon_patch(
    vertices_body: np.ndarray, normal: np.ndarray, albedo: float, texel_m: float = 2.5e-4,
    max_texels: int = 1024,
) -> Patch:
    """A flat convex polygon of uniform ``albedo``, vertices (N, 3) in the body frame, seen
    only from the side its outward ``normal`` (3,) points to: a face of a solid. The polygon is
    an anti-aliased coverage mask on a texture of about ``texel_m`` per texel (coarser when the
    face would need more than ``max_texels`` a side), sampled once per pixel. Made once per
    process for the same face (see :func:`_shared`)."""
    vertices = np.ascontiguousarray(vertices_body, dtype=np.float64)
    normal = np.ascontiguousarray(normal, dtype=np.float64)
    key = (vertices.shape, vertices.tobytes(), normal.tobytes(), float(albedo), float(texel_m), int(max_texels))
    return _shared(_FACES, key, lambda: _polygon_patch(vertices, normal, albedo, texel_m, max_texels))


def _polygon_patch(vertices: np.ndarray, normal: np.ndarray, albedo: float, texel_m: float,
                   max_texels: int) -> Patch:
    normal = normal / np.linalg.norm(normal)
    origin = vertices[0]
    e1 = vertices[1] - origin
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(normal, e1)
    rel = vertices - origin
    st = np.column_stack([rel @ e1, rel @ e2])
    pad = 2.0 * texel_m
    low, high = st.min(axis=0) - pad, st.max(axis=0) + pad
    size_m = high - low
    texel = max(texel_m, float(size_m.max()) / max_texels)
    w, h = (max(int(np.ceil(v / texel)), 4) for v in size_m)
    scale = np.array([w / size_m[0], h / size_m[1]])
    k = 4  # coverage by 4x4 supersampling
    big = np.zeros((h * k, w * k), np.uint8)
    uv = (st - low) * scale  # continuous texture coordinates
    pts = np.round((uv * k - 0.5) * 16).astype(np.int32)
    cv2.fillPoly(big, [pts], 255, cv2.LINE_8, shift=4)
    alpha = cv2.resize(big, (w, h), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    texture = _read_only(premultiplied(np.full((h, w), albedo, np.float32), alpha))
    tex2plane = np.array([[1.0 / scale[0], 0.0, low[0]], [0.0, 1.0 / scale[1], low[1]], [0.0, 0.0, 1.0]])
    plane2body = np.column_stack([e1, e2, origin])
    return Patch((texture,), _read_only(tex2plane), _read_only(plane2body), 1, None, _read_only(normal),
                 _read_only(st), float(albedo))
