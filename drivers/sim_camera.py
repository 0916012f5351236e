"""Simulated eye-in-hand camera: renders what the wrist camera sees of marker boards on a table.

The scene is a list of :class:`SceneObject` (a body pose plus planar textured patches): marker
boards built from a :class:`~orbitree.skills.board_model.BoardModel` (real ArUco images with their
white border, printed on the model's corners, on a grey plate or on the passive interface's
face), solids (the active interface the camera is mounted on, which hides what it hides) and a
grey table (see :mod:`orbitree.drivers.sim_scene`). The camera pose comes from a callable
``cam2world()`` (the sim world passes the real tool pose times the real mount) or is set
directly. Rendering: pinhole plus OpenCV distortion per pixel, supersampled anti-aliased patches
(:mod:`orbitree.drivers.sim_render`), image-space occluders, lighting (exposure, linear gradient,
vignetting), Gaussian optical blur, sensor noise (read noise plus shot noise) from a seeded
``np.random.Generator``, 8-bit quantisation and an optional gamma curve. Output: (H, W) uint8 grey.

A real camera's timing and lens (all off by default, so a bare ``SimCamera`` is ideal):

* ``true_intrinsics``: the lens as built renders the image; ``intrinsics`` is what the camera
  reports (its calibration), which estimators use. ``cam2tool``: where the camera really sits on
  the tool carrying it (the sim world mounts it there; default: the arm's nominal mount).
* ``exposure_s``: the image integrates the scene over the exposure. The scene (not the objects
  that move with the camera, ``SceneObject.on_camera``) is rendered at the mid-exposure pose and
  smeared by a line kernel along the projected motion of the target's origin (or of a point 1 m
  ahead) between the exposure's start and end, from the camera's pose history (``step``): a
  uniform blur, exact for a translation parallel to the image and for the target's centre.
* ``latency_s``: a frame is handed out that long after its exposure ends (``read`` returns None
  meanwhile); ``stamp_jitter_s``: its stamp is the mid-exposure instant plus a Gaussian error
  of that standard deviation (truncated at 3 sigma), from a timing generator of the seed.

``render_beside()`` (the executive calls it when the loop is paced by the wall clock) moves the
rendering out of the caller's way, into a process of the camera's own
(:class:`~orbitree.drivers.render_process.RenderProcess`, started by ``setup``; a thread with
``process=False``, which shares the interpreter lock with the tick): at each frame's capture
``read`` takes the poses of the camera and of every object (the exposure's instants) and returns
at once; the worker renders the image, and the frame is handed out once it is rendered and its
latency has passed, as a real camera exposes and transfers while the computer does other work.
The images are the same as rendered in line (one worker renders frames in order from the same
generator), unless a frame is dropped because the worker fell behind.

``render(..., region=box or boxes)`` renders only those pixels, bit for bit the whole frame's
(:mod:`orbitree.drivers.sim_region`). With ``lazy_frames`` (the sim world's cameras, rendering
in line) ``read`` hands out a :class:`~orbitree.drivers.lazy_frame.LazyFrame`, its poses, noise
draw and scene state taken at capture, rendered whole or in the parts a reader asks for (the
BoardTracker: its markers' windows) when read, with the same pixels; one nobody reads is never
rendered.

Ground truth never travels with the image: ``read()`` returns only a :class:`Frame` (image,
stamp, camera name, frame counter); tests and the sim world ask ``ground_truth_board2cam(name)``
or ``project_marker_corners(name)`` explicitly.

Usage::

    cam = SimCamera("wrist_cam", seed=1, cam2world=world.camera_pose)
    cam.add_object(board_object("sirom", sirom_board_model(), board2world))
    cam.setup()
    cam.step(t)
    frame = cam.read()

Speed: a 1280x720 frame 24-29 ms of CPU before issue 15, 7-8 ms since (README, "Benchmarks").
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np

from orbitree.drivers.interfaces import CameraIntrinsics, Frame
from orbitree.drivers.lazy_frame import LazyFrame
from orbitree.drivers.render_process import RenderProcess
from orbitree.drivers.sim_coverage import warm_up as warm_coverage
from orbitree.drivers.sim_expose import blur_taps
from orbitree.drivers.sim_expose import warm_up as warm_expose
from orbitree.drivers.sim_painter import ScenePainter
from orbitree.drivers.sim_region import render_region
from orbitree.drivers.sim_render import RayTable
from orbitree.drivers.sim_scene import (
    PoseSource,
    SceneObject,
    approach_views,
    board_object,
    random_board_view,
    resolve_pose,
    solid_object,
    table_object,
)
from orbitree.drivers.sim_sensor import ImageSensor, SensorModel
from orbitree.drivers.sim_texkernel import warm_up as warm_texkernel
from orbitree.skills.board_model import BoardModel
from orbitree.skills.se3 import interpolate_pose

__all__ = [
    "DEFAULT_DISTORTION",
    "ImageOccluder",
    "PoseSource",
    "SceneObject",
    "SensorModel",
    "SimCamera",
    "approach_views",
    "board_object",
    "board_scene_camera",
    "default_intrinsics",
    "random_board_view",
    "solid_object",
    "table_object",
]
HISTORY_S = 0.25  # camera poses kept for the exposure (s)

DEFAULT_DISTORTION = (-0.06, 0.08, 4e-4, -3e-4, -0.02)


def default_intrinsics(
    width: int = 1280,
    height: int = 720,
    focal_px: float = 900.0,
    dist_coeffs: Sequence[float] = DEFAULT_DISTORTION,
) -> CameraIntrinsics:
    """Square pixels, principal point at the image centre, mild barrel distortion."""
    k = np.array([[focal_px, 0, (width - 1) / 2], [0, focal_px, (height - 1) / 2], [0, 0, 1.0]])
    return CameraIntrinsics(k, np.asarray(dist_coeffs, dtype=np.float64), width, height)


@dataclass(frozen=True)
class ImageOccluder:
    """A polygon (N, 2) in pixels painted over the image with the given albedo."""

    polygon: np.ndarray
    albedo: float = 0.2


class SimCamera(ScenePainter):
    """Rendering camera implementing the ``Camera`` protocol.

    ``frame_rate_hz`` None: every ``read()`` renders a frame at the current time. Otherwise
    frames fall on the grid ``k / frame_rate_hz``: ``read()`` renders one frame per grid interval
    (its exposure ending at the current time) and returns None for further reads in the same
    interval. A frame's stamp is the middle of its exposure (the current time without
    exposure), plus the stamp error; with ``latency_s`` it is handed out that much later.
    ``setup()`` only precomputes the per-pixel rays; nothing else needs opening.
    """

    def __init__(
        self,
        name: str = "sim_cam",
        intrinsics: CameraIntrinsics | None = None,
        *,
        cam2world: PoseSource | None = None,
        sensor: SensorModel | None = None,
        seed: int = 0,
        background_albedo: float = 0.3,
        frame_rate_hz: float | None = None,
        clock: Callable[[], float] | None = None,
        true_intrinsics: CameraIntrinsics | None = None,
        exposure_s: float = 0.0,
        latency_s: float = 0.0,
        stamp_jitter_s: float = 0.0,
        cam2tool: np.ndarray | None = None,
    ) -> None:
        if min(exposure_s, latency_s, stamp_jitter_s) < 0.0:
            raise ValueError("exposure, latency and stamp jitter must be >= 0")
        self.name = name
        self.intrinsics = intrinsics or default_intrinsics()
        self.true_intrinsics = true_intrinsics
        self.exposure_s = float(exposure_s)
        self.latency_s = float(latency_s)
        self.stamp_jitter_s = float(stamp_jitter_s)
        self.cam2tool = None if cam2tool is None else np.array(cam2tool, dtype=np.float64)
        self._timing_rng = np.random.default_rng([seed, 1])
        self._history: deque[tuple[float, np.ndarray]] = deque()
        self._in_flight: deque[tuple[float, Frame | Future]] = deque()
        self._renderer: ThreadPoolExecutor | RenderProcess | None = None
        self._render_lock = threading.Lock()
        self._centres: dict[int, np.ndarray] = {}
        self._layers: dict[int, tuple] = {}  # on-camera objects' painted layers (see _paint_layer)
        self.last_blur_px = 0.0  # length of the last frame's motion blur (for tests)
        self.frames_rendered, self.render_s = 0, 0.0  # images rendered, wall time spent on them
        self.sensor = sensor or SensorModel()
        self.objects: list[SceneObject] = []
        self.occluders: list[ImageOccluder] = []
        self.background_albedo = background_albedo
        self.frame_rate_hz = frame_rate_hz
        self._cam2world: PoseSource = np.eye(4) if cam2world is None else cam2world
        self._clock = clock
        self._time = 0.0
        self._last_frame_index = -1
        self._frame_count = 0
        # frames handed out unrendered, rendered whole or in parts when read (``LazyFrame``; only
        # when rendering in line)
        self.lazy_frames = False
        self.imager = ImageSensor(seed)  # light, blur, noise, quantisation (sim_sensor)
        self._rays: RayTable | None = None
        self._rays_for: CameraIntrinsics | None = None

    # -- Camera protocol -------------------------------------------------------------------
    def setup(self) -> None:
        """Precompute the per-pixel rays and load the compiled kernels (the faces' coverage, the
        textures' sampling, the sensor's exposure): the costly preparations; when rendering in a
        process of its own, start it (it builds its own rays)."""
        if isinstance(self._renderer, RenderProcess):
            self._renderer.start()
        else:
            self._ray_table()
            warm_coverage()
            warm_expose((len(blur_taps(self.sensor.blur_sigma_px, 2)),))  # its sensor's blur kernel
            warm_texkernel()

    def shutdown(self) -> None:
        """Stop the rendering thread or process, if any; safe to call any number of times
        (rendering stays beside: a new process starts on the next ``setup`` or frame)."""
        renderer = self._renderer
        if isinstance(renderer, RenderProcess):
            renderer.close()
        elif renderer is not None:
            self._renderer = None
            renderer.shutdown(wait=True, cancel_futures=True)
        self._in_flight.clear()

    def render_beside(self, process: bool = True, nice: int = 0) -> None:
        """Render frames beside the caller from now on, in a process of the camera's own (``nice``
        levels below the caller's priority) or (``process=False``) in a thread (see the module
        docstring)."""
        if self._renderer is None:
            self._renderer = RenderProcess(self, nice=nice) if process else \
                ThreadPoolExecutor(1, thread_name_prefix=f"{self.name} render")

    def read(self) -> Frame | None:
        """Render the scene at the current time; None between frames (see ``frame_rate_hz``)
        and while the newest frame is still on its way (``latency_s``)."""
        now = self.now()
        capture = True
        if self.frame_rate_hz is not None:
            index = math.floor(now * self.frame_rate_hz + 1e-9)
            capture = index > self._last_frame_index
            if capture:
                self._last_frame_index = index
        if capture:
            frame = self._capture(now)
            if self.latency_s == 0.0 and isinstance(frame, Frame):
                return frame
            self._in_flight.append((now + self.latency_s, frame))
        if isinstance(self._renderer, RenderProcess):
            self._renderer.poll()  # frames the process finished
        due = None
        while self._in_flight and self._in_flight[0][0] <= now + 1e-9:
            item = self._in_flight[0][1]
            if isinstance(item, Future):
                if item.cancelled():
                    self._in_flight.popleft()
                    continue
                if not item.done():
                    break  # still being rendered: handed out on a later read
                item = item.result()
            self._in_flight.popleft()
            due = item  # an older frame due at once is dropped
        return due

    def _capture(self, now: float) -> Frame | Future:
        """One exposure ending at ``now``: rendered at its middle, smeared by the motion (a
        Future of the frame when rendering beside)."""
        mid = now - 0.5 * self.exposure_s
        motion = None
        if self.exposure_s > 0.0:
            motion = (self._pose_at(now - self.exposure_s), self._pose_at(now))
        stamp = mid
        if self.stamp_jitter_s > 0.0:
            error = self._timing_rng.normal()
            while abs(error) > 3.0:
                error = self._timing_rng.normal()
            stamp += self.stamp_jitter_s * error
        self._frame_count += 1
        meta = {"camera": self.name, "frame": self._frame_count}
        cam2world = self._pose_at(mid)
        if self._renderer is None:
            if self.lazy_frames:
                return self._lazy_frame(cam2world, motion, stamp, meta)
            return Frame(self.render(cam2world, motion), stamp, meta)
        poses = {id(obj): obj.pose() for obj in self.objects}  # the scene as it is now
        for _, waiting in self._in_flight:  # a frame not yet started is overwritten, not queued
            if isinstance(waiting, Future):
                waiting.cancel()
        if isinstance(self._renderer, RenderProcess):
            return self._renderer.submit(cam2world, motion, poses, stamp, meta)
        return self._renderer.submit(
            lambda: Frame(self.render(cam2world, motion, object_poses=poses), stamp, meta))

    def _lazy_frame(self, cam2world: np.ndarray, motion: tuple[np.ndarray, np.ndarray] | None,
                    stamp: float, meta: dict) -> LazyFrame:
        """The frame captured now, rendered when read (``lazy_frames``): the poses, the noise
        draw and the scene's state taken now, as the rendering in line would take them."""
        poses = {id(obj): obj.pose() for obj in self.objects}
        lens = self.lens
        draw = self.imager.standard_normal((lens.height, lens.width))  # this frame's, in its turn
        blur = (self._blur_kernel(motion, poses), self.last_blur_px)  # last_blur_px noted now, as in line
        state = self._scene_state()

        def render(boxes: list | None) -> np.ndarray:
            return self.render(cam2world, motion, poses, region=boxes, draw=draw, state=state, blur=blur)

        return LazyFrame(render, (lens.height, lens.width), stamp, meta)

    # -- clock and poses -------------------------------------------------------------------
    def step(self, t: float) -> None:
        """Set the simulated time (s) used to stamp the next frames; with an exposure, note the
        camera's pose at that time (the exposure's motion comes from these)."""
        self._time = float(t)
        if self.exposure_s > 0.0:
            history = self._history
            if history and history[-1][0] >= self._time:
                history.clear()  # time went back (a new run on the same camera)
            history.append((self._time, self.cam2world()))
            while len(history) > 2 and history[1][0] < self._time - HISTORY_S:
                history.popleft()

    def _pose_at(self, t: float) -> np.ndarray:
        """The camera pose at time ``t`` from the pose history (interpolated; the current pose
        after the last entry, the oldest one before the first)."""
        history = self._history
        if not history or t >= history[-1][0]:
            return self.cam2world()
        if t <= history[0][0]:
            return history[0][1]
        k = bisect.bisect_left(history, t, key=lambda entry: entry[0])  # np.searchsorted's index
        (t0, a), (t1, b) = history[k - 1], history[k]
        return interpolate_pose(a, b, (t - t0) / (t1 - t0))

    def now(self) -> float:
        return float(self._clock()) if self._clock is not None else self._time

    def set_cam2world(self, cam2world: PoseSource) -> None:
        """A fixed (4, 4) camera pose, or a callable returning the current one."""
        self._cam2world = cam2world

    def cam2world(self) -> np.ndarray:
        return resolve_pose(self._cam2world)

    def add_object(self, obj: SceneObject) -> SceneObject:
        self.objects.append(obj)
        return obj

    def object(self, name: str) -> SceneObject:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise KeyError(f"no scene object named {name!r}; have {[o.name for o in self.objects]}")

    # -- ground truth (for tests and the sim world only) -------------------------------------
    def ground_truth_board2cam(self, name: str) -> np.ndarray:
        """(4, 4) true pose of object ``name`` in the camera frame."""
        return np.linalg.inv(self.cam2world()) @ self.object(name).pose()

    @property
    def lens(self) -> CameraIntrinsics:
        """The intrinsics the image is rendered with (the true ones; ``intrinsics`` by default)."""
        return self.true_intrinsics if self.true_intrinsics is not None else self.intrinsics

    def project_marker_corners(self, name: str) -> dict[int, np.ndarray]:
        """True pixel positions (4, 2) of each marker's corners of board ``name`` (distorted)."""
        board = self.object(name).board
        if board is None:
            raise ValueError(f"scene object {name!r} carries no marker board")
        board2cam = self.ground_truth_board2cam(name)
        cam_pts = board.corners.reshape(-1, 3) @ board2cam[:3, :3].T + board2cam[:3, 3]
        px = self._project(cam_pts).reshape(-1, 4, 2)
        return {mid: px[i] for i, mid in enumerate(board.marker_ids)}

    # -- rendering -------------------------------------------------------------------------
    def render(
        self, cam2world: np.ndarray | None = None,
        motion: tuple[np.ndarray, np.ndarray] | None = None, object_poses: dict[int, np.ndarray] | None = None,
        region: tuple[int, int, int, int] | None = None,
        draw: tuple[np.ndarray, float] | None = None,
        state: tuple | None = None, blur: tuple | None = None,
    ) -> np.ndarray:
        """One noisy 8-bit grey image (H, W) of the scene from ``cam2world`` (default: the
        current camera pose); ``motion``, the camera poses at the exposure's start and end,
        smears the scene (not what moves with the camera) along its projected motion;
        ``object_poses`` (``id(object)`` -> body2world) replaces the objects' own poses.
        ``region`` (x0, y0, x1, y1) pixels: only those are rendered, bit for bit the whole
        frame's (the rest 0), at a cost that goes with the region (``sim_region``). ``draw``: the
        frame's noise draw (``ImageSensor.standard_normal``), made at its capture; ``state``: the
        camera's scene and sensor as at the capture (``_scene_state``), put back for this image
        if they changed since (a frame rendered after its capture, ``LazyFrame``); ``blur``: the
        motion blur's kernel and length (``_blur_kernel``) made at the capture, for a region."""
        with self._render_lock:  # one image at a time (the caches and the noise generator)
            t0 = time.perf_counter()
            now = None if state is None else self._put_state(state)
            try:
                if region is None:
                    image = self._render(cam2world, motion, object_poses or {}, draw)
                else:
                    image = render_region(self, region, cam2world, motion, object_poses or {}, draw, blur)
            finally:
                if now is not None:
                    self._put_state(now)
            self.frames_rendered += 1
            self.render_s += time.perf_counter() - t0
            return image

    @property
    def renders_beside(self) -> bool:
        """True once ``render_beside()`` moved rendering into the camera's own process or thread."""
        return self._renderer is not None

    def _render(self, cam2world, motion, object_poses, draw=None) -> np.ndarray:
        intr = self.lens
        canvas = np.full((intr.height, intr.width), self.background_albedo, np.float32)
        cam2world = self.cam2world() if cam2world is None else cam2world
        world2cam = np.linalg.inv(cam2world)
        objects = sorted(self.objects, key=lambda o: o.layer)
        for obj in objects:
            if not obj.on_camera:
                self._paint(canvas, obj, world2cam, object_poses.get(id(obj)))
        self.last_blur_px = 0.0
        if motion is not None:
            canvas = self._motion_blur(canvas, motion, object_poses)
        # what moves with the camera is seen from the camera at the instant its pose was taken
        # (the exposure's end), so it stays put in the image (one layer, cached, for all frames)
        world2cam_now = world2cam if motion is None else np.linalg.inv(motion[1])
        for obj in objects:
            if obj.on_camera:
                self._paint_layer(canvas, obj, world2cam_now, object_poses.get(id(obj)))
        for occ in self.occluders:
            pts = np.round(np.asarray(occ.polygon) * 16).astype(np.int32)
            cv2.fillPoly(canvas, [pts], float(occ.albedo), cv2.LINE_8, shift=4)
        return self.imager.expose(canvas, self.sensor, self.lens, draw=draw)

def board_scene_camera(
    board: BoardModel,
    *,
    seed: int = 0,
    intrinsics: CameraIntrinsics | None = None,
    sensor: SensorModel | None = None,
    board_name: str = "board",
    table_depth_m: float = 0.05,
    plate_albedo: float = 0.5,
) -> SimCamera:
    """A camera looking at ``board`` (board frame = world frame) lying ``table_depth_m`` above
    a table; set the view with ``set_cam2world``."""
    cam = SimCamera(intrinsics=intrinsics, sensor=sensor, seed=seed)
    table2world = np.eye(4)
    table2world[2, 3] = -table_depth_m
    cam.add_object(table_object(table2world, np.random.default_rng(seed + 7919)))
    cam.add_object(board_object(board_name, board, np.eye(4), plate_albedo=plate_albedo))
    return cam
