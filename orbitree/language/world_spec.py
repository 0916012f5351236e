"""The resources a mission names: robots (with their camera and F/T sensor) and targets.

```yaml
robots:
  arm:
    driver: sim                 # sim (default) or ur
    host: 192.168.1.10          # ur only
    q0: [0, -90, 90, -90, -90, 0]   # deg unless units are given (sim start)
    tool: {xyz: [0, 0, 0.2]}    # TCP in the flange frame
    camera:
      driver: sim               # sim (rendered) or cv (cv2.VideoCapture)
      mount: {xyz: [0, -0.08, -0.1]}   # camera in the TCP frame (hand-eye result)
      fps: 30 Hz
    latch: {travel_time: 1 s, hook_force: 60 N}   # the docking hooks (sim: contact model on)
    contact: {stiffness: 100 N/mm, friction: 0.3} # sim: the interfaces touching (defaults)
    ft_sensor: {noise: [5 N, 0.2 Nm], range: [100 N, 10 Nm], bandwidth: 30 Hz}  # sim (or: ideal)
    kinematic_errors: {length: 0.1 mm, angle: 0.01 deg}                        # sim, per run
    start: {target: sirom, offset: {xyz: [0.02, 0.17, 0.35], rpy: [-45, 18, 25]}}  # sim
targets:
  sirom: {board: sirom, pose: {xyz: [0.6, 0.2, 0.0], rpy: [0, 0, 30]}}
```

Each robot's readings reach the blackboard under ``/robot/<name>/``: ``q``, ``tcp_pose``
(4x4 ``tcp2base``), ``tcp_twist``, ``wrench`` (TCP frame), ``protective_stop`` and, with a
camera, ``image`` (the latest frame). A target's ``pose`` places it in the simulated world
(robot base frame); the estimator never sees it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orbitree.drivers.sim_calibration import CameraErrorModel
from orbitree.drivers.sim_ft import UR10E_FT
from orbitree.language.keys import ROBOT_STATE, robot_key
from orbitree.language.quantities import (
    Angle,
    AngleDeg,
    Duration,
    Force,
    Frequency,
    Length,
    Pose,
    PoseField,
    Speed,
    Torque,
    quantity,
)
from orbitree.skills import kinematics as kin
from orbitree.skills.capture import SIROM_TCP2TARGET_DOCKED

UR10E_HOME_DEG = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)
DEG = float(np.pi / 180.0)
Stiffness = quantity("stiffness")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CameraSpec(Strict):
    driver: Literal["sim", "cv"] = "sim"
    mount: PoseField = Field(default_factory=Pose, description="camera pose in the TCP frame (cam2tcp)")
    fps: Frequency = Field(30.0, gt=0.0, description="frame rate")
    width: int = Field(1280, ge=64)
    height: int = Field(720, ge=48)
    focal_px: float = Field(900.0, gt=0.0, description="sim: focal length in pixels")
    noise_dn: float = Field(1.5, ge=0.0, description="sim: read noise, grey levels")
    blur_px: float = Field(0.7, ge=0.0, description="sim: Gaussian blur sigma, pixels")
    device: str | int = Field(0, description="cv: device index or stream URL")
    calibration: str | None = Field(None, description="cv: OpenCV calibration file")
    # sim: a real camera's timing and calibration; each default is a realistic value (sources in
    # README, "Camera realism"), 0 the ideal one. Per-run errors are drawn from the run's seed.
    exposure: Duration = Field(0.010, ge=0.0, description="sim: exposure time (motion blur over it)")
    latency: Duration = Field(0.070, ge=0.0, description="sim: mid-exposure to the frame's delivery")
    stamp_jitter: Duration = Field(0.002, ge=0.0, description="sim: standard deviation of a frame stamp's error")
    focal_error: float = Field(0.003, ge=0.0, description="sim: per run, relative std of the focal length")
    principal_point_error: float = Field(2.0, ge=0.0, description="sim: per run, std of cx and cy, pixels")
    distortion_error: float = Field(0.01, ge=0.0, description="sim: per run, std of k1 and k2")
    mount_error: Length = Field(0.001, ge=0.0, description="sim: per run, std of the mount per axis")
    mount_angle_error: Angle = Field(0.3 * DEG, ge=0.0, description="sim: per run, std of its turn per axis")
    print_scale_error: float = Field(0.001, ge=0.0, description="sim: per run, relative std of the print scale")
    marker_error: Length = Field(0.0002, ge=0.0, description="sim: per run, std of a marker's placement")
    marker_angle_error: Angle = Field(0.3 * DEG, ge=0.0, description="sim: per run, std of each marker's turn")

    @model_validator(mode="after")
    def _cv_needs_calibration(self) -> CameraSpec:
        if self.driver == "cv" and not self.calibration:
            raise ValueError("a 'cv' camera needs 'calibration: file.yaml' (its intrinsics)")
        return self

    def error_model(self) -> CameraErrorModel:
        """The standard deviations of the per-run calibration errors (sim)."""
        return CameraErrorModel(self.focal_error, self.principal_point_error, self.distortion_error,
                                self.mount_error, self.mount_angle_error, self.print_scale_error,
                                self.marker_error, self.marker_angle_error)


class LatchSpec(Strict):
    travel_time: Duration = Field(1.0, gt=0.0, description="sim: time for the hooks' full stroke")
    hook_force: Force = Field(60.0, gt=0.0, description="sim: the most the hook motors pull (they stall there)")
    preload: Force = Field(30.0, gt=0.0, description="sim: the hooks' pull at full stroke on seated faces")
    stall_time: Duration = Field(
        2.0, gt=0.0, description="sim: pulling at 90 % of hook_force this long gaining under 1 % of the stroke "
        "is a jam (longer than a complying arm takes to slide a petal off a chamfer)")


class ContactSpec(Strict):
    """sim: the interfaces touching (``orbitree.skills.contact``; sources and ranges in README)."""

    stiffness: Stiffness = Field(
        1.0e5, gt=0.0, description="sim: stiffness from the commanded TCP to the passive face (arm, "
        "sensor and interfaces in series)")
    friction: float = Field(0.3, ge=0.0, le=2.0, description="sim: Coulomb friction coefficient, interfaces")


class FTSensorSpec(Strict):
    """sim: the wrist F/T sensor, per axis (force, torque); defaults: the UR10e's built-in sensor
    (``orbitree.drivers.sim_ft``)."""

    noise: tuple[Force, Torque] = Field(UR10E_FT.noise, description="std of a reading (datasheet precision)")
    bias: tuple[Force, Torque] = Field(UR10E_FT.bias, description="std of the per-run offset")
    drift: tuple[Force, Torque] = Field(UR10E_FT.drift, description="random walk of the offset per √minute")
    range: tuple[Force, Torque] = Field(UR10E_FT.range, description="saturation of each axis")
    bandwidth: Frequency | None = Field(UR10E_FT.bandwidth, gt=0.0, description="first-order low-pass, null: none")


IDEAL_FT_SENSOR = FTSensorSpec(noise=(0.0, 0.0), bias=(0.0, 0.0), drift=(0.0, 0.0), range=(1e9, 1e9),
                               bandwidth=None)


class KinematicErrorSpec(Strict):
    """sim: the arm as built differs from its nominal DH table by these standard deviations,
    drawn per run (``orbitree.drivers.sim_robot.perturbed_table``)."""

    length: Length = Field(1e-4, ge=0.0, description="on every d and a")
    angle: AngleDeg = Field(1e-2, ge=0.0, validate_default=True,
                            description="on every joint offset and alpha (deg unless units are given)")


class StartSpec(Strict):
    """Start the arm at a misalignment from a target (sim).

    ``offset`` is the misalignment between the active interface and the target as the SIROM
    self-coupling paper ([SIROM] in the README's Sources) states it: the target's pose in the TCP
    frame is its docked pose moved by ``offset`` (translation along the tool axes, z ahead of the
    tool; rotation roll-pitch-yaw), so ``{xyz: [0.02, 0.17, 0.35], rpy: [-45, 18, 25]}`` puts the
    target 350 mm ahead of the tool.
    """

    target: str = Field(description="the target the offset refers to")
    offset: PoseField = Field(
        description="target pose relative to its docked pose, in the TCP frame (z: ahead of the tool)"
    )


class RobotSpec(Strict):
    driver: Literal["sim", "ur"] = "sim"
    model: Literal["ur10e"] = "ur10e"
    host: str | None = Field(None, description="ur: controller address")
    q0: tuple[AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg] = Field(
        UR10E_HOME_DEG,
        validate_default=True,
        description="sim: initial joints (deg unless units are given)",
    )
    start: StartSpec | None = Field(
        None, description="sim: start pose relative to a target, solved by IK from q0 (overrides q0)"
    )
    tool: PoseField = Field(default_factory=Pose, description="TCP pose in the flange frame")
    camera: CameraSpec | None = None
    latch: LatchSpec | None = Field(None, description="docking hooks of the active interface")
    ft: bool = Field(True, description="the arm has a wrist force/torque sensor")
    tcp_speed_limit: Speed = Field(1.0, gt=0.0, description="sim: TCP speed limit")
    ft_sensor: FTSensorSpec | Literal["ideal"] = Field(
        default_factory=FTSensorSpec, description="sim: the wrist F/T sensor ('ideal': exact and instant)")
    kinematic_errors: KinematicErrorSpec = Field(
        default_factory=KinematicErrorSpec, description="sim: deviations of the arm from its nominal kinematics")
    contact: ContactSpec = Field(default_factory=ContactSpec, description="sim: the interfaces in contact")

    def ft_model(self) -> FTSensorSpec:
        """The sensor's figures (``ideal`` spelled out)."""
        return IDEAL_FT_SENSOR if self.ft_sensor == "ideal" else self.ft_sensor

    @field_validator("q0", mode="before")
    @classmethod
    def _six(cls, value: object) -> object:
        if isinstance(value, list | tuple) and len(value) != 6:
            raise ValueError(f"expected 6 joint angles, got {len(value)}")
        return value

    @model_validator(mode="after")
    def _ur_needs_host(self) -> RobotSpec:
        if self.driver == "ur" and not self.host:
            raise ValueError("a 'ur' robot needs 'host: <controller address>'")
        return self

    def keys(self, name: str) -> list[str]:
        """Blackboard keys the executive writes for this robot every tick."""
        keys = [robot_key(name, k) for k in ROBOT_STATE]
        if self.ft:
            keys.append(robot_key(name, "wrench"))
        if self.camera is not None:
            keys.append(robot_key(name, "image"))
        if self.latch is not None:
            keys.append(robot_key(name, "latch"))
        return keys


class TargetSpec(Strict):
    board: Literal["sirom"] = Field("sirom", description="marker board carried by the target")
    pose: PoseField = Field(description="sim: target (board) pose in the robot base frame")


class Box(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    min: tuple[Length, Length, Length]
    max: tuple[Length, Length, Length]

    @model_validator(mode="after")
    def _ordered(self) -> Box:
        if any(lo >= hi for lo, hi in zip(self.min, self.max, strict=True)):
            raise ValueError(f"workspace min {list(self.min)} must be below max {list(self.max)} on every axis")
        return self


class SafetySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_force: Force = Field(150.0, gt=0.0, description="wrist force limit (norm)")
    max_torque: Torque = Field(20.0, gt=0.0, description="wrist torque limit (norm)")
    max_tcp_speed: Speed = Field(0.5, gt=0.0, description="TCP linear speed limit")
    workspace: Box | None = Field(None, description="box the TCP must stay in (base frame)")
    max_sensor_age: Duration = Field(0.1, gt=0.0, description="robot readings older than this are stale")
    protective_stop: bool = Field(True, description="a protective stop is a violation")
    debounce: int = Field(2, ge=1, description="ticks a force/torque reading must exceed its limit")
    recovery: str | None = Field(None, description="subtree run after a violation, arm stopped first")


def start_configuration(spec: RobotSpec, targets: dict[str, TargetSpec]) -> np.ndarray:
    """Joint angles (rad) putting the TCP at ``spec.start`` (IK from ``q0``); ValueError if none."""
    start = spec.start
    assert start is not None
    if start.target not in targets:
        raise ValueError(f"start.target {start.target!r} is not one of the mission's targets")
    # the target seen from the TCP is the docked relation moved by ``offset`` (tool axes)
    goal = targets[start.target].pose.matrix() @ SIROM_TCP2TARGET_DOCKED @ np.linalg.inv(start.offset.matrix())
    q, ok = kin.inverse_kinematics(kin.UR10E, goal, np.array(spec.q0), spec.tool.matrix(),
                                   tolerance=1e-7, max_iterations=300)
    if not ok or np.abs(q).max() > 2 * np.pi:
        raise ValueError(f"start pose {start.offset} relative to {start.target!r} is out of reach")
    return q
