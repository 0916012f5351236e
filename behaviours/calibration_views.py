"""``calibration_views``: move the arm through views of a ChArUco board and save them.

YAML::

    - calibration_views:
        robot: arm
        target: board              # a target with 'board: charuco' (its layout; its pose is not used)
        look_at: [0.66, 0.2, 0.0]  # the board's centre, roughly, in the base frame (m)
        views: 12
        distance: [300 mm, 420 mm] # camera to look_at, cycled over the views
        tilt: [15 deg, 35 deg]     # line of sight from the board's normal (base +z), cycled
        roll: 35 deg               # turn about the line of sight, alternating sign (hand-eye needs it)
        dir: calibration/images    # written: view_00.png, ..., poses.yaml (relative: the working directory)
        settle: 300 ms             # after the arm stops, before the picture

The views look at ``look_at`` from a cone around the base's +z (a board face up on a table):
view ``i`` from azimuth ``360° i / views``, the distance and tilt cycling through their ranges.
Each camera pose becomes a TCP pose through the arm's camera mount (the nominal one: a wrong
mount only moves the views a little) and a joint solution from the previous view's (numerical
IK on the controller's kinematics); views without one are skipped. At each view the arm moves
there (``move_j``) and rests for ``settle``; the first frame exposed after that is saved as a PNG
with the pose the arm reports (``/robot/<arm>/tcp_pose``). ``poses.yaml`` is the directory format
of ``orbitree calibrate camera`` (``orbitree.drivers.camera_views``). SUCCESS when every planned
view is saved (at least 4), FAILURE on a protective stop or with fewer than 4 views. Halting it
stops the arm.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import py_trees
from pydantic import Field
from scipy.spatial.transform import Rotation

from orbitree.drivers.camera_views import write_views
from orbitree.language.keys import robot_key
from orbitree.language.quantities import Angle, AngularSpeed, Duration, Length
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills import kinematics as kin

Status = py_trees.common.Status


class CalibrationViewsParams(MotionParams):
    target: str = Field(description="the ChArUco board target (its layout goes into poses.yaml)")
    look_at: tuple[Length, Length, Length] = Field(description="the board's centre in the base frame")
    views: int = Field(12, ge=4, le=100, description="views to plan")
    distance: tuple[Length, Length] = Field((0.30, 0.42), description="camera to look_at, range")
    tilt: tuple[Angle, Angle] = Field((np.radians(15.0), np.radians(35.0)), description="off the normal, range")
    roll: Angle = Field(np.radians(35.0), ge=0.0, description="turn about the line of sight, alternating")
    dir: str = Field(description="directory the images and poses.yaml are written to")
    settle: Duration = Field(0.3, ge=0.0, description="rest before the picture")
    speed: AngularSpeed = Field(1.0, gt=0.0, description="joint speed of the moves")


def look_at_pose(eye: np.ndarray, centre: np.ndarray, roll: float) -> np.ndarray:
    """cam2base (4, 4) at ``eye`` with its z axis through ``centre``, turned ``roll`` about it
    (x horizontal at roll 0)."""
    z = centre - eye
    z /= np.linalg.norm(z)
    x = np.cross([0.0, 0.0, 1.0], z)
    x = x / np.linalg.norm(x) if np.linalg.norm(x) > 1e-9 else np.array([1.0, 0.0, 0.0])
    pose = np.eye(4)
    pose[:3, :3] = np.column_stack([x, np.cross(z, x), z]) @ Rotation.from_rotvec([0.0, 0.0, roll]).as_matrix()
    pose[:3, 3] = eye
    return pose


def plan_views(params: CalibrationViewsParams) -> list[np.ndarray]:
    """The camera poses (cam2base) of the views."""
    centre = np.array(params.look_at)
    poses = []
    for i in range(params.views):
        azimuth = 2.0 * np.pi * i / params.views
        tilt = params.tilt[0] + (params.tilt[1] - params.tilt[0]) * (i % 3) / 2.0
        distance = params.distance[0] + (params.distance[1] - params.distance[0]) * ((i * 2) % 5) / 4.0
        direction = np.array([np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), np.cos(tilt)])
        roll = params.roll * (1.0 if i % 2 else -1.0) * (0.5 + 0.5 * ((i // 2) % 2))
        poses.append(look_at_pose(centre + distance * direction, centre, roll))
    return poses


class CalibrationViews(MotionLeaf):
    kind = "calibration_views"
    Params = CalibrationViewsParams
    params: CalibrationViewsParams

    @classmethod
    def reads(cls, params: CalibrationViewsParams) -> list[str]:
        return [robot_key(params.robot, k) for k in ("image", "tcp_pose", "q", "protective_stop")]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        if self.device.camera is None or self.device.cam2tcp is None:
            raise RuntimeError(f"calibration_views: robot {self.params.robot!r} has no camera")
        target = self.ctx.targets.get(self.params.target)
        if target is None or target.board != "charuco":
            raise RuntimeError(f"calibration_views: target {self.params.target!r} is not a ChArUco board")
        self.board = target.charuco.spec()
        self.table = getattr(self.device.driver, "table", kin.UR10E)
        self.tool = self.device.spec.tool.matrix()

    def start(self) -> Status:
        self.directory = Path(self.params.dir)
        self.directory.mkdir(parents=True, exist_ok=True)
        q = np.array(self.read(self.robot_key("q")), dtype=float)
        self.plan: list[np.ndarray] = []
        for cam2base in plan_views(self.params):
            goal = cam2base @ np.linalg.inv(self.device.cam2tcp)
            solution, ok = kin.inverse_kinematics(self.table, goal, q, self.tool, tolerance=1e-7,
                                                  max_iterations=200)
            if ok and np.abs(solution).max() < 2 * np.pi:
                self.plan.append(solution)
                q = solution
        if len(self.plan) < 4:
            self.feedback_message = f"only {len(self.plan)} of {self.params.views} views reachable"
            return Status.FAILURE
        self.images: list[str] = []
        self.poses: list[np.ndarray] = []
        self.index = 0
        self._go()
        return Status.RUNNING

    def _go(self) -> None:
        self.rested_at: float | None = None
        self.move_j(self.plan[self.index], self.params.speed, 1.0)
        self.feedback_message = f"to view {self.index + 1} of {len(self.plan)}"

    def running(self) -> Status:
        if self.read(self.robot_key("protective_stop")):
            self.feedback_message = "protective stop"
            return Status.FAILURE
        if not self.arrived():
            return Status.RUNNING
        if self.rested_at is None:
            self.rested_at = self.ctx.now
        frame = self.read(self.robot_key("image"))
        exposed_after = self.rested_at + self.params.settle
        if frame is None or frame.stamp < exposed_after or self.ctx.now < exposed_after:
            return Status.RUNNING
        name = f"view_{self.index:02d}.png"
        cv2.imwrite(str(self.directory / name), frame.image)
        self.images.append(name)
        self.poses.append(np.array(self.read(self.robot_key("tcp_pose")), dtype=float))
        self.index += 1
        if self.index < len(self.plan):
            self._go()
            return Status.RUNNING
        write_views(self.directory, self.board, self.images, self.poses)
        self.feedback_message = f"{len(self.images)} views in {self.directory}"
        return Status.SUCCESS
