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

Compositing uses premultiplied alpha: textures are (H, W, 2) float32 ``(albedo*alpha, alpha)``,
sampled as two one-channel images (``Patch.planes``): OpenCV 5 remaps a single float channel
3.5x faster than two and at the exact coordinates, where two channels go through a 1/32-texel
fixed-point grid (the flagship's images change by 1 DN in 0.03 % of their pixels, unbiased).

Conventions: continuous texture coordinates put texel ``(i, j)`` on ``[j, j+1) x [i, i+1)``;
OpenCV's image functions put pixel centres on integers, hence the half-texel shifts below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np
from scipy.interpolate import RectBivariateSpline

from orbitree.drivers.sim_coverage import clip_box, fill_polygons

NEAR_Z_M = 1e-3
ROI_PAD_PX = 3


# What the scene is built from, made once per process and shared (read-only arrays): a campaign's
# worker, or the test suite, builds the same interfaces, markers and lens run after run (0.2 s a
# sim world at 1280x720: the rays 0.1 s, the faces' coverage textures 0.07 s, the markers' 0.04 s).
_RAY_TABLES: dict[tuple, RayTable] = {}
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


def _half_texel_shift() -> np.ndarray:
    return np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])


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

    def __post_init__(self) -> None:
        h, w = self.levels[0].shape[:2]
        outline = np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]])
        pts = cv2.perspectiveTransform(outline[None], self.tex2plane)[0]
        object.__setattr__(self, "outline_plane", pts)
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


RAY_GRID_PX = 8  # spacing of the pixels whose rays are computed exactly (RayTable)


def undistorted_rays(camera_matrix: np.ndarray, dist_coeffs: np.ndarray, width: int, height: int,
                     grid_px: int | None = RAY_GRID_PX, dtype: type = np.float32) -> np.ndarray:
    """Undistorted normalised ray (x, y) of every pixel centre, (height, width, 2) of ``dtype``.

    ``cv2.undistortPoints`` (iterated to 1e-12) on the pixels of a grid every ``grid_px`` pixels
    (and the last row and column), interpolated to every pixel by a bicubic spline: 64x fewer
    points to undistort (0.07 s instead of 0.43 s at 1280x720); the smooth lens makes the
    spline's error 5e-7 px for the default distortion (checked in the tests against the per
    pixel undistortion: < 1e-5 px, below the float32 rays' own resolution of ~4e-5 px).
    ``grid_px`` None: every pixel undistorted."""
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    step = 1 if grid_px is None or min(width, height) < 4 * grid_px else grid_px
    xs = np.unique(np.append(np.arange(0, width, step), width - 1)).astype(np.float64)
    ys = np.unique(np.append(np.arange(0, height, step), height - 1)).astype(np.float64)
    grid = np.stack(np.meshgrid(xs, ys), axis=2).reshape(-1, 1, 2)
    rays = cv2.undistortPoints(grid, camera_matrix, dist_coeffs, criteria=criteria).reshape(len(ys), len(xs), 2)
    if step == 1:
        return rays.astype(dtype)
    out = np.empty((height, width, 2), dtype)
    rows, cols = np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64)
    for channel in range(2):
        out[..., channel] = RectBivariateSpline(ys, xs, rays[..., channel], kx=3, ky=3, s=0)(rows, cols)
    return out


def ray_table(camera_matrix: np.ndarray, dist_coeffs: np.ndarray, width: int, height: int) -> RayTable:
    """The :class:`RayTable` of a lens and image size, made once per process (0.1 s at 1280x720)
    and shared by the cameras that have that lens (see :func:`_shared`)."""
    k = np.array(camera_matrix, dtype=np.float64)
    dist = np.array(dist_coeffs, dtype=np.float64).ravel()
    key = (k.tobytes(), dist.tobytes(), int(width), int(height))
    return _shared(_RAY_TABLES, key, lambda: RayTable(k, dist, int(width), int(height)))


@dataclass
class RayTable:
    """Undistorted normalised viewing ray (x, y) of every pixel centre, (H, W, 2) float32."""

    camera_matrix: np.ndarray
    dist_coeffs: np.ndarray
    width: int
    height: int
    rays: np.ndarray = field(init=False, repr=False)
    rays_min: np.ndarray = field(init=False, repr=False)
    rays_max: np.ndarray = field(init=False, repr=False)
    focal_px: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rays = _read_only(undistorted_rays(self.camera_matrix, self.dist_coeffs, self.width, self.height))
        self.rays_min = self.rays.reshape(-1, 2).min(axis=0).astype(np.float64)
        self.rays_max = self.rays.reshape(-1, 2).max(axis=0).astype(np.float64)
        self.focal_px = float(max(self.camera_matrix[0, 0], self.camera_matrix[1, 1]))
        # per column (row) the range of ray x (y) it covers: finds the pixels a ray box needs
        self.col_x = np.stack([self.rays[..., 0].min(axis=0), self.rays[..., 0].max(axis=0)], axis=1)
        self.row_y = np.stack([self.rays[..., 1].min(axis=1), self.rays[..., 1].max(axis=1)], axis=1)

    def half_rays(self, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
        """The rays of the centres of 2x2 pixel blocks over the box (x0, y0, x1, y1), ((h + 1) // 2,
        (w + 1) // 2, 2): the box averages of the rays (cached per box: a smooth patch that fills the
        image asks for the same box every frame)."""
        cache = self.__dict__.setdefault("_half_rays", {})
        rays = cache.get((x0, y0, x1, y1))
        if rays is None:
            h2, w2 = (y1 - y0 + 1) // 2, (x1 - x0 + 1) // 2
            rays = cv2.resize(self.rays[y0:y0 + 2 * h2, x0:x0 + 2 * w2], (w2, h2), interpolation=cv2.INTER_AREA)
            if len(cache) >= 8:
                cache.clear()
            cache[x0, y0, x1, y1] = rays
        return rays

    def pixels_of_ray_box(
        self, low: np.ndarray, high: np.ndarray
    ) -> tuple[int, int, int, int] | None:
        """Pixel box (x0, y0, x1, y1) holding every pixel whose ray lies in [low, high]; None
        when no pixel does."""
        cols = np.nonzero((self.col_x[:, 1] >= low[0]) & (self.col_x[:, 0] <= high[0]))[0]
        rows = np.nonzero((self.row_y[:, 1] >= low[1]) & (self.row_y[:, 0] <= high[1]))[0]
        if len(cols) == 0 or len(rows) == 0:
            return None
        return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _choose_level(patch: Patch, plane2cam: np.ndarray, focal_px: float, k: int) -> int:
    """Pyramid level whose texel spans at most 4/k output pixels (2/k to 4/k when available),
    judged at the patch's nearest outline corner without foreshortening (the finest need)."""
    outline_cam = np.column_stack([patch.outline_plane, np.ones(4)]) @ plane2cam.T
    depth = max(float(outline_cam[:, 2].min()), NEAR_Z_M)
    px_per_texel0 = focal_px * _texel_m(patch) / depth
    level = 0
    while level + 1 < len(patch.levels) and px_per_texel0 / 2**level > 4.0 / k:
        level += 1
    return level


def _texel_m(patch: Patch) -> float:
    """Size of a level-0 texel on the patch, metres (along the texture's v axis)."""
    side_m = float(np.linalg.norm(patch.outline_plane[3] - patch.outline_plane[0]))
    return side_m / patch.levels[0].shape[0]


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
) -> None:
    """Composite ``patches`` of one body, in order, over ``canvas`` (as ``render_patch`` one
    after the other); each run of uniform polygon faces is projected and filled with one set of
    array operations (``sim_coverage.fill_polygons``), the per-face cost of a solid being mostly
    Python."""
    faces: list[tuple[np.ndarray, float]] = []
    if not patches:
        return
    # every patch's plane in the camera frame, back faces and outlines at once
    rot = body2cam[:3, :3]
    plane2cam_all = np.matmul(rot, np.stack([patch.plane2body for patch in patches]))
    plane2cam_all[:, :, 2] += body2cam[:3, 3]
    normals = np.stack([_NO_NORMAL if patch.normal is None else patch.normal for patch in patches])
    facing = np.einsum("pi,pi->p", normals @ rot.T, plane2cam_all[:, :, 2]) < 0.0  # no normal: 0 < 0 false
    one_sided = np.array([patch.normal is not None for patch in patches])
    outline_all = np.matmul(plane2cam_all[:, :, :2], np.stack([patch.outline_plane for patch in patches])
                            .transpose(0, 2, 1)) + plane2cam_all[:, :, 2:]  # (P, 3, 4)
    in_front_all = outline_all[:, 2, :] > NEAR_Z_M  # (P, 4)
    visible = (~one_sided | facing) & in_front_all.any(axis=1)
    face_rays = _faces_rays(patches, np.flatnonzero(visible), plane2cam_all, table)
    for index in np.flatnonzero(visible).tolist():
        patch, plane2cam = patches[index], plane2cam_all[index]
        outline_cam, in_front = outline_all[index].T, in_front_all[index]
        if not in_front.all() and _outside_view(_clip_near(outline_cam), table):
            continue  # crosses the camera's plane but the part in front is out of view
        if patch.polygon is not None:
            rays = face_rays.get(index, _NOT_BATCHED)
            if rays is _NOT_BATCHED:
                rays = _face_rays(patch, plane2cam, table)
            if rays is not None:
                faces.append((rays, patch.albedo))
            continue
        if faces:
            _fill_faces(canvas, faces, project)
            faces = []
        _render_texture(canvas, patch, plane2cam, outline_cam, in_front, table, project)
    if faces:
        _fill_faces(canvas, faces, project)


def _render_texture(canvas: np.ndarray, patch: Patch, plane2cam: np.ndarray, outline_cam: np.ndarray,
                    in_front: np.ndarray, table: RayTable, project: Callable[[np.ndarray], np.ndarray]) -> None:
    """A textured patch (some of it in front of the camera) sampled over its pixel box."""
    height, width = canvas.shape
    k = patch.supersample
    level = _choose_level(patch, plane2cam, table.focal_px, k)
    x0, y0, x1, y1 = 0, 0, width, height
    if in_front.all() and _within_view(outline_cam, table):
        outline_px = project(_outline_samples(outline_cam))
        texel_px = table.focal_px * _texel_m(patch) / 2**level / float(outline_cam[:, 2].min())
        pad = ROI_PAD_PX + int(np.ceil(texel_px))  # the bilinear ramp reaches half a texel out
        x0, y0 = np.floor(outline_px.min(axis=0)).astype(int) - pad
        x1, y1 = np.ceil(outline_px.max(axis=0)).astype(int) + pad + 1
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        if x0 >= x1 or y0 >= y1:
            return
    elif in_front.all():
        # partly or wholly out of view: the pinhole image of a planar convex patch in front of
        # the camera lies inside its corners' ray box, whatever the lens distortion does after
        rays_out = outline_cam[:, :2] / outline_cam[:, 2:3]
        texel_ray = _texel_m(patch) / 2**level / float(outline_cam[:, 2].min())
        pad = (ROI_PAD_PX / table.focal_px) + texel_ray
        box = table.pixels_of_ray_box(rays_out.min(axis=0) - pad, rays_out.max(axis=0) + pad)
        if box is None:
            return
        x0, y0, x1, y1 = box
    texture = patch.levels[level]
    scale = np.diag([2.0**level, 2.0**level, 1.0])
    ray2tex = _half_texel_shift() @ scale @ np.linalg.inv(plane2cam @ patch.tex2plane)
    rays = table.rays[y0:y1, x0:x1]
    h, w = rays.shape[:2]
    half = None
    if patch.smooth and k == 1 and h * w >= SMOOTH_MIN_PIXELS:
        # sampled at the centres of 2x2 pixel blocks, (w2, h2) of them, enlarged bilinearly
        half = ((w + 1) // 2, (h + 1) // 2)
        rays = table.half_rays(x0, y0, x1, y1)
    no_horizon = in_front.all() or _rays_all_in_front(table, plane2cam)
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
    roi = canvas[y0:y1, x0:x1]
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


_NO_NORMAL = np.zeros(3)
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


_NOT_BATCHED = object()


def _faces_rays(patches: Sequence[Patch], indices: np.ndarray, plane2cam_all: np.ndarray,
                table: RayTable) -> dict[int, np.ndarray | None]:
    """:func:`_face_rays` of the uniform polygon patches among ``patches[indices]`` whose vertices
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


def _fill_faces(canvas: np.ndarray, faces: list[tuple[np.ndarray, float]],
                project: Callable[[np.ndarray], np.ndarray]) -> None:
    """Uniform polygons filled in the image, in order: (outline rays (M, 2), albedo) each, their
    edges sampled 8 times each so they bend through the lens as the texture path would draw
    them (one projection for all)."""
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
    fill_polygons(canvas, np.split(pixels, per_edge * ends[:-1]), [albedo for _, albedo in faces])


def _clip_near(outline_cam: np.ndarray) -> np.ndarray:
    """The part of a convex polygon (N, 3), camera frame, in front of the near plane."""
    out = []
    for a, b in zip(outline_cam, np.roll(outline_cam, -1, axis=0), strict=True):
        a_in, b_in = a[2] > NEAR_Z_M, b[2] > NEAR_Z_M
        if a_in:
            out.append(a)
        if a_in != b_in:
            out.append(a + (NEAR_Z_M - a[2]) / (b[2] - a[2]) * (b - a))
    return np.array(out)


def _outside_view(points_cam: np.ndarray, table: RayTable) -> bool:
    """All points (in front of the camera) beyond one side of the camera's ray box grown by
    10 %: the convex polygon they span cannot reach the image."""
    rays = points_cam[:, :2] / points_cam[:, 2:3]
    grow = 0.1 * (table.rays_max - table.rays_min)
    return bool(np.any(np.all(rays < table.rays_min - grow, axis=0))
                or np.any(np.all(rays > table.rays_max + grow, axis=0)))


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
