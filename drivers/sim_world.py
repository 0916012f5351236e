"""The simulated world: arms, their eye-in-hand cameras and the targets, stepped in lockstep.

The world frame is the base frame of the robots (one arm on a table, as in the SIROM bench).
Targets are rigid bodies carrying a marker board; each camera renders every target, a table top
beneath them, and follows its arm (``cam2world`` is read from the arm at render time).

Docking physics: an arm with a latch carries the active interface as its tool behind a wrist
compliance. Whenever its TCP is near a target, the contact model of ``orbitree.skills.contact``
(REFERENCE.md B) gives the real pose of the tool and the wrench the wrist sensor reads: the
guide petals meeting the receptacle's chamfers, and, once the hooks close with the passive
interface within their reach, the hooks' pull (``hook_force`` × closure along the passive's
−z, into its face). The arm itself follows its commands exactly (its reported TCP pose is the
commanded one, as a UR reports it); only the tool and the sensor see the contact.

Ground truth (``target_pose``, the cameras' ``ground_truth_board2cam``, ``tool_pose``) is for
tests, reports and fault injection only; estimators see rendered images.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from orbitree.drivers.sim_camera import SimCamera, board_object, table_object
from orbitree.drivers.sim_latch import SimLatch
from orbitree.drivers.sim_robot import SimRobot
from orbitree.skills.board_model import BoardModel
from orbitree.skills.contact import ContactModel, solve_contact

CONTACT_RANGE_M = 0.12
"""Contact is solved while the TCP is within this distance of a target's origin."""
HOOK_REACH_M = (0.008, 0.012)
"""Hooks grip when the TCP is within (lateral, axial) of the docked pose, in the target frame."""


@dataclass
class Docking:
    """Contact state of one arm's tool: the model, the hook pull, the last real pose."""

    model: ContactModel
    hook_force: float = 60.0
    target: str | None = None
    real: np.ndarray | None = None  # tool pose (4, 4), base frame
    commanded: np.ndarray | None = None
    wrench: np.ndarray = field(default_factory=lambda: np.zeros(6))
    hooked: bool = False
    contacts: int = 0
    solve_s: float = 0.0
    solves: int = 0


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
    docking: dict[str, Docking] = field(default_factory=dict)  # by robot name
    peaks: dict[str, float] = field(default_factory=lambda: {"force_n": 0.0, "speed_mps": 0.0})
    workspace_box: tuple[np.ndarray, np.ndarray] | None = None
    """Ground-truth peaks for reports: contact force on the tool, TCP speed, distance out of
    ``workspace_box`` (set by the executive from the mission's ``safety.workspace``)."""

    def add_robot(
        self, robot: SimRobot, camera: SimCamera | None = None, latch: SimLatch | None = None,
        contact: ContactModel | None = None, hook_force: float = 60.0,
    ) -> None:
        self.robots[robot.name] = robot
        if latch is not None:
            self.latches[robot.name] = latch
        if contact is not None:
            dock = Docking(contact, hook_force)
            self.docking[robot.name] = dock
            robot.set_external_wrench(lambda t, tcp2base, twist, dock=dock: dock.wrench)
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
        for name, dock in self.docking.items():
            self._contact(name, dock)
            self.peaks["force_n"] = max(self.peaks["force_n"], float(np.linalg.norm(dock.wrench[:3])))
        for robot in self.robots.values():
            state = robot.read_truth() if hasattr(robot, "read_truth") else None
            twist, xyz = (state if state is not None else (None, None))
            if twist is not None:
                self.peaks["speed_mps"] = max(self.peaks["speed_mps"], float(np.linalg.norm(twist[:3])))
            if xyz is not None and self.workspace_box is not None:
                low, high = self.workspace_box
                out = float(np.max(np.maximum(low - xyz, xyz - high)))
                self.peaks["workspace_exit_m"] = max(self.peaks.get("workspace_exit_m", 0.0), out)
        self.time += dt
        for camera in self.cameras.values():
            camera.step(self.time)

    def _contact(self, name: str, dock: Docking) -> None:
        commanded = self.robots[name].tcp2base()
        target = dock.target
        if target is None:
            near = [(np.linalg.norm(pose[:3, 3] - commanded[:3, 3]), t) for t, pose in self.targets.items()]
            close = [t for d, t in sorted(near) if d < CONTACT_RANGE_M]
            target = close[0] if close else None
        if target is None or np.linalg.norm(self.targets[target][:3, 3] - commanded[:3, 3]) > CONTACT_RANGE_M:
            dock.target, dock.real, dock.commanded, dock.hooked = None, None, None, False
            dock.wrench = np.zeros(6)
            dock.contacts = 0
            return
        board2world = self.targets[target]
        real = commanded if dock.real is None else dock.real
        load = None
        latch = self.latches.get(name)
        tool2board = np.linalg.solve(board2world, real)
        lateral, axial = HOOK_REACH_M
        dock.hooked = bool(
            latch is not None and latch.closure > 0.0
            and np.hypot(tool2board[0, 3], tool2board[1, 3]) < lateral and tool2board[2, 3] < axial
        )
        if dock.hooked:
            pull = -board2world[:3, 2] * dock.hook_force * latch.closure
            load = np.concatenate([commanded[:3, :3].T @ pull, np.zeros(3)])
        started = time.perf_counter()
        result = solve_contact(dock.model, commanded, board2world, real, dock.commanded, load=load)
        dock.solve_s += time.perf_counter() - started
        dock.solves += 1
        dock.target, dock.real, dock.commanded = target, result.real_tcp2base, commanded
        dock.wrench, dock.contacts = result.wrench_tcp, result.n_active

    def tcp_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) tcp2world of arm ``name`` (where the arm puts its TCP)."""
        return self.robots[name].tcp2base()

    def tool_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) tool2world of arm ``name`` (differs from its TCP in contact)."""
        dock = self.docking.get(name)
        if dock is not None and dock.real is not None:
            return dock.real.copy()
        return self.robots[name].tcp2base()

    def target_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) board2world of target ``name``."""
        return self.targets[name].copy()

    def move_target(self, name: str, board2world: np.ndarray) -> None:
        """Put target ``name`` somewhere else (tests, and the target_bumped fault)."""
        old = self.targets[name]
        self.targets[name] = np.array(board2world, dtype=float)
        carry = self.targets[name] @ np.linalg.inv(old)
        for dock in self.docking.values():
            if dock.target == name and dock.real is not None:
                # the tool moves with the target this step (no interpenetration); the compliance
                # then pulls it back toward the arm, through the contact model, from there on
                dock.real = carry @ dock.real
                dock.commanded = carry @ dock.commanded if dock.commanded is not None else None
