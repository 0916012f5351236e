"""``calibrate_camera``: intrinsics and hand-eye mount from a directory of views; write the file.

YAML::

    - calibrate_camera:
        robot: arm
        dir: calibration/images        # written by calibration_views (or by hand: see README)
        output: calibration/camera.yaml
        method: auto                   # auto, TSAI, PARK, HORAUD, ANDREFF or DANIILIDIS

Detects the ChArUco corners of one image per tick (OpenCV's ``CharucoDetector``), then
calibrates the intrinsics (``cv2.calibrateCamera``, starting from the camera's current ones) and
solves the hand-eye mount by every OpenCV method (``cv2.calibrateHandEye``), keeping ``method``'s
(``auto``: the one whose views place the board most consistently). Writes ``output`` (OpenCV
FileStorage: ``camera_matrix``, ``distortion_coefficients``, ``image_width``, ``image_height``,
``cam2tcp``), the file ``camera.calibration`` and ``camera.mount`` read. The run summary gets
``camera_calibration``: the intrinsics, the reprojection error and each method's mount with its
spread; in simulation also each method's error against the camera as built (ground truth, for
the report only). SUCCESS when the file is written; FAILURE with fewer than 4 usable views.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import py_trees
from pydantic import Field

from orbitree.drivers.calibration_io import CalibrationFileError
from orbitree.drivers.camera_views import calibrate_views, detect_image, read_views
from orbitree.language.params import NodeParams
from orbitree.nodes.leaf import Leaf
from orbitree.skills.charuco import HAND_EYE_METHODS, pose_difference

Status = py_trees.common.Status


class CalibrateCameraParams(NodeParams):
    robot: str = Field(description="the arm carrying the camera")
    dir: str = Field(description="directory of views (images and poses.yaml)")
    output: str = Field(description="calibration file to write (relative: the working directory)")
    method: str = Field("auto", pattern="^(auto|" + "|".join(HAND_EYE_METHODS) + ")$",
                        description="hand-eye method kept: auto (smallest spread) or one of OpenCV's")


class CalibrateCamera(Leaf):
    kind = "calibrate_camera"
    Params = CalibrateCameraParams
    params: CalibrateCameraParams

    def setup(self, **kwargs: object) -> None:
        self.device = self.ctx.drivers[self.params.robot]
        if self.device.camera is None:
            raise RuntimeError(f"calibrate_camera: robot {self.params.robot!r} has no camera")

    def initialise(self) -> None:
        self.views = None
        self.detections: list = []
        self.size: tuple[int, int] | None = None

    def update(self) -> Status:
        try:
            if self.views is None:
                self.views = read_views(self.params.dir)
                return Status.RUNNING
            if len(self.detections) < len(self.views.images):
                detection, self.size = detect_image(self.views.images[len(self.detections)], self.views.board)
                self.detections.append(detection)
                self.feedback_message = f"detected {len(detection)} corners in view {len(self.detections)}"
                return Status.RUNNING
        except CalibrationFileError as exc:
            self.feedback_message = str(exc)
            return Status.FAILURE
        assert self.size is not None
        try:
            result = calibrate_views(self.detections, self.views.tcp2base, self.views.board, self.size,
                                     self.device.camera.intrinsics.camera_matrix, self.params.method)
        except ValueError as exc:
            self.feedback_message = str(exc)
            return Status.FAILURE
        result.write(self.params.output)
        self.ctx.summary["camera_calibration"] = self._summary(result)
        k = result.intrinsics.camera_matrix
        self.feedback_message = (f"fx {k[0, 0]:.1f} fy {k[1, 1]:.1f} px, {result.rms_px:.3f} px rms, hand-eye "
                                 f"{result.method}: {Path(self.params.output)}")
        return Status.SUCCESS

    def _summary(self, result) -> dict:
        k, dist = result.intrinsics.camera_matrix, result.intrinsics.dist_coeffs
        out = {"file": self.params.output, "views_used": result.views_used, "views": result.views_total,
               "rms_px": round(result.rms_px, 4), "fx": round(k[0, 0], 3), "fy": round(k[1, 1], 3),
               "cx": round(k[0, 2], 3), "cy": round(k[1, 2], 3), "k1": round(float(dist[0]), 5),
               "method": result.method,
               "spread": {m: {"mm": round(s[0] * 1e3, 4), "deg": round(s[1], 5)}
                          for m, s in result.spreads.items()}}
        world = self.ctx.world
        camera = None if world is None else world.cameras.get(self.params.robot)
        if camera is not None:  # ground truth, for the report
            lens, mount = camera.lens, camera.cam2tool if camera.cam2tool is not None else self.device.cam2tcp
            t = lens.camera_matrix
            out["truth"] = {"fx": round(t[0, 0], 3), "fy": round(t[1, 1], 3), "cx": round(t[0, 2], 3),
                            "cy": round(t[1, 2], 3), "k1": round(float(lens.dist_coeffs[0]), 5)}
            errors = {}
            for name, cam2tcp in result.mounts.items():
                dt, dr = pose_difference(cam2tcp, mount)
                errors[name] = {"mm": round(dt * 1e3, 4), "deg": round(dr, 5)}
            out["mount_error"] = errors
            dt, dr = pose_difference(np.asarray(self.device.cam2tcp), mount)
            out["nominal_mount_error"] = {"mm": round(dt * 1e3, 4), "deg": round(dr, 5)}
        return out
