"""Frames rendered when read (``SimCamera.lazy_frames``, ``LazyFrame``): the same pixels as frames
rendered at their capture, whatever is rendered, in which parts and when."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from orbitree.drivers.faulty_camera import FaultyCamera
from orbitree.drivers.interfaces import Frame
from orbitree.drivers.lazy_frame import LazyFrame
from orbitree.drivers.sim_camera import ImageOccluder, SensorModel, approach_views, board_scene_camera
from orbitree.runtime.recorder import dumps
from orbitree.skills.board import BoardTracker
from orbitree.skills.board_model import make_aruco_board, sirom_board_model


def _camera(lazy: bool, seed: int = 5, exposure_s: float = 0.0):
    cam = board_scene_camera(sirom_board_model(), seed=seed, board_name="sirom")
    cam.exposure_s = exposure_s
    cam.lazy_frames = lazy
    cam.setup()
    return cam


def _frames(cam, views, t0: float = 0.0):
    """One frame per view, the camera stepped 1/15 s between them."""
    out = []
    for k, view in enumerate(views):
        cam.set_cam2world(view)
        cam.step(t0 + k / 15)
        out.append(cam.read())
    return out


def test_frames_rendered_late_in_parts_or_never_equal_frames_rendered_at_capture():
    """Twelve frames of an approach (with motion blur) from two cameras of the same seed, one
    rendering at capture, one handing out LazyFrames: every lazy frame read whole equals its
    eager twin bit for bit, though some were never read, some read in parts first, and all were
    read after the camera had moved on (the noise of later frames does not depend on which
    frames were rendered)."""
    views = approach_views(12)
    eager = _frames(_camera(False, exposure_s=0.01), views)
    lazy_cam = _camera(True, exposure_s=0.01)
    lazy = _frames(lazy_cam, views)
    assert all(isinstance(f, LazyFrame) and not f.rendered for f in lazy)
    assert lazy_cam.frames_rendered == 0 and lazy_cam.last_blur_px > 0.5  # the blur noted at capture
    box = (500, 250, 780, 470)
    for k in (9, 3, 7, 0, 11, 4):  # out of order; 1, 2, 5, 6, 8 and 10 never rendered
        if k % 2:
            part = lazy[k].region([box, (0, 0, 64, 32)])
            assert np.array_equal(part[250:470, 500:780], eager[k].image[250:470, 500:780])
            assert np.array_equal(part[:32, :64], eager[k].image[:32, :64])
            assert part[300:, :400].max() == 0 and part[:200, 900:].max() == 0  # nothing else made
        assert np.array_equal(lazy[k].image, eager[k].image), k
        assert lazy[k].region([box]) is lazy[k].image  # made whole once: regions are its pixels
    assert lazy_cam.frames_rendered == 6 + 4  # six whole images, four regions


def test_a_lazy_frame_renders_the_scene_as_it_was_at_capture():
    """A frame read after the camera's sensor, occluders, hidden markers and the board's pose
    changed shows the scene of its capture (then the camera is as it was before the read)."""
    view = approach_views(6)[2]
    eager, lazy_cam = _camera(False), _camera(True)
    for cam in (eager, lazy_cam):
        cam.set_cam2world(view)
    reference = eager.read()
    frame = lazy_cam.read()
    board = lazy_cam.object("sirom")
    moved = board.pose().copy()
    moved[:3, 3] += [0.02, 0.0, 0.0]
    board.body2world = moved
    sensor = SensorModel(exposure=0.6, read_noise_dn=4.0)
    lazy_cam.sensor = sensor
    lazy_cam.occluders.append(ImageOccluder(np.array([[0, 0], [600, 0], [600, 700]], float), 0.9))
    board.hidden_marker_ids = {1}
    assert np.array_equal(frame.image, reference.image)
    assert lazy_cam.sensor is sensor and len(lazy_cam.occluders) == 1 and board.hidden_marker_ids == {1}
    # replaced by equal objects holding arrays (a lens, an occluder): compared by identity, no error
    second = lazy_cam.read()
    lazy_cam.intrinsics = dataclasses.replace(lazy_cam.intrinsics)
    lazy_cam.occluders = [ImageOccluder(np.array([[0, 0], [600, 0], [600, 700]], float), 0.9)]
    assert second.image.shape == (720, 1280) and lazy_cam.occluders[0].albedo == 0.9


def test_faults_on_a_lazy_frame_see_its_pixels():
    """The camera's fault wrapper hides a marker on a lazy frame's pixels (an ordinary frame comes
    out) and adds corner noise to its metadata without rendering it (still lazy, same pixels)."""
    view = approach_views(6)[3]
    eager = _camera(False)
    eager.set_cam2world(view)
    plain = eager.read()
    faulty = FaultyCamera(_camera(True), lambda: 0.0, boards=[make_aruco_board(sirom_board_model())])
    faulty.inner.set_cam2world(view)
    faulty.corner_noise(1, 0.5)
    noisy = faulty.read()
    assert isinstance(noisy, LazyFrame) and not noisy.rendered and noisy.meta["corner_noise_px"] == 0.5
    assert np.array_equal(noisy.image, plain.image)
    faulty.remove(1)
    faulty.occlude(2, [0])
    hidden = faulty.read()
    assert type(hidden) is Frame and hidden.image.shape == plain.image.shape


def test_tracker_on_lazy_frames_renders_only_its_windows_and_finds_the_same_poses():
    """The tracker follows an approach on lazy frames: every pose is bit for bit the pose found on
    the whole images, and while it tracks it has only its markers' windows rendered (under 15 % of
    the image a frame here)."""
    model = sirom_board_model()
    board = make_aruco_board(model)
    views = approach_views(14)
    eager, lazy_cam = _camera(False, seed=8), _camera(True, seed=8)
    intr = eager.intrinsics
    whole = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    parts = BoardTracker(board, intr.camera_matrix, intr.dist_coeffs)
    shares = []
    for a, b in zip(_frames(eager, views), _frames(lazy_cam, views), strict=True):
        before = lazy_cam.frames_rendered
        asked = []
        region = b.region
        b.__dict__["region"] = lambda boxes, region=region, asked=asked: asked.append(list(boxes)) or region(boxes)
        expected, found = whole.update(a.image), parts.update(b)
        assert (expected is None) == (found is None)
        if found is not None:
            assert np.array_equal(found.board2cam, expected.board2cam)
            assert found.marker_ids == expected.marker_ids
        if asked and not b.rendered:
            assert lazy_cam.frames_rendered == before + 1
            shares.append(sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in asked[0]) / (intr.width * intr.height))
    assert parts.searches == whole.searches and parts.searches["track"] >= 10
    assert len(shares) == parts.searches["track"] and max(shares) < 0.15


def test_a_lazy_frame_is_logged_as_any_frame_without_being_rendered():
    """The mission log writes a frame as its image's shape and type, its stamp and metadata: a
    lazy frame the same way as a rendered one, and logging it renders nothing."""
    view = approach_views(6)[1]
    eager, lazy_cam = _camera(False), _camera(True)
    for cam in (eager, lazy_cam):
        cam.set_cam2world(view)
    plain, lazy = eager.read(), lazy_cam.read()
    assert json.loads(dumps({"f": lazy})) == json.loads(dumps({"f": plain}))
    assert json.loads(dumps({"f": lazy}))["f"]["image"] == {"array": [720, 1280], "dtype": "uint8"}
    assert not lazy.rendered and lazy_cam.frames_rendered == 0
