"""The resources a mission names: robots (with their camera and F/T sensor) and targets.

```yaml
robots:
  arm:
    driver: sim                 # sim (default), ur or ur-emulated
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
(the world frame: the base frame of an arm without ``base:``); the estimator never sees it.
Satellite targets (``kind: satellite``) and arms on their own ``base`` are described in
``orbitree.language.satellite_spec`` and the README ("Satellites, orbits and two arms").

This module holds the robot, start, target and safety models and ``start_configuration``; the
models of what a robot carries (camera, latch, contact, F/T sensor, kinematic errors, laser
tracker) are in ``orbitree.language.equipment_spec``, re-exported here.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orbitree.language.equipment_spec import (
    DEG,
    IDEAL_FT_SENSOR,
    CameraSpec,
    ContactSpec,
    FTSensorSpec,
    KinematicErrorSpec,
    LaserTrackerSpec,
    LatchSpec,
    Stiffness,
    Strict,
    TrueIntrinsicsSpec,
    calibration_file,
    offset_table,
    parse_offsets,
)
from orbitree.language.keys import ROBOT_STATE, robot_key
from orbitree.language.quantities import (
    AngleDeg,
    Duration,
    Force,
    Length,
    Mass,
    Pose,
    PoseField,
    Speed,
    Torque,
)
from orbitree.language.satellite_spec import (
    SATELLITE_FIELDS,
    BearingSpec,
    FixtureSpec,
    InertiaField,
    SpinSpec,
    StateSensorSpec,
)
from orbitree.skills import kinematics as kin
from orbitree.skills.capture import SIROM_TCP2TARGET_DOCKED

UR10E_HOME_DEG = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)

__all__ = [
    "DEG",
    "IDEAL_FT_SENSOR",
    "UR10E_HOME_DEG",
    "Box",
    "CameraSpec",
    "CharucoBoardSpec",
    "ContactSpec",
    "FTSensorSpec",
    "KinematicErrorSpec",
    "LaserTrackerSpec",
    "LatchSpec",
    "RobotSpec",
    "SafetySpec",
    "StartSpec",
    "Stiffness",
    "Strict",
    "TargetSpec",
    "TrueIntrinsicsSpec",
    "calibration_file",
    "offset_table",
    "parse_offsets",
    "start_configuration",
]


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
    driver: Literal["sim", "ur", "ur-emulated"] = Field(
        "sim", description="sim (lockstep), ur (a UR arm through ur_rtde), or ur-emulated (the ur driver "
        "on an emulated controller around the simulated arm, in real time)")
    model: Literal["ur10e"] = "ur10e"
    host: str | None = Field(None, description="ur: controller address; ur-emulated: loopback address to "
                             "serve on (default: a free 127.x.y.z)")
    q0: tuple[AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg] = Field(
        UR10E_HOME_DEG,
        validate_default=True,
        description="sim: initial joints (deg unless units are given)",
    )
    start: StartSpec | None = Field(
        None, description="sim: start pose relative to a target, solved by IK from q0 (overrides q0)"
    )
    tool: PoseField = Field(default_factory=Pose, description="TCP pose in the flange frame")
    start_tcp: PoseField | None = Field(
        None, description="sim: start with the TCP at this pose, world frame (solved by IK from q0)")
    base: PoseField = Field(default_factory=Pose, description="sim: the arm's base in the world frame "
                            "(several arms in one world each stand on their own)")
    camera: CameraSpec | None = None
    latch: LatchSpec | None = Field(None, description="docking hooks of the active interface")
    ft: bool = Field(True, description="the arm has a wrist force/torque sensor")
    tcp_speed_limit: Speed = Field(1.0, gt=0.0, description="sim: TCP speed limit")
    ft_sensor: FTSensorSpec | Literal["ideal"] = Field(
        default_factory=FTSensorSpec, description="sim: the wrist F/T sensor ('ideal': exact and instant)")
    kinematic_errors: KinematicErrorSpec = Field(
        default_factory=KinematicErrorSpec, description="sim: deviations of the arm from its nominal kinematics")
    contact: ContactSpec = Field(default_factory=ContactSpec, description="sim: the interfaces in contact")
    kinematics: str | None = Field(
        None, description="sim: a kinematics file (calibrated link parameters, written by identify_kinematics): "
        "the arm's controller computes its forward and inverse kinematics with them")
    laser_tracker: LaserTrackerSpec | None = Field(
        None, description="sim: a laser tracker for kinematic calibration")

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
        if self.driver == "ur-emulated" and self.host and not _loopback(self.host):
            raise ValueError(f"a 'ur-emulated' robot serves on a loopback address (127.x.y.z), not {self.host!r}")
        if self.driver == "ur" and (self.kinematics or self.laser_tracker):
            raise ValueError("'kinematics' and 'laser_tracker' are for simulated arms (a UR's calibration lives "
                             "in its controller)")
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


class CharucoBoardSpec(Strict):
    """A ChArUco calibration board (``orbitree.skills.charuco``)."""

    squares: tuple[int, int] = Field((7, 5), description="squares across and down")
    square: Length = Field(0.04, gt=0.0, description="side of a square")
    marker: Length = Field(0.03, gt=0.0, description="side of a marker (below the square's)")
    dictionary: str = Field("DICT_5X5_100", description="OpenCV predefined ArUco dictionary")

    @model_validator(mode="after")
    def _valid(self) -> CharucoBoardSpec:
        self.spec()
        return self

    def spec(self):  # -> orbitree.skills.charuco.CharucoSpec
        from orbitree.skills.charuco import CharucoSpec

        return CharucoSpec(tuple(self.squares), self.square, self.marker, self.dictionary)


class TargetSpec(Strict):
    kind: Literal["sirom", "satellite"] = Field(
        "sirom", description="sirom: a passive interface carrying a marker board; satellite: a spinning "
        "body with grapple fixtures (see SatelliteFields)")
    board: Literal["sirom", "charuco"] = Field(
        "sirom", description="what the target carries: the SIROM marker board, or a ChArUco calibration board "
        "(pose: its top-left corner; z into the board, so rpy [180, 0, 0] lays it face up on the table)")
    pose: PoseField = Field(description="sim: target (board) pose in the world frame; a satellite's: its "
                            "centre of mass and body axes (the initial attitude)")
    charuco: CharucoBoardSpec = Field(default_factory=CharucoBoardSpec, description="the ChArUco board's layout")
    # satellite targets (kind: satellite); orbitree.language.satellite_spec checks them
    mass: Mass | None = Field(None, gt=0.0, description="satellite: mass")
    inertia: InertiaField | None = Field(
        None, description="satellite: inertia about the centre of mass, body frame: [Ixx, Iyy, Izz], "
        "a 3x3 matrix, or {principal: [Ixx, Iyy, Izz], products: [Ixy, Ixz, Iyz]}")
    fixtures: dict[str, FixtureSpec] = Field({}, description="satellite: grapple pads, by name")
    spin: SpinSpec | None = Field(None, description="satellite: initial spin (rate about a body axis)")
    mount: Literal["gimbal", "free"] = Field(
        "gimbal", description="satellite: gimbal (laboratory mockup: turns about its spin axis on a bearing, "
        "centre fixed) or free (free-floating: gravity gradient and contact wrenches)")
    bearing: BearingSpec = Field(default_factory=lambda: BearingSpec(), description="satellite, gimbal: friction")
    state_sensor: StateSensorSpec | None = Field(
        None, description="satellite: a sensor writing /target/<name>/state (the JPL vision's message)")

    @model_validator(mode="after")
    def _kind_fields(self) -> TargetSpec:
        if self.kind == "satellite":
            missing = [f for f in ("mass", "inertia") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"a satellite target needs {' and '.join(missing)}")
        else:
            given = [f for f in SATELLITE_FIELDS if f in self.model_fields_set]
            if given:
                raise ValueError(f"{', '.join(given)}: only for 'kind: satellite' targets")
        return self

    def inertia_matrix(self) -> np.ndarray:
        assert self.inertia is not None
        return np.array(self.inertia.matrix)


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


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def start_configuration(spec: RobotSpec, targets: dict[str, TargetSpec]) -> np.ndarray:
    """Joint angles (rad) putting the TCP at ``spec.start`` or ``spec.start_tcp`` (IK from ``q0``);
    ValueError if none."""
    start = spec.start
    if start is None:
        assert spec.start_tcp is not None
        goal = np.linalg.solve(spec.base.matrix(), spec.start_tcp.matrix())
        q, ok = kin.inverse_kinematics(kin.UR10E, goal, np.array(spec.q0), spec.tool.matrix(),
                                       tolerance=1e-7, max_iterations=300)
        if not ok or np.abs(q).max() > 2 * np.pi:
            raise ValueError(f"start_tcp {spec.start_tcp} is out of reach from the base {spec.base}")
        return q
    if start.target not in targets:
        raise ValueError(f"start.target {start.target!r} is not one of the mission's targets")
    if targets[start.target].kind != "sirom":
        raise ValueError(f"start.target {start.target!r} is a satellite: a start offset refers to a SIROM target")
    # the target seen from the TCP is the docked relation moved by ``offset`` (tool axes), in the base frame
    target2base = np.linalg.solve(spec.base.matrix(), targets[start.target].pose.matrix())
    goal = target2base @ SIROM_TCP2TARGET_DOCKED @ np.linalg.inv(start.offset.matrix())
    q, ok = kin.inverse_kinematics(kin.UR10E, goal, np.array(spec.q0), spec.tool.matrix(),
                                   tolerance=1e-7, max_iterations=300)
    if not ok or np.abs(q).max() > 2 * np.pi:
        raise ValueError(f"start pose {start.offset} relative to {start.target!r} is out of reach")
    return q
