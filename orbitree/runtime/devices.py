"""From a mission's ``robots:`` and ``targets:`` to the drivers the executive reads and commands.

* ``RobotDevice`` adapts one arm (and its camera) to the executive: it writes the arm's state
  under ``/robot/<name>/`` every tick and gives behaviours a ``robot`` whose commands are
  journalled to the mission log (``cmd`` records) on their way to the driver.
* ``SimWorldDevice`` steps the simulated world by one period after every tick.

Simulated missions (every robot ``driver: sim``) run on the simulated clock; missions with
hardware run on the wall clock, and so do ``ur-emulated`` arms (the ``ur`` driver on an emulated
controller stepping the simulated arm in real time; the rest of the world is simulated as usual).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from orbitree.drivers.interfaces import Camera, CameraIntrinsics, DriverDisconnected, Latch, LatchState, Robot
from orbitree.language.keys import robot_key
from orbitree.language.loader import calibration_path
from orbitree.language.world_spec import RobotSpec, TargetSpec, start_configuration
from orbitree.nodes.context import Context
from orbitree.skills.se3 import vector_norm

_COMMANDS = ("speed_l", "servo_l", "move_l", "move_j", "stop", "zero_ft")


def _rounded(array: np.ndarray) -> np.ndarray:
    """``np.round(array, 6)``, bit for bit: numpy rounds floats to ``decimals`` as ``rint(a * 1e6)
    / 1e6``, which is done here without its dispatch (40 % of its cost on a twist, every tick)."""
    if array.dtype != np.float64:
        return np.round(array, 6)
    return np.rint(array * 1e6) / 1e6


class RecordingRobot:
    """Forwards to a ``Robot``; every command is also written to the tick's ``cmd`` record."""

    def __init__(self, robot: Robot, ctx: Context) -> None:
        self.inner = robot  # the driver the commands go to
        self._ctx = ctx
        self.name = robot.name

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self.inner, attr)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            if attr in _COMMANDS:
                shown = [_rounded(a) if isinstance(a, np.ndarray) else a for a in args]
                self._ctx.command(self.name, attr, args=shown, **kwargs)
            try:
                return target(*args, **kwargs)
            except DriverDisconnected as exc:
                # the link is down: the command is lost, as on a real network; the arm's own
                # watchdog stops it, and the safety monitor sees its readings go stale
                self._ctx.event("command_lost", robot=self.name, call=attr, error=str(exc))
                return None

        return call


class RecordingLatch:
    """Forwards to a ``Latch``; ``close`` and ``open`` are also written to the tick's ``cmd``
    record (device: the latch's name), as the arm's commands are."""

    def __init__(self, latch: Latch, ctx: Context) -> None:
        self.inner = latch  # the latch the commands go to
        self._ctx = ctx
        self.name = latch.name

    def close(self) -> None:
        self._send("close", self.inner.close)

    def open(self) -> None:
        self._send("open", self.inner.open)

    def state(self) -> LatchState:
        return self.inner.state()

    def _send(self, name: str, command: Callable[[], None]) -> None:
        self._ctx.command(self.name, name)
        try:
            command()
        except DriverDisconnected as exc:  # lost, as an arm's command is (RecordingRobot)
            self._ctx.event("command_lost", robot=self.name, call=name, error=str(exc))


@dataclass
class RobotDevice:
    name: str
    spec: RobotSpec
    driver: Robot
    camera: Camera | None
    ctx: Context
    latch: Latch | None = None
    base_dir: Path = Path()  # the mission's folder: calibration files named relative to it
    tracker: Any = None  # a laser tracker watching this arm (sim: orbitree.drivers.sim_tracker)
    robot: RecordingRobot = field(init=False)

    def __post_init__(self) -> None:
        self.robot = RecordingRobot(self.driver, self.ctx)
        self.cam2tcp = self.spec.camera.mount_matrix(self.base_dir) if self.spec.camera else None
        self._prefix = robot_key(self.name, "")
        self.max_tcp_speed = 0.0
        self.max_force = 0.0
        self._wrench_stamp: float | None = None

    @property
    def recording_latch(self) -> RecordingLatch | None:
        """The hooks, their commands journalled; wraps the latch of the moment (a fault injector
        replaces ``latch`` after the devices are built, before the leaves' ``setup``)."""
        return None if self.latch is None else RecordingLatch(self.latch, self.ctx)

    def keys(self) -> list[str]:
        return self.spec.keys(self.name)

    def replace_driver(self, robot: Robot) -> None:
        """Put ``robot`` (a wrapper of the driver, e.g. a fault injector's) under the recorder."""
        self.driver = self.robot.inner = robot

    def setup(self) -> None:
        self.driver.setup()
        if self.camera is not None:
            self.camera.setup()
        if self.latch is not None:
            self.latch.setup()

    def read(self, now: float) -> dict[str, Any]:
        state = self.driver.read()
        p = self._prefix
        out: dict[str, Any] = {
            p + "q": state.q,
            p + "tcp_pose": state.tcp2base,
            p + "tcp_twist": state.tcp_twist,
            p + "protective_stop": state.protective_stop,
        }
        self.max_tcp_speed = max(self.max_tcp_speed, vector_norm(state.tcp_twist[:3]))
        if self.spec.ft and state.wrench_stamp != self._wrench_stamp:
            # a reading the sensor did not renew (ft_dropout) is not re-stamped: the key goes stale
            self._wrench_stamp = state.wrench_stamp
            out[p + "wrench"] = state.wrench
            self.max_force = max(self.max_force, vector_norm(state.wrench[:3]))
        if self.camera is not None:
            frame = self.camera.read()
            if frame is not None:
                out[p + "image"] = frame
        if self.latch is not None:
            out[p + "latch"] = self.latch.state().name
        return out

    def after_tick(self, period: float) -> None:
        pass

    def summary(self) -> dict[str, float]:
        """Run-summary figures this arm measured (the largest of all arms is reported)."""
        out = {"max_tcp_speed_mps": round(self.max_tcp_speed, 6)}
        if self.spec.ft:
            out["max_contact_force_n"] = round(self.max_force, 4)
        return out

    def stop(self) -> None:
        self.driver.stop()

    def shutdown(self) -> None:
        try:
            self.driver.shutdown()
        finally:
            for part in (self.camera, self.latch):
                if part is not None:
                    part.shutdown()


@dataclass
class SimWorldDevice:
    world: Any  # orbitree.drivers.sim_world.SimWorld
    name: str = "world"
    # on the wall clock (an ur-emulated arm), the mission time: the world keeps up with it rather
    # than one period per tick (a late tick would leave the camera's frames behind the clock)
    now: Callable[[], float] | None = None

    def keys(self) -> list[str]:
        return []

    def setup(self) -> None:
        pass

    def read(self, now: float) -> dict[str, Any]:
        return {}

    def after_tick(self, period: float) -> None:
        if self.now is None:
            self.world.step(period)
        else:
            self.world.step(max(self.now() + period - self.world.time, 1e-6))

    def stop(self) -> None:
        for robot in self.world.robots.values():
            robot.stop()

    def shutdown(self) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        """Ground truth the sensors may not tell (a biased or dropped-out wrist sensor): the
        peak contact force on the tool, TCP speed and distance out of the safety workspace; and
        how far each bump pushed its target (``target_pushes``: ``reached`` is the fraction of
        the offset, ``peak_resistance_n`` what the tool held it back with)."""
        peaks = self.world.peaks
        out = {"true_max_contact_force_n": round(peaks["force_n"], 4),
               "true_max_tcp_speed_mps": round(peaks["speed_mps"], 6)}
        if "workspace_exit_m" in peaks:
            out["true_workspace_exit_m"] = round(peaks["workspace_exit_m"], 6)
        pushes = [*self.world.pushed, *(p.record(self.world.time) for p in self.world.pushes)]
        if pushes:
            out["target_pushes"] = pushes
        return out


def is_simulated(robots: dict[str, RobotSpec]) -> bool:
    return all(spec.driver == "sim" for spec in robots.values())


def build_devices(
    robots: dict[str, RobotSpec], targets: dict[str, TargetSpec], ctx: Context, seed: int,
    base_dir: Path = Path(), orbit: Any = None,
) -> tuple[list[Any], Any]:
    """Create (not connect) the drivers of a mission; returns (devices, sim world or None).

    ``base_dir``: the mission file's folder, which relative calibration paths start from;
    ``orbit``: the mission's ``orbit:`` (``OrbitSpec``) or None. Satellite targets and the orbit
    live in the simulated world (``orbitree.runtime.space``)."""
    space = orbit is not None or any(t.kind == "satellite" for t in targets.values())
    if not robots and not space:
        return [], None
    if all(spec.driver in ("sim", "ur-emulated") for spec in robots.values()):
        from orbitree.runtime.space import space_devices

        boards = {name: t for name, t in targets.items() if t.kind == "sirom"}
        devices, world = _sim_devices(robots, boards, ctx, seed, base_dir)
        return [*devices, *space_devices(world, targets, orbit, seed)], world
    if any(spec.driver == "sim" for spec in robots.values()):
        raise ValueError("a mission drives either simulated robots or hardware, not both")
    return [_hardware_device(name, spec, ctx, base_dir) for name, spec in robots.items()], None


def _sim_devices(robots, targets, ctx, seed, base_dir=Path()):
    from orbitree.drivers.calibration_io import load_intrinsics
    from orbitree.drivers.sim_calibration import (
        CameraErrorModel,
        perturbed_board,
        perturbed_intrinsics,
        perturbed_mount,
    )
    from orbitree.drivers.sim_camera import SensorModel, SimCamera, default_intrinsics
    from orbitree.drivers.sim_latch import SimLatch
    from orbitree.drivers.sim_robot import SimRobot, SimRobotLimits
    from orbitree.drivers.sim_world import SimWorld
    from orbitree.runtime.warm import warm_once
    from orbitree.skills.board_model import sirom_board_model
    from orbitree.skills.contact_geometry import sirom_passive

    world = SimWorld(seed=seed)
    # the boards as stuck on (per run; the estimator keeps the paper's table), on the passive's
    # face; the first simulated camera's spec says how well they were placed
    cameras = [spec.camera for spec in robots.values() if spec.camera is not None]
    placement = cameras[0].error_model() if cameras else CameraErrorModel()
    for k, (name, target) in enumerate(targets.items()):
        if target.board == "charuco":  # a calibration board: printed by OpenCV, not docked with
            from orbitree.drivers.sim_charuco import charuco_object

            layout = target.charuco.spec()
            world.add_fixture(name, partial(charuco_object, name, layout), target.pose.matrix())
            continue
        board = perturbed_board(sirom_board_model(), placement, np.random.default_rng([seed, k, 2]))
        world.add_target(name, board, target.pose.matrix(), body=sirom_passive().pieces)
    devices: list[Any] = []
    for i, (name, spec) in enumerate(robots.items()):
        q0 = np.array(spec.q0)
        if spec.start is not None or spec.start_tcp is not None:
            q0 = start_configuration(spec, targets)
        mount = spec.camera.mount_matrix(base_dir) if spec.camera else None  # the hand-eye result
        robot = SimRobot(
            name,
            q0=q0,
            tool=spec.tool.matrix(),
            cam2tcp=mount,
            limits=SimRobotLimits(tcp_speed=spec.tcp_speed_limit),
            period=ctx.period,
            **_sim_arm_errors(spec, seed, i, base_dir),
        )
        camera = None
        if spec.camera is not None:
            cam = spec.camera
            design = default_intrinsics(cam.width, cam.height, cam.focal_px)  # the lens as designed
            # what the estimator believes: a calibration file's intrinsics, else the design
            nominal = load_intrinsics(calibration_path(base_dir, cam.calibration)) if cam.calibration else design
            errors, draws = cam.error_model(), np.random.default_rng([seed, i, 3])
            lens = perturbed_intrinsics(design, errors, draws)  # the lens as built (the same draws either way)
            bracket = perturbed_mount(mount, errors, draws)  # the bracket as built
            if cam.true_intrinsics is not None:
                t = cam.true_intrinsics
                lens = CameraIntrinsics(np.array([[t.fx, 0.0, t.cx], [0.0, t.fy, t.cy], [0.0, 0.0, 1.0]]),
                                        np.array(t.distortion, dtype=float), cam.width, cam.height)
            if cam.true_mount is not None:
                bracket = cam.true_mount.matrix()
            camera = SimCamera(
                f"{name}_camera",
                nominal,
                sensor=SensorModel(blur_sigma_px=cam.blur_px, read_noise_dn=cam.noise_dn),
                seed=seed * 1000 + i,
                frame_rate_hz=cam.fps,
                true_intrinsics=lens,
                cam2tool=bracket,
                exposure_s=cam.exposure,
                latency_s=cam.latency,
                stamp_jitter_s=cam.stamp_jitter,
            )
            camera.lazy_frames = True  # rendered when read, in the parts read (a tracker's windows)
        latch, contact = None, None
        if spec.latch is not None:
            from orbitree.drivers.sim_latch import HookMechanics
            from orbitree.skills.contact import sirom_contact_model, structural_stiffness

            hooks = HookMechanics(max_pull=spec.latch.hook_force, preload=spec.latch.preload,
                                  stall_time=spec.latch.stall_time)
            latch = SimLatch(f"{name}_latch", spec.latch.travel_time, hooks)
            stiffness = structural_stiffness(spec.contact.stiffness)
            contact = sirom_contact_model(stiffness, friction=spec.contact.friction)
        driver, arm = robot, robot
        if spec.driver == "ur-emulated":
            # the ur driver (ur_rtde) on an emulated controller that steps this arm in real time
            from orbitree.drivers.ur_emulator import EmulatedURRobot

            driver = EmulatedURRobot(name, robot, spec.host, tcp_offset=spec.tool.matrix())
            arm = driver.world_arm
        world.add_robot(arm, camera, latch, contact, base2world=spec.base.matrix())
        tracker = None
        if spec.laser_tracker is not None:
            from orbitree.drivers.sim_tracker import SimLaserTracker

            lt = spec.laser_tracker
            tracker = SimLaserTracker(robot, lt.pose.matrix(), np.array(lt.reflectors), lt.noise_a, lt.noise_b,
                                      np.random.default_rng([seed, i, 4]))
        devices.append(RobotDevice(name, spec, driver, camera, ctx, latch, base_dir, tracker))
    realtime = any(spec.driver == "ur-emulated" for spec in robots.values())
    devices.append(SimWorldDevice(world, now=(lambda: ctx.now) if realtime else None))
    warm_once()  # the compiled kernels loaded now, not by their first call in a tick
    return devices, world


def _sim_arm_errors(spec: RobotSpec, seed: int, index: int, base_dir: Path = Path()) -> dict[str, Any]:
    """What makes a simulated arm real, drawn from the run seed: its wrist sensor (noise, bias,
    drift, range, lag) and its kinematics as built (DH deviations, and the ``offsets`` given);
    with ``kinematics: FILE`` the controller computes with the calibrated table."""
    import math

    from orbitree.drivers.sim_ft import FTSensorModel

    ft = spec.ft_model()
    model = FTSensorModel(ft.noise, ft.bias, ft.drift, ft.range, ft.bandwidth or math.inf)
    built = spec.kinematic_errors.true_table(np.random.default_rng([seed, index, 1]))
    out = {"ft": model, "true_table": built, "seed": np.random.default_rng([seed, index])}
    if spec.kinematics:
        from orbitree.drivers.kinematics_io import load_kinematics

        out["table"] = load_kinematics(calibration_path(base_dir, spec.kinematics))
    return out


def _hardware_device(name: str, spec: RobotSpec, ctx: Context, base_dir: Path) -> RobotDevice:
    from orbitree.drivers.ur_robot import URRobot

    robot = URRobot(name, spec.host or "", tcp_offset=spec.tool.matrix())
    camera = None
    if spec.camera is not None:
        from orbitree.drivers.cv_camera import CvCamera

        cam = spec.camera
        # frames stamped at capture (the driver's buffer timestamp, or the grab's instant, on the
        # monotonic clock) and handed out on the mission clock with their age kept: read during
        # the tick, whose start ctx.now is (the tick time alone would hide the camera's latency)
        calibration = calibration_path(base_dir, cam.calibration or "")
        camera = CvCamera(f"{name}_camera", cam.device, calibration, fps=cam.fps,
                          mission_clock=lambda: ctx.now)
    return RobotDevice(name, spec, robot, camera, ctx)
