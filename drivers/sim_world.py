"""The simulated world: arms, their eye-in-hand cameras and the targets, stepped in lockstep.

The world frame is the base frame of the robots (one arm on a table, as in the SIROM bench).
Targets are rigid bodies carrying a marker board; each camera renders every target, a table top
beneath them, and follows its arm (``cam2world`` is read from the arm at render time).

Ground truth (``target_pose``, the cameras' ``ground_truth_board2cam``) is for tests, reports
and fault injection only; estimators see rendered images.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from orbitree.drivers.sim_camera import SimCamera, board_object, table_object
from orbitree.drivers.sim_latch import SimLatch
from orbitree.drivers.sim_robot import SimRobot
from orbitree.skills.board_model import BoardModel


@dataclass
class SimWorld:
    seed: int = 0
    time: float = 0.0
    robots: dict[str, SimRobot] = field(default_factory=dict)
    cameras: dict[str, SimCamera] = field(default_factory=dict)  # by robot name
    targets: dict[str, np.ndarray] = field(default_factory=dict)  # board2world
    boards: dict[str, BoardModel] = field(default_factory=dict)
    latches: dict[str, SimLatch] = field(default_factory=dict)  # by robot name
    table_height: float | None = None

    def add_robot(self, robot: SimRobot, camera: SimCamera | None = None, latch: SimLatch | None = None) -> None:
        self.robots[robot.name] = robot
        if latch is not None:
            self.latches[robot.name] = latch
        if camera is not None:
            camera.set_cam2world(robot.cam2base)
            camera.step(self.time)
            self.cameras[robot.name] = camera
            for name, board in self.boards.items():
                self._show(camera, name, board)

    def add_target(self, name: str, board: BoardModel, board2world: np.ndarray) -> None:
        self.boards[name] = board
        self.targets[name] = np.array(board2world, dtype=float)
        for camera in self.cameras.values():
            self._show(camera, name, board)

    def _show(self, camera: SimCamera, name: str, board: BoardModel) -> None:
        camera.add_object(board_object(name, board, lambda: self.targets[name]))
        if not any(obj.name == "table" for obj in camera.objects):
            # the module carrying the interface stands on a table 5 cm below the lowest target
            height = min(pose[2, 3] for pose in self.targets.values()) - 0.05
            table2world = np.eye(4)
            table2world[2, 3] = height
            rng = np.random.default_rng(self.seed)
            # the renderer paints objects in order, without a depth test: the table goes first
            camera.objects.insert(0, table_object(table2world, rng, size_m=3.0))

    # ---------------------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance every body by ``dt`` seconds of mission time."""
        for robot in self.robots.values():
            robot.step(dt)
        for latch in self.latches.values():
            latch.step(dt)
        self.time += dt
        for camera in self.cameras.values():
            camera.step(self.time)

    def target_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) board2world of target ``name``."""
        return self.targets[name].copy()

    def move_target(self, name: str, board2world: np.ndarray) -> None:
        """Put target ``name`` somewhere else (tests, and the target_bumped fault)."""
        self.targets[name] = np.array(board2world, dtype=float)
