"""The simulated world: arms, their eye-in-hand cameras and the targets, stepped in lockstep.

The world frame is the base frame of the robots (one arm on a table, as in the SIROM bench).
Targets are rigid bodies carrying a marker board (on the passive interface's face when
``add_target`` is given its ``body``); each camera renders every target, a table top beneath
them, and the tool it rides on: its pose is the real tool pose (``tool_pose``: deflected in
contact) times its real mount (``SimCamera.cam2tool``, default the arm's nominal mount), read
at render time, and an arm with a contact model has its active interface drawn there, so the
tool hides what it hides.

Docking physics: an arm with a latch carries the active interface as its tool. Whenever its
TCP is near a target, the contact model of ``orbitree.skills.contact`` (the compliant-motion
model of Suárez, Basañez and Colomé, [Suárez] in the README's Sources, with the stiffness of the
arm's structure and the interfaces in place of a wrist spring, and Coulomb friction) gives the
real pose of the tool and the wrench the wrist sensor reads: the guide petals meeting the
receptacle's chamfers and walls, and the hooks' pull once they hold the passive interface
(``orbitree.drivers.sim_latch``: the hooks engage only with the passive within their reach,
their pull follows their stroke, and their motors stall at their most). The arm itself follows
its commands (its reported TCP pose is its controller's nominal-kinematics one, as a UR reports
it); only the tool and the sensor see the contact.

A bumped target (the ``target_bumped`` fault, ``push_target``) is pushed, not teleported: it
moves along the offset at a finite speed, and near a tool in steps of 0.2 mm, each checked
against the contact model; a step that the tool resists along its motion with more than the
push's ``force`` is halved, down to nothing, so an engaged tool holds the target back and the
wrist carries what the push forces through (a step displacement of an engaged target would
load the arm's structure by its whole length in one tick).

Ground truth (``target_pose``, the cameras' ``ground_truth_board2cam``, ``tool_pose``) is for
tests, reports and fault injection only; estimators see rendered images.

The records of the contacts (:class:`Docking`, :class:`Push`, :class:`PadContact`) are in
:mod:`orbitree.drivers.sim_world_records`, re-exported here.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.sim_camera import SimCamera, board_object, solid_object, table_object
from orbitree.drivers.sim_latch import Passive, SimLatch
from orbitree.drivers.sim_robot import SimRobot
from orbitree.drivers.sim_satellite import Fixture, SatelliteBody
from orbitree.drivers.sim_world_records import Docking, PadContact, Push
from orbitree.skills.board_model import BoardModel
from orbitree.skills.contact import ContactModel, HookPull, clear_motion, solve_contact
from orbitree.skills.pose_solve import solve_poses
from orbitree.skills.satellite import pad_contact_force, tether_force

__all__ = ["CONTACT_RANGE_M", "PUSH_STEP_M", "Docking", "PadContact", "Push", "SimWorld"]

CONTACT_RANGE_M = 0.12
"""Contact is solved while the TCP is within this distance of a target's origin."""
PUSH_STEP_M = 2e-4
"""A pushed target near a tool advances at most this far per contact solve."""


def _norm(vector: np.ndarray) -> float:
    """``np.linalg.norm`` of a 1-D float array, without its generality (hot path; same bits)."""
    return math.sqrt(vector.dot(vector))


@dataclass
class SimWorld:
    seed: int = 0
    time: float = 0.0
    robots: dict[str, SimRobot] = field(default_factory=dict)
    cameras: dict[str, SimCamera] = field(default_factory=dict)  # by robot name
    targets: dict[str, np.ndarray] = field(default_factory=dict)  # board2world
    boards: dict[str, BoardModel] = field(default_factory=dict)
    target_bodies: dict[str, Any] = field(default_factory=dict)  # convex pieces the boards lie on
    fixtures: dict[str, Any] = field(default_factory=dict)  # scene objects of targets without a marker board
    latches: dict[str, SimLatch] = field(default_factory=dict)  # by robot name
    table_height: float | None = None
    docking: dict[str, Docking] = field(default_factory=dict)  # by robot name
    peaks: dict[str, float] = field(default_factory=lambda: {"force_n": 0.0, "speed_mps": 0.0})
    workspace_box: tuple[np.ndarray, np.ndarray] | None = None
    pushes: list[Push] = field(default_factory=list)
    pushed: list[dict[str, object]] = field(default_factory=list)  # records of finished pushes
    bases: dict[str, np.ndarray] = field(default_factory=dict)  # base2world by robot name (absent: identity)
    satellites: dict[str, SatelliteBody] = field(default_factory=dict)  # satellite targets (body2world)
    pads: dict[tuple[str, str, str], PadContact] = field(default_factory=dict)  # (robot, target, fixture)
    pad_wrench: dict[str, np.ndarray] = field(default_factory=dict)  # on each tool from the pads, TCP frame
    orbit: Any = None  # orbitree.drivers.sim_orbit.OrbitModel, or None
    """Ground-truth peaks for reports: contact force on the tool, TCP speed, distance out of
    ``workspace_box`` (set by the executive from the mission's ``safety.workspace``)."""

    def add_robot(
        self, robot: SimRobot, camera: SimCamera | None = None, latch: SimLatch | None = None,
        contact: ContactModel | None = None, base2world: np.ndarray | None = None,
    ) -> None:
        """``base2world`` (4, 4): where the arm's base stands in the world (None: at its origin)."""
        self.robots[robot.name] = robot
        if base2world is not None and not np.allclose(base2world, np.eye(4)):
            self.bases[robot.name] = np.array(base2world, dtype=float)
        self.pad_wrench[robot.name] = np.zeros(6)
        if latch is not None:
            self.latches[robot.name] = latch
        if contact is not None:
            dock = Docking(contact)
            self.docking[robot.name] = dock
            robot.set_external_wrench(lambda t, tcp2base, twist, dock=dock, name=robot.name:
                                      dock.wrench + self.pad_wrench[name])
        else:
            robot.set_external_wrench(lambda t, tcp2base, twist, name=robot.name: self.pad_wrench[name])
        if camera is not None:
            # the camera rides on the tool: the real (deflected) tool pose times the real mount
            mount = robot.cam2tcp if camera.cam2tool is None else camera.cam2tool
            camera.set_cam2world(lambda name=robot.name: self.tool_pose(name) @ mount)
            tool = self.docking.get(robot.name)
            if tool is not None:  # the active interface where it really is
                camera.add_object(solid_object(f"{robot.name} tool", tool.model.active.pieces,
                                               lambda name=robot.name: self.tool_pose(name), on_camera=True))
            camera.step(self.time)
            self.cameras[robot.name] = camera
            for name, board in self.boards.items():
                self._show(camera, name, board)
            for fixture in self.fixtures.values():
                self._show_fixture(camera, fixture)

    def add_target(self, name: str, board: BoardModel, board2world: np.ndarray, body: Any = None) -> None:
        """``body``: convex pieces (board frame) of the solid whose face (z = 0) carries the
        board, drawn under it; None: a flat disc plate."""
        self.boards[name] = board
        if body is not None:
            self.target_bodies[name] = body
        self.targets[name] = np.array(board2world, dtype=float)
        for camera in self.cameras.values():
            self._show(camera, name, board)

    def add_fixture(self, name: str, make: Any, board2world: np.ndarray) -> None:
        """A target that is not docked with (a calibration board): ``make(pose_source)`` builds its
        scene object; no contact model ever touches it."""
        self.targets[name] = np.array(board2world, dtype=float)
        self.fixtures[name] = make(lambda: self.targets[name])
        for camera in self.cameras.values():
            self._show_fixture(camera, self.fixtures[name])

    def _show_fixture(self, camera: SimCamera, fixture: Any) -> None:
        camera.add_object(fixture)
        self._add_table(camera)

    def _show(self, camera: SimCamera, name: str, board: BoardModel) -> None:
        camera.add_object(board_object(name, board, lambda: self.targets[name], body=self.target_bodies.get(name)))
        self._add_table(camera)

    def _add_table(self, camera: SimCamera) -> None:
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
        for name, latch in self.latches.items():
            latch.step(dt, self._passive(name))
        for push in list(self.pushes):
            self._advance(push, dt)
        for name, dock in self.docking.items():
            self._contact(name, dock)
            self.peaks["force_n"] = max(self.peaks["force_n"], _norm(dock.wrench[:3]))
        if self.satellites:
            self._step_satellites(dt)
        for robot in self.robots.values():
            state = robot.read_truth() if hasattr(robot, "read_truth") else None
            twist, xyz = (state if state is not None else (None, None))
            if twist is not None:
                self.peaks["speed_mps"] = max(self.peaks["speed_mps"], _norm(twist[:3]))
            if xyz is not None and self.workspace_box is not None:
                # how far outside the box: numpy's subtractions and maximum, on floats (a NaN
                # position gives NaN, as numpy's maximum makes it)
                low, high = self.workspace_box
                (x0, y0, z0), (x1, y1, z1) = np.asarray(low, float).tolist(), np.asarray(high, float).tolist()
                x, y, z = xyz.tolist()
                out = max(x0 - x, y0 - y, z0 - z, x - x1, y - y1, z - z1) if x == x and y == y and z == z \
                    else math.nan
                self.peaks["workspace_exit_m"] = max(self.peaks.get("workspace_exit_m", 0.0), out)
        self.time += dt
        for camera in self.cameras.values():
            camera.step(self.time)

    def _contact(self, name: str, dock: Docking) -> None:
        commanded = self.tcp_pose(name)
        target = dock.target
        if target is None:
            near = [(_norm(pose[:3, 3] - commanded[:3, 3]), t) for t, pose in self.targets.items()
                    if t not in self.fixtures]
            close = [t for d, t in sorted(near) if d < CONTACT_RANGE_M]
            target = close[0] if close else None
        if target is None or _norm(self.targets[target][:3, 3] - commanded[:3, 3]) > CONTACT_RANGE_M:
            dock.target, dock.real, dock.commanded, dock.hook_tension = None, None, None, 0.0
            dock.wrench = np.zeros(6)
            dock.contacts = 0
            return
        board2world = self.targets[target]
        real = commanded if dock.real is None else dock.real
        latch = self.latches.get(name)
        depth = None if latch is None else latch.depth()
        hook = None if depth is None else HookPull(depth, latch.hooks.stiffness)
        if hook is None and clear_motion(dock.model, commanded, board2world, real, dock.commanded):
            # no contact on the way (solve_contact would return the commanded pose, no wrench)
            dock.target, dock.real, dock.commanded = target, commanded.copy(), commanded
            dock.wrench, dock.contacts, dock.hook_tension = np.zeros(6), 0, 0.0
            return
        started = time.perf_counter()
        # the poses are the world's own (its kinematics' and the last solve's): not checked again
        result = solve_contact(dock.model, commanded, board2world, real, dock.commanded, hook=hook, trusted=True)
        dock.solve_s += time.perf_counter() - started
        dock.solves += 1
        dock.target, dock.real, dock.commanded = target, result.real_tcp2base, commanded
        dock.wrench, dock.contacts, dock.hook_tension = result.wrench_tcp, result.n_active, result.hook_tension

    def _passive(self, name: str) -> Passive | bool | None:
        """What arm ``name``'s hooks meet (see ``SimLatch.step``): False without a contact model."""
        dock = self.docking.get(name)
        if dock is None:
            return False
        if dock.target is None or dock.real is None:
            return None
        tool2board = solve_poses(self.targets[dock.target], dock.real)
        return Passive(float(tool2board[2, 3]), float(np.hypot(tool2board[0, 3], tool2board[1, 3])),
                       dock.hook_tension)

    def tcp_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) tcp2world of arm ``name`` (where the arm puts its TCP)."""
        base = self.bases.get(name)
        tcp2base = self.robots[name].tcp2base()
        return tcp2base if base is None else base @ tcp2base

    def base_pose(self, name: str) -> np.ndarray:
        """(4, 4) base2world of arm ``name``."""
        return self.bases.get(name, np.eye(4)).copy()

    def tool_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) tool2world of arm ``name`` (differs from its TCP in contact)."""
        dock = self.docking.get(name)
        if dock is not None and dock.real is not None:
            return dock.real.copy()
        return self.tcp_pose(name)

    def target_pose(self, name: str) -> np.ndarray:
        """Ground truth (4, 4) board2world of target ``name`` (a satellite's: body2world)."""
        if name in self.satellites:
            return self.satellites[name].pose()
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

    # -- bumps -------------------------------------------------------------------------------
    def push_target(
        self, name: str, offset: np.ndarray, speed: float = 0.1, angular_speed: float = np.radians(20.0),
        force: float = 50.0,
    ) -> Push:
        """Start pushing target ``name`` by ``offset`` ((4, 4), its own frame), moving at
        ``speed`` [m/s] / ``angular_speed`` [rad/s], with at most ``force`` [N] (see :class:`Push`).
        A push already under way on that target ends where it is."""
        for push in [p for p in self.pushes if p.target == name]:
            self._finish(push)
        rotvec = Rotation.from_matrix(offset[:3, :3]).as_rotvec()
        xyz = np.array(offset[:3, 3], dtype=float)
        duration = max(float(np.linalg.norm(xyz)) / speed, float(np.linalg.norm(rotvec)) / angular_speed)
        push = Push(name, self.targets[name].copy(), xyz, rotvec, duration, force, self.time)
        self.pushes.append(push)
        return push

    def _advance(self, push: Push, dt: float) -> None:
        push.elapsed += dt
        wanted = 1.0 if push.elapsed >= push.duration else push.elapsed / push.duration
        if wanted > push.progress:
            # near a tool, in pieces of at most PUSH_STEP_M (the contact follows the path: a
            # petal tip does not jump a chamfer's edge in one solve)
            span = (wanted - push.progress) * max(float(np.linalg.norm(push.xyz)),
                                                  0.1 * float(np.linalg.norm(push.rotvec)))
            pieces = int(np.ceil(span / PUSH_STEP_M)) if self._near(push.target) else 1
            for k in range(max(pieces, 1)):
                goal = push.progress + (wanted - push.progress) / (max(pieces, 1) - k)
                if not self._push_to(push, goal):
                    break
            if push.progress < wanted - 1e-9:
                push.held_s += dt
        if push.elapsed >= push.duration or push.progress >= 1.0 - 1e-12:
            self._finish(push)

    def _near(self, target: str) -> bool:
        where = self.targets[target][:3, 3]
        return any(np.linalg.norm(self.tcp_pose(name)[:3, 3] - where) < CONTACT_RANGE_M
                   for name in self.docking)

    def _push_to(self, push: Push, s: float) -> bool:
        """Advance the push to ``s``, or as far toward it as ``force`` goes (halving the step
        down to 1/16); True if it got there."""
        step = s - push.progress
        for fraction in (1.0, 0.5, 0.25, 0.125, 0.0625):
            saved = self._save(push.target)
            resistance = self._try(push, push.progress + fraction * step)
            if resistance <= push.force:
                push.progress += fraction * step
                push.peak_resistance_n = max(push.peak_resistance_n, resistance)
                return fraction == 1.0
            self._restore(push.target, saved)
        return False

    def _try(self, push: Push, s: float) -> float:
        """Move the target to ``s`` of the push; the contact's resistance along the motion [N]."""
        old = self.targets[push.target]
        self.move_target(push.target, push.pose(s))
        carry = self.targets[push.target] @ np.linalg.inv(old)
        resistance = 0.0
        for name, dock in self.docking.items():
            self._contact(name, dock)
            if dock.target != push.target or dock.commanded is None or dock.real is None:
                continue
            point = dock.real[:3, 3]
            motion = carry[:3, :3] @ point + carry[:3, 3] - point
            if np.linalg.norm(motion) < 1e-12:
                continue
            force_world = dock.commanded[:3, :3] @ dock.wrench[:3]  # on the tool, from the target
            resistance = max(resistance, float(force_world @ motion / np.linalg.norm(motion)))
        return resistance

    def _save(self, target: str) -> tuple[np.ndarray, dict[str, dict[str, object]]]:
        state = [f.name for f in fields(Docking) if f.name not in ("model", "solve_s", "solves")]
        docks = {n: {key: getattr(d, key) for key in state} for n, d in self.docking.items()}
        return self.targets[target], docks

    def _restore(self, target: str, saved: tuple[np.ndarray, dict[str, dict[str, object]]]) -> None:
        self.targets[target] = saved[0]
        for name, values in saved[1].items():
            for key, value in values.items():
                setattr(self.docking[name], key, value)

    def _finish(self, push: Push) -> None:
        if push in self.pushes:
            self.pushes.remove(push)
            self.pushed.append(push.record(self.time))

    # -- satellites ----------------------------------------------------------------------------
    def add_satellite(self, body: SatelliteBody) -> None:
        """A satellite target (``orbitree.drivers.sim_satellite``); every arm's tool meets its pads."""
        body.time = self.time
        self.satellites[body.name] = body

    def apply_wrench(self, target: str, force: np.ndarray, point: np.ndarray | None = None,
                     torque: np.ndarray | None = None) -> None:
        """Push satellite ``target`` during the next step: ``force`` (3,) N at ``point`` (3,) m and a
        pure ``torque`` (3,) N·m, world frame; wrenches accumulate until the step applies them."""
        self.satellites[target].apply_wrench(force, point, torque)

    def release_tool(self, robot: str) -> int:
        """Let go of every pad ``robot``'s tool holds (its Velcro is released, as the gripper
        opening on the seed's grappling tool would); returns how many it held."""
        released = 0
        for contact in self.pads.values():
            if contact.robot == robot and contact.anchor is not None:
                contact.anchor = None
                contact.events.append(("let_go", round(self.time, 6), 0.0))
                released += 1
        return released

    def pad_contact(self, robot: str, target: str, fixture: str) -> PadContact | None:
        """The contact of ``robot``'s tool with a pad (None until the tool first comes near it)."""
        return self.pads.get((robot, target, fixture))

    def _tool_velocity(self, name: str) -> np.ndarray:
        """The TCP's true linear velocity (3,) m/s, world."""
        twist, _ = self.robots[name].read_truth()
        base = self.bases.get(name)
        return twist[:3] if base is None else base[:3, :3] @ twist[:3]

    def _step_satellites(self, dt: float) -> None:
        """Tools against pads (forces on both), then every satellite on by ``dt``."""
        for name in self.robots:
            tool = self.tcp_pose(name)
            tip, total = tool[:3, 3], np.zeros(3)
            for body in self.satellites.values():
                for fixture in body.fixtures.values():
                    force = self._pad(name, body, fixture, tip)
                    if force is not None:
                        body.apply_wrench(-force, tip)
                        total += force
            # the force acts at the tool's tip, the TCP: no moment about it
            self.pad_wrench[name] = np.concatenate([tool[:3, :3].T @ total, np.zeros(3)])
            self.peaks["force_n"] = max(self.peaks["force_n"], float(np.linalg.norm(total)))
        for body in self.satellites.values():
            body.step(dt)

    def _pad(self, robot: str, body: SatelliteBody, fixture: Fixture, tip: np.ndarray) -> np.ndarray | None:
        """Force (3,) on ``robot``'s tool tip from one pad, world frame; None when far from it."""
        pad2world = body.fixture_pose(fixture.name)
        rotation = pad2world[:3, :3]
        local = rotation.T @ (tip - pad2world[:3, 3])
        key = (robot, body.name, fixture.name)
        state = self.pads.get(key)
        if state is None and float(np.linalg.norm(local)) > fixture.radius + CONTACT_RANGE_M:
            return None
        if state is None:
            state = self.pads[key] = PadContact(robot, body.name, fixture.name)
        relative = rotation.T @ (self._tool_velocity(robot) - body.point_velocity(tip))
        if state.anchor is not None:
            force = tether_force(local, state.anchor, relative, fixture.stiffness, fixture.damping)
            if -force[2] > fixture.hold_force:  # pulled off: the Velcro tears open
                state.anchor = None
                state.events.append(("released", round(self.time, 6), round(float(-force[2]), 3)))
                force, _ = pad_contact_force(local, relative, fixture.radius, fixture.stiffness,
                                             fixture.damping, fixture.friction)
        else:
            force, _ = pad_contact_force(local, relative, fixture.radius, fixture.stiffness, fixture.damping,
                                         fixture.friction)
            if force[2] >= fixture.engage_force:  # pressed hard enough: the Velcro hooks in
                state.anchor = np.array([local[0], local[1], 0.0])
                state.events.append(("engaged", round(self.time, 6), round(float(force[2]), 3)))
        state.force = rotation @ force
        state.depth = -float(local[2])
        state.peak_n = max(state.peak_n, float(np.linalg.norm(force)))
        return state.force
