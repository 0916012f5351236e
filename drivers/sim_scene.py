"""Scene building blocks for the simulated camera: marker boards, solids, a table, and views.

``board_object`` prints a :class:`~orbitree.skills.board_model.BoardModel` as real ArUco images
(``cv2.aruco.generateImageMarker`` plus the model's white border) on a grey disc plate, or on the
face of a solid (the passive interface); ``solid_object`` draws a union of convex polyhedra (the
active interface on the arm, from the contact model's geometry); ``table_object`` is a mottled
grey table top; ``random_board_view`` draws camera views of a board for accuracy campaigns. A
:class:`SceneObject` is a rigid body (pose array or callable) carrying textured planar patches.
``orbitree.drivers.sim_camera`` re-exports these and adds ``board_scene_camera`` (the usual test
scene: a board on a table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.drivers.sim_render import (
    Patch,
    marker_patch,
    marker_texture_levels,
    polygon_patch,
    premultiplied,
    rect_patch,
)
from orbitree.skills.board_model import BoardModel
from orbitree.skills.contact_geometry import ConvexPolyhedron

PoseSource = np.ndarray | Callable[[], np.ndarray]
MARKER_LEVELS = 6  # finest 64 texels per cell: sharp down to ~2.5 cm from an 18 mm marker (4.4 MB)
LIGHT_BODY = np.array([0.3, -0.4, 0.87]) / np.linalg.norm([0.3, -0.4, 0.87])
"""Direction the faces of a solid are shaded from, in the solid's own frame (a fixed look, not a
lighting model)."""
LAYER_TABLE, LAYER_TARGET, LAYER_TOOL = 0, 1, 2


def resolve_pose(source: PoseSource) -> np.ndarray:
    """The (4, 4) pose of a fixed array or of a callable returning one (checked)."""
    pose = source() if callable(source) else source
    pose = np.asarray(pose, dtype=np.float64)
    if pose.shape != (4, 4):
        raise ValueError(f"pose must be (4, 4), got {pose.shape}")
    return pose


@dataclass
class SceneObject:
    """A rigid body carrying patches; ``body2world`` is a (4, 4) array or a callable.

    There is no depth test: the camera paints objects by ``layer`` (table, targets, tools), and
    within an object patches in order, or, with ``sort_patches``, from the farthest patch centre
    to the nearest (a solid's faces: back faces are culled, so only the pieces overlap).
    ``on_camera``: the body moves with the camera (the tool carrying it), so it is painted
    after the motion blur of the rest of the scene.
    """

    name: str
    patches: list[Patch]
    body2world: PoseSource
    board: BoardModel | None = None
    hidden_marker_ids: set[int] = field(default_factory=set)
    occluder_albedo: float = 0.25
    layer: int = LAYER_TARGET
    sort_patches: bool = False
    on_camera: bool = False

    def pose(self) -> np.ndarray:
        return resolve_pose(self.body2world)


def disc_texture(albedo: float, size: int = 256) -> np.ndarray:
    """A disc of uniform albedo filling a square texture, anti-aliased edge."""
    big = np.zeros((size * 4, size * 4), np.uint8)
    cv2.circle(big, (size * 2, size * 2), size * 2 - 4, 255, -1, cv2.LINE_AA)
    alpha = cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA) / 255.0
    return premultiplied(np.full((size, size), albedo), alpha)


def table_texture(rng: np.random.Generator, size: int = 512, albedo: float = 0.35) -> np.ndarray:
    """Opaque grey table top with mottling and grain, (size, size) float32, seeded."""
    coarse = cv2.resize(rng.normal(0, 1, (12, 12)), (size, size), interpolation=cv2.INTER_CUBIC)
    grain = cv2.GaussianBlur(rng.normal(0, 1, (size, size)), (0, 0), 1.0)
    tex = albedo * (1 + 0.08 * coarse + 0.1 * grain / grain.std())
    return np.clip(tex, 0.05, 0.95).astype(np.float32)


def solid_patches(pieces: Sequence[ConvexPolyhedron], albedo: float) -> list[Patch]:
    """The faces of convex ``pieces`` (body frame) as one-sided patches, shaded by their normal
    (between 0.6 and 1 times ``albedo``)."""
    patches = []
    for piece in pieces:
        for face, normal in zip(piece.faces, piece.normals, strict=True):
            shade = 0.6 + 0.4 * max(float(normal @ LIGHT_BODY), 0.0)
            patches.append(polygon_patch(piece.vertices[list(face)], normal, albedo * shade))
    return patches


def solid_object(
    name: str, pieces: Sequence[ConvexPolyhedron], body2world: PoseSource, *, albedo: float = 0.35,
    layer: int = LAYER_TOOL, on_camera: bool = False,
) -> SceneObject:
    """A solid made of convex ``pieces`` (metres, body frame), e.g. the active interface on the
    arm: ``solid_object("tool", sirom_active().pieces, tool2world, on_camera=True)``."""
    return SceneObject(name, solid_patches(pieces, albedo), body2world, layer=layer,
                       sort_patches=True, on_camera=on_camera)


def board_object(
    name: str,
    board: BoardModel,
    board2world: PoseSource,
    *,
    plate_radius_m: float = 0.06,
    plate_albedo: float = 0.5,
    body: Sequence[ConvexPolyhedron] | None = None,
    black: float = 0.04,
    white: float = 0.85,
    supersample: int = 4,
) -> SceneObject:
    """A marker board on a grey disc plate at z = 0, or, given ``body`` (convex pieces in the
    board frame whose face is the plane z = 0: the passive interface), on that solid's face."""
    patches: list[Patch] = []
    if body is not None:
        patches += solid_patches(body, plate_albedo)
    elif plate_radius_m > 0:
        size = 2 * plate_radius_m
        patches.append(rect_patch(disc_texture(plate_albedo), size, size, np.eye(4), 1))
    bits = board.dictionary.markerSize
    ratio = board.border_m / board.marker_side_m
    for marker_id, corners in zip(board.marker_ids, board.corners, strict=True):
        levels = marker_texture_levels(
            board.dictionary, marker_id, bits, ratio, black, white, MARKER_LEVELS
        )
        border_texels = round(2 * ratio * (bits + 2))
        patch = marker_patch(corners, levels, border_texels, marker_id, supersample)
        if body is not None:  # printed on a solid's face: seen from the front only
            patch = Patch(patch.levels, patch.tex2plane, patch.plane2body, patch.supersample,
                          marker_id, np.array([0.0, 0.0, 1.0]))
        patches.append(patch)
    return SceneObject(name, patches, board2world, board=board)


def table_object(
    table2world: PoseSource, rng: np.random.Generator, size_m: float = 1.5
) -> SceneObject:
    """A square table top (z up) of side ``size_m`` centred on ``table2world``; its mottling
    (texels of 3-6 mm, grain blurred over one) is smooth at the pixel scale, so it is sampled at
    half resolution (``Patch.smooth``)."""
    patch = rect_patch(table_texture(rng), size_m, size_m, np.eye(4), 1)
    patch = Patch(patch.levels, patch.tex2plane, patch.plane2body, 1, smooth=True)
    return SceneObject("table", [patch], table2world, layer=LAYER_TABLE)


def random_board_view(
    rng: np.random.Generator,
    board: BoardModel,
    intrinsics: CameraIntrinsics,
    distance_range_m: tuple[float, float],
    max_tilt_deg: float,
    margin_px: float = 8.0,
) -> np.ndarray:
    """A random ``board2cam`` (4, 4) with the whole board (and borders) inside the image.

    Distance (camera centre to board origin) uniform in ``distance_range_m``; the board centre
    lies on the ray of a uniformly drawn pixel; the angle between the board normal and the line
    of sight uniform in [0, max_tilt_deg] (so near-frontal views, the hardest for a planar
    target, are well represented); azimuth of the tilt and in-plane rotation uniform.
    """
    k_inv = np.linalg.inv(intrinsics.camera_matrix)
    grow = 1.0 + board.border_m / board.marker_side_m * 2.5
    centre = board.corners.mean(axis=1, keepdims=True)
    outline = (centre + (board.corners - centre) * grow).reshape(-1, 3)
    for _ in range(10_000):
        distance = rng.uniform(*distance_range_m)
        pix = rng.uniform([0, 0], [intrinsics.width, intrinsics.height])
        ray = k_inv @ np.array([pix[0], pix[1], 1.0])
        ray /= np.linalg.norm(ray)
        tilt = np.radians(rng.uniform(0.0, max_tilt_deg))
        helper = np.cross(ray, [1.0, 0.0, 0.0] if abs(ray[0]) < 0.9 else [0.0, 1.0, 0.0])
        axis = Rotation.from_rotvec(ray * rng.uniform(0, 2 * np.pi)).apply(helper)
        z_board = Rotation.from_rotvec(axis / np.linalg.norm(axis) * tilt).apply(-ray)
        x_seed = np.cross([0.0, 1.0, 0.0], z_board)
        x_board = Rotation.from_rotvec(z_board * rng.uniform(0, 2 * np.pi)).apply(
            x_seed / np.linalg.norm(x_seed)
        )
        board2cam = np.eye(4)
        board2cam[:3, :3] = np.column_stack([x_board, np.cross(z_board, x_board), z_board])
        board2cam[:3, 3] = ray * distance
        pts = outline @ board2cam[:3, :3].T + board2cam[:3, 3]
        if np.any(pts[:, 2] < 0.02):
            continue
        px, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), intrinsics.camera_matrix,
                                  intrinsics.dist_coeffs)
        px = px.reshape(-1, 2)
        inside = (px >= margin_px) & (px <= [intrinsics.width - margin_px,
                                            intrinsics.height - margin_px])
        if inside.all():
            return board2cam
    raise RuntimeError("no board view found inside the image; range or tilt too large")


def approach_views(
    n: int,
    start_m: float = 0.55,
    end_m: float = 0.15,
    offset_m: tuple[float, float] = (0.06, -0.04),
    tilt_deg: tuple[float, float] = (35.0, 5.0),
    roll_deg: tuple[float, float] = (25.0, 0.0),
) -> list[np.ndarray]:
    """``n`` camera poses ``cam2board`` (4, 4) of a straight approach to a board at the origin
    (z up): the camera starts ``start_m`` from the board, off its axis by ``offset_m`` (x, y) and
    tilted by ``tilt_deg[0]`` about x and rolled by ``roll_deg[0]`` about its optical axis, and
    ends ``end_m`` away, centred, tilted ``tilt_deg[1]`` and rolled ``roll_deg[1]`` (linear in
    between): the frames a camera sees while a visual servo closes in."""
    views = []
    for s in np.linspace(0.0, 1.0, n):
        distance = start_m + s * (end_m - start_m)
        tilt = np.radians(tilt_deg[0] + s * (tilt_deg[1] - tilt_deg[0]))
        roll = np.radians(roll_deg[0] + s * (roll_deg[1] - roll_deg[0]))
        look = Rotation.from_euler("x", np.pi) * Rotation.from_euler("x", tilt) * Rotation.from_euler("z", roll)
        cam2board = np.eye(4)
        cam2board[:3, :3] = look.as_matrix()
        centre = np.array([(1 - s) * offset_m[0], (1 - s) * offset_m[1], 0.0])
        cam2board[:3, 3] = centre - distance * cam2board[:3, 2]  # the optical axis through centre
        views.append(cam2board)
    return views
