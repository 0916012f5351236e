"""What the simulated camera paints, and from what: the painting half of :class:`~orbitree.drivers.
sim_camera.SimCamera`, as a base class of it.

:class:`ScenePainter` holds the steps a frame's image is made of, shared by the whole frame
(``SimCamera._render``) and by a region of it (:mod:`orbitree.drivers.sim_region`): an object's
patches painted through the lens (``_paint``), an object that moves with the camera painted from a
cached layer (``_paint_layer``, ``_layer``), the exposure's motion blur (``_motion_blur``,
``_blur_kernel``), the lens's ray table and projection (``_ray_table``, ``_project``); and the state
these read that a run may change between a frame's capture and its rendering (``_scene_state``,
``_put_state``: a frame rendered when read, :class:`~orbitree.drivers.lazy_frame.LazyFrame`).
It uses the camera's attributes (``objects``, ``occluders``, ``sensor``, ``intrinsics``,
``true_intrinsics``, ``lens``, ``background_albedo``) and its caches (``_centres``, ``_layers``,
``_rays``, ``_rays_for``, ``last_blur_px``), which ``SimCamera.__init__`` makes.
"""

from __future__ import annotations

import operator

import cv2
import numpy as np

from orbitree.drivers.sim_project import project_points
from orbitree.drivers.sim_project import warm_up as warm_projection
from orbitree.drivers.sim_region import Window
from orbitree.drivers.sim_render import RayTable, draw_patches, plan_patches, premultiplied, ray_table
from orbitree.drivers.sim_scene import SceneObject
from orbitree.drivers.sim_sensor import line_kernel

__all__ = ["LAYER_POSE_TOL", "ScenePainter"]

LAYER_POSE_TOL = 1e-9  # m, and rad: an on-camera object's cached layer holds within this


class ScenePainter:
    """The painting steps of :class:`~orbitree.drivers.sim_camera.SimCamera` (see the module)."""

    def _scene_state(self) -> tuple:
        """What a render reads of the camera that a run may change between a frame's capture and
        its rendering: lenses, sensor, background, occluders, objects and their hidden markers."""
        return (self.intrinsics, self.true_intrinsics, self.sensor, self.background_albedo,
                tuple(self.occluders), tuple(self.objects),
                tuple(frozenset(obj.hidden_marker_ids) for obj in self.objects))

    def _put_state(self, state: tuple) -> tuple | None:
        """Make ``state`` (``_scene_state``) the camera's; the state it replaced, or None when it
        was the same."""
        now = self._scene_state()
        if _same_state(now, state):
            return None
        (self.intrinsics, self.true_intrinsics, self.sensor, self.background_albedo, occluders, objects,
         hidden) = state
        self.occluders, self.objects = list(occluders), list(objects)
        for obj, ids in zip(self.objects, hidden, strict=True):
            obj.hidden_marker_ids = set(ids)
        return now

    def _paint(self, canvas: np.ndarray, obj: SceneObject, world2cam: np.ndarray,
               body2world: np.ndarray | None = None, window: Window | None = None) -> None:
        size = canvas.shape if window is None else (window[3], window[2])
        draw_patches(canvas, self._plan(obj, world2cam, body2world, size), window)

    @staticmethod
    def _draw_plan(canvas: np.ndarray, plan: list[tuple], window: Window | None = None) -> None:
        """A ``_plan`` drawn over ``canvas`` (at ``window``, as ``_paint``)."""
        draw_patches(canvas, plan, window)

    def _plan(self, obj: SceneObject, world2cam: np.ndarray, body2world: np.ndarray | None,
              size: tuple[int, int]) -> list[tuple]:
        """What ``_paint`` draws of ``obj`` in an image of ``size`` (h, w), whatever part of it is
        drawn (``sim_render.plan_patches``): made once for all the windows of a region render."""
        body2cam = world2cam @ (obj.pose() if body2world is None else body2world)
        patches = obj.patches
        if obj.sort_patches:  # painter's order: farthest patch centre first
            centres = self._centres.get(id(obj))
            if centres is None or len(centres) != len(patches):
                centres = self._centres[id(obj)] = np.array([p.centre_body() for p in patches])
            eye = np.linalg.inv(body2cam)[:3, 3]
            patches = [patches[k] for k in np.argsort(-np.linalg.norm(centres - eye, axis=1))]
        if obj.hidden_marker_ids:
            patches = [patch.with_levels(  # an occluder instead of the marker
                (premultiplied(np.full(patch.levels[0].shape[:2], obj.occluder_albedo)),))
                if patch.marker_id is not None and patch.marker_id in obj.hidden_marker_ids else patch
                for patch in patches]
        return plan_patches(patches, body2cam, self._ray_table(), self._project, size)

    def _paint_layer(self, canvas: np.ndarray, obj: SceneObject, world2cam: np.ndarray,
                     body2world: np.ndarray | None = None) -> None:
        """``_paint`` of an object that keeps its place in the image (``on_camera``), through a
        cached layer. Painting an object maps every pixel's albedo affinely, ``c -> c * T + P``
        (each patch composites ``c * (1 - alpha) + albedo * alpha`` or replaces ``c``), so one
        paint on zeros (``P``) and one on ones (``T + P``) give the object's transmission and
        premultiplied albedo over the box it touches, reused while its pose in the camera frame
        stays within ``LAYER_POSE_TOL`` (1e-9: the rounding of the tool-to-camera product) and
        its patches, hidden markers and the lens do not change. A frame then costs two passes
        over that box instead of the faces' fill (the arm's tool: 2.2 ms a frame)."""
        box, planes = self._layer(canvas.shape, obj, world2cam, body2world)
        if box is not None:
            roi = canvas[box]
            roi *= planes[0]
            roi += planes[1]

    def _layer(self, shape: tuple[int, int], obj: SceneObject, world2cam: np.ndarray,
               body2world: np.ndarray | None = None) -> tuple[tuple[slice, slice] | None, tuple | None]:
        """The cached layer of ``_paint_layer`` for an image of ``shape``: the box it touches
        (None: none) and its transmission and premultiplied albedo over that box."""
        body2cam = world2cam @ (obj.pose() if body2world is None else body2world)
        key = (shape, self._ray_table(), tuple(map(id, obj.patches)), tuple(sorted(obj.hidden_marker_ids)))
        cached = self._layers.get(id(obj))
        if (cached is None or cached[0] is not obj or cached[1] != key
                or not float(np.abs(cached[2] - body2cam).max()) <= LAYER_POSE_TOL):  # allclose, cheaper
            premultiplied_, transmitted = np.zeros(shape, np.float32), np.ones(shape, np.float32)
            self._paint(premultiplied_, obj, world2cam, body2world)
            self._paint(transmitted, obj, world2cam, body2world)
            transmitted -= premultiplied_
            touched = (premultiplied_ != 0.0) | (transmitted != 1.0)
            rows, cols = np.flatnonzero(touched.any(axis=1)), np.flatnonzero(touched.any(axis=0))
            box = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)) if len(rows) else None
            planes = None if box is None else (transmitted[box].copy(), premultiplied_[box].copy())
            cached = self._layers[id(obj)] = (obj, key, body2cam, box, planes)
        return cached[3], cached[4]

    def _motion_blur(self, canvas: np.ndarray, motion: tuple[np.ndarray, np.ndarray],
                     object_poses: dict[int, np.ndarray]) -> np.ndarray:
        """Smear ``canvas`` along the image motion, over the exposure, of the first target in
        front of the camera (its origin), or of the point 1 m along the optical axis."""
        kernel = self._blur_kernel(motion, object_poses)
        if kernel is None:
            return canvas
        return cv2.filter2D(canvas, -1, kernel, borderType=cv2.BORDER_REPLICATE)

    def _blur_kernel(self, motion: tuple[np.ndarray, np.ndarray] | None,
                     object_poses: dict[int, np.ndarray]) -> np.ndarray | None:
        """The motion blur's line kernel (``_motion_blur``; None: no blur), its length noted."""
        self.last_blur_px = 0.0
        if motion is None:
            return None
        start, end = motion
        point = end[:3, :3] @ np.array([0.0, 0.0, 1.0]) + end[:3, 3]
        end_inv = np.linalg.inv(end)
        for obj in sorted(self.objects, key=lambda o: o.layer, reverse=True):
            if obj.board is not None:
                pose = object_poses.get(id(obj))
                origin = (obj.pose() if pose is None else pose)[:3, 3]
                if (end_inv @ np.append(origin, 1.0))[2] > 0.05:
                    point = origin
                    break
        point_h = np.append(point, 1.0)
        # both ends projected at once (projectPoints maps each point alone)
        pixels = self._project(np.stack([(np.linalg.inv(start) @ point_h)[:3], (end_inv @ point_h)[:3]]))
        shift = pixels[1] - pixels[0]
        length = float(np.linalg.norm(shift))
        self.last_blur_px = length
        if length < 0.25 or not np.isfinite(length):
            return None
        return line_kernel(shift)

    def _ray_table(self) -> RayTable:
        """Per-pixel rays of the lens, rebuilt when the intrinsics are replaced (and the compiled
        projection of ``_project`` loaded, outside any frame)."""
        intr = self.lens
        if self._rays is None or self._rays_for is not intr:
            self._rays = ray_table(intr.camera_matrix, intr.dist_coeffs, intr.width, intr.height)
            self._rays_for = intr
            warm_projection()
        return self._rays

    def _project(self, points_cam: np.ndarray) -> np.ndarray:
        """(N, 3) camera-frame points to (N, 2) distorted pixels (through the true lens):
        ``cv2.projectPoints``'s, compiled (``sim_project``)."""
        intr = self.lens
        return project_points(points_cam, intr.camera_matrix, intr.dist_coeffs)


def _same_state(a: tuple, b: tuple) -> bool:
    """Two ``_scene_state`` tuples hold the same state: the same lens, occluder and object objects
    (by identity: they hold arrays, which do not compare to one truth value), equal sensor models,
    backgrounds and hidden markers."""
    (lens_a, true_a, sensor_a, background_a, occluders_a, objects_a, hidden_a) = a
    (lens_b, true_b, sensor_b, background_b, occluders_b, objects_b, hidden_b) = b
    return (lens_a is lens_b and true_a is true_b and sensor_a == sensor_b and background_a == background_b
            and len(occluders_a) == len(occluders_b) and all(map(operator.is_, occluders_a, occluders_b))
            and len(objects_a) == len(objects_b) and all(map(operator.is_, objects_a, objects_b))
            and hidden_a == hidden_b)
