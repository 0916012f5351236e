"""The textured patches' compiled sampling (sim_texkernel) against the OpenCV path it replaces
(perspectiveTransform, resize, remap, INTER_AREA), over random marker poses; its uniform-block
tables against brute force; a pixel's value independent of the part of its box drawn."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers import sim_render, sim_texkernel
from orbitree.drivers.sim_camera import default_intrinsics
from orbitree.drivers.sim_render import (
    RayTable,
    marker_patch,
    marker_texture_levels,
    premultiplied,
    rect_patch,
    render_patches,
)

INTR = default_intrinsics(640, 480, 450.0)
TABLE = RayTable(INTR.camera_matrix, INTR.dist_coeffs, INTR.width, INTR.height)
MARKER_M = 0.018  # the flagship board's marker side


def _project(points: np.ndarray) -> np.ndarray:
    px, _ = cv2.projectPoints(np.ascontiguousarray(points, np.float64), np.zeros(3), np.zeros(3),
                              INTR.camera_matrix, INTR.dist_coeffs)
    return px.reshape(-1, 2)


def _marker(marker_id: int) -> sim_render.Patch:
    """A real ArUco marker (6 x 6 cells and a white border of one cell) on the sim scene's pyramid."""
    dictionary = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    levels = marker_texture_levels(dictionary, marker_id, 4, 1 / 6, 0.04, 0.85, 6)
    half = MARKER_M / 2
    corners = np.array([[-half, half, 0.0], [half, half, 0.0], [half, -half, 0.0], [-half, -half, 0.0]])
    return marker_patch(corners, levels, 2, marker_id)


def _random_pose(rng: np.random.Generator, distance: float, max_tilt_deg: float, spread: float) -> np.ndarray:
    """body2cam: the patch's centre on the ray of a pixel drawn over the image grown by ``spread``
    (beyond its edges: partly out of view), tilted up to ``max_tilt_deg``, spun at random."""
    px = rng.uniform(-spread, 1 + spread, 2) * [INTR.width, INTR.height]
    ray = np.linalg.inv(INTR.camera_matrix) @ [px[0], px[1], 1.0]
    pose = np.eye(4)
    azimuth = rng.uniform(0, 2 * np.pi)
    axis = np.array([np.cos(azimuth), np.sin(azimuth), 0.0])
    tilt = Rotation.from_rotvec(np.radians(rng.uniform(0, max_tilt_deg)) * axis)
    pose[:3, :3] = (tilt * Rotation.from_euler("x", 180, degrees=True)
                    * Rotation.from_euler("z", rng.uniform(0, 360), degrees=True)).as_matrix()
    pose[:3, 3] = ray / np.linalg.norm(ray) * distance
    return pose


def _both(canvas: np.ndarray, patch: sim_render.Patch, body2cam: np.ndarray, monkeypatch: pytest.MonkeyPatch,
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The patch drawn over copies of ``canvas`` by the OpenCV path and by the kernel, each
    pixel's path in the kernel (-1: outside every box drawn) and the pyramid levels drawn."""
    old, new = canvas.copy(), canvas.copy()
    classes = np.full(canvas.shape, -1, np.int8)
    levels: list[int] = []
    draw_box = sim_texkernel.draw_box

    def recorded(roi, level, rays, ray2tex, k, box, sub):
        mine = np.zeros(roi.shape, np.int8)
        draw_box(roi, level, rays, ray2tex, k, box, sub, mine)
        classes[sub[1]:sub[3], sub[0]:sub[2]] = mine
        levels.append(next(i for i, lv in enumerate(patch.levels) if lv is level))

    with monkeypatch.context() as m:
        m.setattr(sim_render, "_compiled", lambda *args: False)
        render_patches(old, [patch], body2cam, TABLE, _project)
    with monkeypatch.context() as m:
        m.setattr(sim_render, "draw_box", recorded)
        render_patches(new, [patch], body2cam, TABLE, _project)
    return old, new, classes, levels


def _compare(rng: np.random.Generator, patches: list, poses: list[tuple[float, float, float]],
             monkeypatch: pytest.MonkeyPatch) -> dict:
    """Per-class maximum differences (kernel - OpenCV) over random poses, and the counts."""
    out = {"whole": 0.0, "sampled": 0.0, "untouched": 0.0, "outside": 0.0, "n_whole": 0, "n_sampled": 0,
           "n_line": 0, "n_changed": 0, "n_pixels": 0, "sum": 0.0, "levels": set()}
    for distance, tilt, spread in poses:
        patch = patches[int(rng.integers(len(patches)))]
        canvas = rng.random((INTR.height, INTR.width)).astype(np.float32)
        old, new, classes, levels = _both(canvas, patch, _random_pose(rng, distance, tilt, spread), monkeypatch)
        diff = new.astype(np.float64) - old
        for name, codes in (("outside", [-1]), ("untouched", [0]), ("whole", [1]), ("sampled", [2, 3])):
            if np.any(np.isin(classes, codes)):
                out[name] = max(out[name], float(np.abs(diff[np.isin(classes, codes)]).max()))
        assert np.array_equal(new[classes == 0], canvas[classes == 0])  # no read on the texture
        out["n_whole"] += int(np.count_nonzero(classes == 1))
        out["n_sampled"] += int(np.count_nonzero(classes >= 2))
        out["n_line"] += int(np.count_nonzero(classes == 3))
        out["n_changed"] += int(np.count_nonzero(diff))
        out["n_pixels"] += diff.size
        out["sum"] += float(diff.sum())
        out["levels"].update(levels)
    return out


def _poses(rng: np.random.Generator, n: int) -> list[tuple[float, float, float]]:
    """(distance m, max tilt deg, spread beyond the image) near, far, oblique, partly out of view."""
    kinds = [(0.025, 0.06, 30.0, 0.0), (0.06, 0.3, 45.0, 0.0), (0.3, 1.2, 30.0, 0.0), (0.04, 0.4, 80.0, 0.0),
             (0.03, 0.2, 45.0, 0.08)]
    return [(float(rng.uniform(lo, hi)), tilt, spread) for lo, hi, tilt, spread in
            (kinds[i % len(kinds)] for i in range(n))]


def test_marker_pixels_match_the_opencv_path_interior_exactly_edges_to_float_rounding(monkeypatch):
    """60 random views of real ArUco markers (premultiplied, k = 4), 2.5 cm to 1.2 m, tilted up to
    80 deg, some partly out of view: the pixels the kernel gives one texel's value equal OpenCV's
    to 1e-6 (measured: 0, the bilinear mix of equal texels and their mean are exact); the sampled
    ones to 1e-4 albedo (measured 2e-5: OpenCV 5's remap of one float channel reads the texture
    at the map's exact coordinates, so what differs is the float32 rounding of the samples'
    coordinates, a few 1e-5 texel, times the marker's contrast of 0.81 per texel); the
    pixels with no read on the texture, and those outside the box, are left exactly as they
    were; the mean difference over the images is 0 to 1e-9."""
    rng = np.random.default_rng(11)
    stats = _compare(rng, [_marker(i) for i in (0, 7, 23)], _poses(rng, 60), monkeypatch)
    assert stats["whole"] <= 1e-6 and stats["sampled"] <= 1e-4
    assert stats["untouched"] == 0.0 and stats["outside"] == 0.0
    assert abs(stats["sum"]) / stats["n_pixels"] < 1e-9
    assert stats["n_whole"] > 20_000 and stats["n_sampled"] > 20_000  # both paths drawn
    assert stats["n_line"] > 0.5 * stats["n_sampled"]  # most sampled pixels on one cell edge: read along it
    assert len(stats["levels"]) >= 4  # from coarse (far) to fine (near) texture levels


@pytest.mark.parametrize("kind", ["opaque", "premultiplied"])
def test_other_textures_match_the_opencv_path_and_off_texture_reads_act_as_remaps_border(kind, monkeypatch):
    """An opaque albedo texture (a ChArUco board's kind: blocks of 8 texels, k = 3), and a
    premultiplied one whose coverage varies (blocks of alpha 0, 0.5, 1; k = 4), over random views:
    the same bounds; an opaque pixel any of whose samples reads off the texture (remap's NaN) is
    left as it was, a premultiplied one composited with the border's 0, in both."""
    rng = np.random.default_rng(5)
    albedo = np.kron(rng.integers(0, 2, (12, 12)), np.ones((8, 8))).astype(np.float32) * 0.8 + 0.05
    if kind == "opaque":
        patch = rect_patch(albedo, 0.03, 0.03, np.eye(4), 3)
    else:
        alpha = np.kron(rng.integers(0, 3, (8, 8)), np.ones((12, 12))) / 2
        patch = rect_patch(premultiplied(albedo, alpha), 0.03, 0.03, np.eye(4), 4)
    stats = _compare(rng, [patch], _poses(rng, 25), monkeypatch)
    assert stats["whole"] <= 1e-6 and stats["sampled"] <= 1e-4
    assert stats["untouched"] == 0.0 and stats["outside"] == 0.0
    assert abs(stats["sum"]) / stats["n_pixels"] < 1e-9
    assert stats["n_whole"] > 5_000 and stats["n_sampled"] > 5_000


@pytest.mark.parametrize("kind", ["marker", "opaque", "premultiplied"])
def test_reading_along_one_axis_where_a_block_is_flat_gives_the_general_reads_bits(kind, monkeypatch):
    """Random views of markers, of an opaque texture and of a premultiplied one: the pixels drawn
    with the reads along one axis (a block whose texels are equal down each column or along each
    row, ``_LINE``) equal, bit for bit, those drawn with the general bilinear reads everywhere
    (``prepared``'s ``lines`` off); and many pixels take that path."""
    rng = np.random.default_rng(17)
    albedo = np.kron(rng.integers(0, 2, (12, 12)), np.ones((8, 8))).astype(np.float32) * 0.8 + 0.05
    if kind == "marker":
        patches = [_marker(i) for i in (1, 9)]
    elif kind == "opaque":
        patches = [rect_patch(albedo, 0.03, 0.03, np.eye(4), 3)]
    else:
        alpha = np.kron(rng.integers(0, 3, (8, 8)), np.ones((12, 12))) / 2
        patches = [rect_patch(premultiplied(albedo, alpha), 0.03, 0.03, np.eye(4), 4)]
    prepared = sim_texkernel.prepared

    def general(level):
        return (*prepared(level)[:5], False)

    lines = 0
    for distance, tilt, spread in _poses(rng, 15):
        patch = patches[int(rng.integers(len(patches)))]
        pose = _random_pose(rng, distance, tilt, spread)
        canvas = rng.random((INTR.height, INTR.width)).astype(np.float32)
        fast = canvas.copy()
        render_patches(fast, [patch], pose, TABLE, _project)
        with monkeypatch.context() as m:
            m.setattr(sim_texkernel, "prepared", general)
            render_patches(canvas, [patch], pose, TABLE, _project)
        assert fast.tobytes() == canvas.tobytes()
        _, _, classes, _ = _both(canvas, patch, pose, monkeypatch)
        lines += int(np.count_nonzero(classes == sim_texkernel._LINE))
    assert lines > 2_000


def test_a_pixel_is_drawn_the_same_whatever_part_of_its_box_is_drawn():
    """Random sub-boxes of a marker's box (as a region render draws them) get, bit for bit, the
    pixels the whole box gets: each pixel's samples come from its neighbours in the box."""
    rng = np.random.default_rng(2)
    patch = _marker(3)
    level = 3
    texture = patch.levels[level]
    plane2cam = _random_pose(rng, 0.08, 50.0, 0.0)
    plane2cam = np.column_stack([plane2cam[:3, :3] @ patch.plane2body[:, :2], plane2cam[:3, :3]
                                 @ patch.plane2body[:, 2] + plane2cam[:3, 3]])
    ray2tex = np.diag([8.0, 8.0, 1.0]) @ np.linalg.inv(plane2cam @ patch.tex2plane)
    ray2tex = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]]) @ ray2tex
    corners = cv2.perspectiveTransform(np.array([[[0.0, 0.0], [texture.shape[1], 0.0], [texture.shape[1],
                                        texture.shape[0]], [0.0, texture.shape[0]]]]), np.linalg.inv(ray2tex))[0]
    px = _project(np.column_stack([corners, np.ones(4)]))
    x0, y0 = np.maximum(np.floor(px.min(axis=0)).astype(int) - 3, 0)
    x1, y1 = np.minimum(np.ceil(px.max(axis=0)).astype(int) + 4, [INTR.width, INTR.height])
    box = (int(x0), int(y0), int(x1), int(y1))
    canvas = rng.random((INTR.height, INTR.width)).astype(np.float32)
    whole = canvas.copy()
    sim_texkernel.draw_box(whole[y0:y1, x0:x1], texture, TABLE.rays, ray2tex, 4, box, box)
    assert np.count_nonzero(whole != canvas) > 1000
    for _ in range(30):
        sx0, sx1 = np.sort(rng.integers(x0, x1 + 1, 2))
        sy0, sy1 = np.sort(rng.integers(y0, y1 + 1, 2))
        if sx0 == sx1 or sy0 == sy1:
            continue
        buffer = canvas[sy0:sy1, sx0:sx1].copy()  # a region render's own buffer
        sub = (int(sx0), int(sy0), int(sx1), int(sy1))
        sim_texkernel.draw_box(buffer, texture, TABLE.rays, ray2tex, 4, box, sub)
        assert np.array_equal(buffer, whole[sy0:sy1, sx0:sx1])


def test_uniform_tables_tell_uniform_blocks_of_texels_as_brute_force_does():
    """Random blocks of random blocky textures (opaque and premultiplied, values differing in one
    channel only): uniform by the summed-area tables exactly when all their texels are equal."""
    rng = np.random.default_rng(4)
    seen = {True: 0, False: 0}
    for _ in range(20):
        h, w = (int(v) for v in rng.integers(4, 40, 2))
        albedo = np.kron(rng.integers(0, 2, (h, w)), np.ones((3, 3)))[:h, :w].astype(np.float32)
        alpha = np.kron(rng.integers(0, 2, (h, w)), np.ones((4, 4)))[:h, :w].astype(np.float32)
        for level in (albedo, np.dstack([albedo, alpha])):
            across, down = sim_texkernel.uniform_tables(level)
            planes = level.reshape(h, w, -1)
            for _ in range(200):
                r0, r1 = np.sort(rng.integers(0, h, 2))
                c0, c1 = np.sort(rng.integers(0, w, 2))
                block = planes[r0:r1 + 1, c0:c1 + 1]
                expected = bool(np.all(block == block[0, 0]))
                assert sim_texkernel._uniform(across, down, r0, c0, r1, c1) == expected
                assert sim_texkernel._rows_flat(across, r0, c0, r1, c1) == bool(np.all(block == block[:, :1]))
                assert sim_texkernel._columns_flat(down, r0, c0, r1, c1) == bool(np.all(block == block[:1]))
                seen[expected] += 1
    assert seen[True] > 300 and seen[False] > 300


def test_uniform_tables_wrapping_modulo_2_16_still_tell_small_blocks_exactly():
    """A 480 x 480 texture of random texels (about 125 000 differences between neighbours: the
    uint16 sums wrap around): blocks of up to 12 x 12 texels anywhere, uniform, flat along rows or
    down columns by the tables exactly when brute force says so."""
    rng = np.random.default_rng(6)
    level = np.kron(rng.integers(0, 2, (240, 240)), np.ones((2, 2))).astype(np.float32)
    level[rng.random(level.shape) < 0.3] = 0.5
    across, down = sim_texkernel.uniform_tables(level)
    assert across.dtype == np.uint16 and int(np.count_nonzero(level[:, 1:] != level[:, :-1])) > 2**16
    seen = {True: 0, False: 0}
    for _ in range(20_000):
        r0, c0 = (int(v) for v in rng.integers(0, 480, 2))
        r1, c1 = min(r0 + int(rng.integers(0, 12)), 479), min(c0 + int(rng.integers(0, 12)), 479)
        block = level[r0:r1 + 1, c0:c1 + 1]
        expected = bool(np.all(block == block[0, 0]))
        assert sim_texkernel._uniform(across, down, r0, c0, r1, c1) == expected
        assert sim_texkernel._rows_flat(across, r0, c0, r1, c1) == bool(np.all(block == block[:, :1]))
        assert sim_texkernel._columns_flat(down, r0, c0, r1, c1) == bool(np.all(block == block[:1]))
        seen[expected] += 1
    assert seen[True] > 300 and seen[False] > 10_000
