"""What a mission's robot carries, and how a simulated one differs from its nominal model.

The models of a robot's ``camera:`` (its mount, the lens and timing of a simulated one and their
per-run errors, ``TrueIntrinsicsSpec``), ``latch:``, ``contact:``, ``ft_sensor:`` (and the
``ideal`` one), ``kinematic_errors:`` (with the Hayati–Mirmirani offsets: ``parse_offsets``,
``offset_table``) and ``laser_tracker:``, with what they and the models of
:mod:`orbitree.language.world_spec` share (``Strict``, ``DEG``, ``Stiffness``,
``calibration_file``). ``world_spec`` holds the robot, target and safety models that use these and
re-exports every name of this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orbitree.drivers.sim_calibration import CameraErrorModel
from orbitree.drivers.sim_ft import UR10E_FT
from orbitree.language.quantities import (
    Angle,
    AngleDeg,
    Duration,
    Force,
    Frequency,
    Length,
    Pose,
    PoseField,
    Torque,
    quantity,
)
from orbitree.skills import kinematics as kin


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
