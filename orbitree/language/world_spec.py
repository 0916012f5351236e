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
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
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
    Mass,
    Pose,
    PoseField,
    Speed,
    Torque,
    quantity,
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


def calibration_file(mission_dir: Path, name: str) -> Path:
    """A calibration file named in a mission: relative paths start at the mission's folder."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else mission_dir / path

DEG = float(np.pi / 180.0)
Stiffness = quantity("stiffness")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrueIntrinsicsSpec(Strict):
    """sim: the lens as built, given outright (instead of a per-run draw around the nominal)."""

    fx: float = Field(gt=0.0, description="focal length along x, pixels")
    fy: float = Field(gt=0.0, description="focal length along y, pixels")
    cx: float = Field(description="principal point x, pixels")
    cy: float = Field(description="principal point y, pixels")
    distortion: tuple[float, float, float, float, float] = Field(
        (-0.06, 0.08, 4e-4, -3e-4, -0.02), description="k1, k2, p1, p2, k3 (OpenCV's model)")


class CameraSpec(Strict):
    driver: Literal["sim", "cv"] = "sim"
    mount: PoseField | str = Field(
        default_factory=Pose, description="camera pose in the TCP frame (cam2tcp), or a calibration file "
        "whose 'cam2tcp' it is (written by 'orbitree calibrate camera' or the calibrate_camera leaf)")
    fps: Frequency = Field(30.0, gt=0.0, description="frame rate")
    width: int = Field(1280, ge=64)
    height: int = Field(720, ge=48)
    focal_px: float = Field(900.0, gt=0.0, description="sim: focal length in pixels")
    noise_dn: float = Field(1.5, ge=0.0, description="sim: read noise, grey levels")
    blur_px: float = Field(0.7, ge=0.0, description="sim: Gaussian blur sigma, pixels")
    device: str | int = Field(0, description="cv: device index or stream URL")
    calibration: str | None = Field(
        None, description="OpenCV calibration file: the intrinsics the estimator uses (cv: required; sim: "
        "default the nominal focal_px, the lens renders with its truth either way)")
    true_mount: PoseField | None = Field(
        None, description="sim: the camera's real pose in the TCP frame (default: drawn per run around mount)")
    true_intrinsics: TrueIntrinsicsSpec | None = Field(
        None, description="sim: the real lens (default: drawn per run around the nominal intrinsics)")
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

    def mount_matrix(self, base_dir: Path = Path()) -> np.ndarray:
        """``cam2tcp`` (4, 4): the pose, or the ``cam2tcp`` of the file (relative to ``base_dir``)."""
        if isinstance(self.mount, str):
            from orbitree.drivers.calibration_io import load_mount

            return load_mount(calibration_file(base_dir, self.mount))
        return self.mount.matrix()

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
    drawn per run (``orbitree.drivers.sim_robot_config.perturbed_table``)."""

    length: Length = Field(1e-4, ge=0.0, description="on every d and a")
    angle: AngleDeg = Field(1e-2, ge=0.0, validate_default=True,
                            description="on every joint offset and alpha (deg unless units are given)")
    offsets: dict[str, str | float] = Field(
        {}, description="sim: the arm's true errors, added to the Hayati–Mirmirani UR10e table (joints 2, 3 HM): "
        "{a2: 0.5 mm, beta2: 0.02 deg, ...} for d1..d6, theta1..6, a1..6, alpha1..6, beta2, beta3 (lengths m, "
        "angles deg unless units are given); a kinematic calibration has them to find")

    @field_validator("offsets")
    @classmethod
    def _known_offsets(cls, value: dict[str, str | float]) -> dict[str, float]:
        return parse_offsets(value)

    def true_table(self, rng: np.random.Generator) -> kin.DHTable:
        """The arm as built: the nominal table (HM with ``offsets``), drawn around per run."""
        from orbitree.drivers.sim_robot_config import perturbed_table

        base = kin.UR10E
        if self.offsets:
            base = offset_table(kin.UR10E_HM, self.offsets)
        return perturbed_table(base, rng, self.length, self.angle)


_OFFSET_KINDS = {"d": "d", "theta": "theta_offset", "a": "a", "alpha": "alpha", "beta": "beta"}


def parse_offsets(value: dict[str, str | float]) -> dict[str, float]:
    """``{a2: "0.5 mm", beta3: 0.01}`` to SI (lengths m; angles rad, bare numbers deg), names checked
    against the Hayati–Mirmirani UR10e table (``d`` of an HM joint is 0; ``beta`` only on HM joints)."""
    from orbitree.language.units import UnitError, parse_quantity

    out = {}
    for name, raw in value.items():
        kind, _, joint = name.rstrip("0123456789"), None, name[len(name.rstrip("0123456789")):]
        if kind not in _OFFSET_KINDS or not joint or not 1 <= int(joint) <= 6:
            raise ValueError(f"{name!r} is not a link parameter: d1..d6, theta1..theta6, a1..a6, alpha1..alpha6, "
                             "beta2, beta3")
        hm = kin.UR10E_HM.hm[int(joint) - 1]
        if (kind == "d" and hm) or (kind == "beta" and not hm):
            raise ValueError(f"{name!r}: joint {joint} of the UR10e is "
                             + ("Hayati–Mirmirani (d = 0; give beta instead)" if hm else "plain DH (no beta)"))
        try:
            if kind in ("d", "a"):
                out[name] = parse_quantity(raw, "length", None)
            else:
                out[name] = parse_quantity(raw, "angle", "deg")
        except UnitError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return out


def offset_table(table: kin.DHTable, offsets: dict[str, float]) -> kin.DHTable:
    """``table`` with SI ``offsets`` by parameter name added."""
    columns = {key: list(getattr(table, key)) for key in _OFFSET_KINDS.values()}
    for name, delta in offsets.items():
        kind = name.rstrip("0123456789")
        columns[_OFFSET_KINDS[kind]][int(name[len(kind):]) - 1] += delta
    return kin.DHTable(**{k: tuple(v) for k, v in columns.items()}, hm=table.hm, name=f"{table.name} (as built)")


class LaserTrackerSpec(Strict):
    """sim: a laser tracker watching reflectors on the arm's links (the true arm), for a kinematic
    calibration (``sweep_joint``): each reading has a Gaussian error per coordinate of
    ``noise_a + noise_b · L``, L the reflector's distance from the tracker."""

    pose: PoseField = Field(default_factory=lambda: Pose(xyz=(1.5, 0.0, 0.0)),
                            description="the tracker in the robot base frame")
    noise_a: Length = Field(5e-6, ge=0.0, description="constant part of the per-coordinate noise (5 um)")
    noise_b: float = Field(0.3e-6, ge=0.0, description="noise per metre of distance, m/m (0.3 um/m)")
    reflectors: tuple[tuple[Length, Length, Length], ...] = Field(
        ((0.1, 0.0, 0.0),) * 6, description="reflector on each link, in that link's frame (after its joint), m")

    @field_validator("reflectors")
    @classmethod
    def _six(cls, value: tuple) -> tuple:
        if len(value) != 6:
            raise ValueError(f"expected a reflector for each of the 6 links, got {len(value)}")
        return value


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
