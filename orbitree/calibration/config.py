"""A circle-point calibration file: its pydantic model, and the measurement it describes.

Bare numbers are millimetres and degrees (the units of [CirclePoint]'s tables); units may be written
(``5 um``, ``0.5 rad``). Every problem is reported at ``file:line:col`` (exit code 2).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from scipy.spatial.transform import Rotation

from orbitree.language.errors import Diagnostic, MissionError
from orbitree.language.parser import pydantic_diagnostics
from orbitree.language.quantities import AngleDeg, quantity
from orbitree.language.source import Source, load_file
from orbitree.skills.circle_point import ERROR_TERMS, JointErrors, Measurement, check_model
from orbitree.skills.kinematics import DHTable

LengthMM = quantity("length", bare="mm")
Count = Annotated[int, Field(strict=True)]
Finite = Annotated[float, Field(allow_inf_nan=False)]

_RATIO = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(um/m|µm/m|ppm|mm/m)?\s*$")
_RATIO_UNITS = {None: 1e-6, "um/m": 1e-6, "µm/m": 1e-6, "ppm": 1e-6, "mm/m": 1e-3}


def _ratio(value: Any) -> float:
    """A distance-proportional error: a bare number is µm per metre; '0.3 um/m', '0.3 ppm', '0.001 mm/m'."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a number of um/m (or '<number> um/m', 'ppm', 'mm/m'), got {value!r}")
    match = _RATIO.match(str(value))
    if match is None:
        raise ValueError(f"cannot read {value!r} as um/m (write e.g. 0.3, '0.3 um/m' or '0.3 ppm')")
    ratio = float(match.group(1)) * _RATIO_UNITS[match.group(2)]
    if not np.isfinite(ratio):
        raise ValueError(f"{value!r} is not finite")
    return ratio


PerMetre = Annotated[float, BeforeValidator(_ratio)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkModel(_Strict):
    """One row of the nominal table; ``beta`` given marks a Hayati–Mirmirani joint (``d`` then 0)."""

    d: LengthMM
    theta: AngleDeg = Field(description="offset added to the joint reading")
    a: LengthMM
    alpha: AngleDeg
    beta: AngleDeg | None = Field(None, description="Hayati–Mirmirani tilt (nominally parallel axes)")


class TrackerPose(_Strict):
    """The robot base in the tracker frame: ``xyz`` (bare: mm), ``rpy`` (bare: deg, R = Rz·Ry·Rx)."""

    xyz: tuple[LengthMM, LengthMM, LengthMM] = (0.0, 0.0, 0.0)
    rpy: tuple[AngleDeg, AngleDeg, AngleDeg] = (0.0, 0.0, 0.0)

    def matrix(self) -> np.ndarray:
        out = np.eye(4)
        out[:3, :3] = Rotation.from_euler("xyz", self.rpy).as_matrix()
        out[:3, 3] = self.xyz
        return out


class NoiseModel(_Strict):
    """The tracker's error, a Gaussian per coordinate with sigma = a + b·L (L: distance to the tracker)."""

    a: LengthMM = Field(ge=0.0, description="constant part (bare: mm; e.g. 5 um)")
    b: PerMetre = Field(0.0, ge=0.0, description="part per metre of distance (bare: um/m)")


class LinearTerm(_Strict):
    """A translation error motion: amplitude · sin(360°/period · q + phase) + N(0, jitter²)."""

    amplitude: LengthMM = 0.0
    period: AngleDeg = Field(2.0 * np.pi, gt=0.0)
    phase: AngleDeg = 0.0
    jitter: LengthMM = Field(0.0, ge=0.0)


class AngularTerm(_Strict):
    """A tilt error motion (about the fixed x or y axis), as :class:`LinearTerm`."""

    amplitude: AngleDeg = 0.0
    period: AngleDeg = Field(2.0 * np.pi, gt=0.0)
    phase: AngleDeg = 0.0
    jitter: AngleDeg = Field(0.0, ge=0.0)


class JointErrorModel(_Strict):
    """Error motions of one joint in its fixed frame ([CirclePoint]'s Err row); missing terms are 0."""

    dx: LinearTerm = LinearTerm()
    dy: LinearTerm = LinearTerm()
    dz: LinearTerm = LinearTerm()
    ex: AngularTerm = AngularTerm()
    ey: AngularTerm = AngularTerm()


class CirclePointModel(_Strict):
    """The top level of a circle-point calibration file (see :mod:`orbitree.calibration`)."""

    calibration: str = Field(min_length=1, description="name, used in outputs")
    description: str = ""
    seed: Count = Field(0, description="seed of the Monte Carlo (--seed overrides)")
    iterations: Count = Field(10_000, ge=1, description="Monte Carlo iterations (--iterations overrides)")
    nominal: list[LinkModel] = Field(min_length=2, description="nominal DH/HM table, one row per joint")
    initial_joints: list[AngleDeg] = Field(description="joint readings at the start (Initpos)")
    robot2tracker: TrackerPose = Field(TrackerPose(), description="the robot base in the tracker frame (SRLT)")
    reflector: list[tuple[LengthMM, LengthMM, LengthMM]] = Field(
        description="reflector on link j, in frame j-1 (z: axis j) at the start of its sweep (Preflector)"
    )
    swept: list[AngleDeg] = Field(description="angle each joint turns through (Angcir)")
    points: list[Annotated[int, Field(strict=True, ge=3)]] = Field(description="stops per joint (Nptos)")
    tracker_noise: NoiseModel = Field(description="measurement error sigma = a + b·L (Ruidomed)")
    joint_errors: list[JointErrorModel] = Field([], description="one entry per joint, or none (Err)")
    tolerance: Finite = Field(0.1, gt=0.0, description="CpK specification: nominal ± tolerance (mm or deg)")
    coverage: Finite = Field(0.95, gt=0.0, lt=1.0, description="probability of the coverage interval")

    @field_validator("swept")
    @classmethod
    def _turns(cls, values: list[float]) -> list[float]:
        for value in values:
            if not 0.0 < abs(value) <= 2.0 * np.pi + 1e-12:
                raise ValueError(f"each swept angle must be nonzero and at most 360 deg, got "
                                 f"{np.degrees(value):g} deg")
        return values


def _per_joint(model: CirclePointModel, source: Source) -> list[Diagnostic]:
    n = len(model.nominal)
    problems = []
    for key in ("initial_joints", "reflector", "swept", "points"):
        if len(getattr(model, key)) != n:
            problems.append(source.at((key,), f"{key}: expected {n} entries (one per joint of 'nominal'), "
                                               f"got {len(getattr(model, key))}"))
    if model.joint_errors and len(model.joint_errors) != n:
        problems.append(source.at(("joint_errors",), f"joint_errors: expected {n} entries (one per joint) or "
                                                     f"none, got {len(model.joint_errors)}"))
    for i, (x, y, _) in enumerate(model.reflector):
        if np.hypot(x, y) < 1e-6:
            problems.append(source.at(("reflector", i), f"reflector[{i}]: on the axis of joint {i + 1} "
                                                        "(x = y = 0): it would not trace a circle"))
    for i, link in enumerate(model.nominal):
        if link.beta is not None and link.d != 0.0:
            problems.append(source.at(("nominal", i, "d"), f"nominal[{i}].d: a Hayati–Mirmirani joint (beta "
                                                           f"given) has d = 0, got {link.d * 1e3:g} mm"))
    return problems


def table_of(model: CirclePointModel) -> DHTable:
    rows = model.nominal
    return DHTable(
        d=tuple(r.d for r in rows), theta_offset=tuple(r.theta for r in rows), a=tuple(r.a for r in rows),
        alpha=tuple(r.alpha for r in rows), beta=tuple(r.beta or 0.0 for r in rows),
        hm=tuple(r.beta is not None for r in rows), name=model.calibration,
    )


def measurement_of(model: CirclePointModel) -> Measurement:
    """The simulated measurement the file describes (SI)."""
    errors = None
    if model.joint_errors:
        terms = [[getattr(joint, name) for name in ERROR_TERMS] for joint in model.joint_errors]
        errors = JointErrors(*(np.array([[getattr(t, f) for t in row] for row in terms])
                               for f in ("amplitude", "period", "phase", "jitter")))
    return Measurement(
        table=table_of(model), q0=np.array(model.initial_joints), swept=np.array(model.swept),
        points=tuple(model.points), reflector=np.array(model.reflector, dtype=float),
        robot2tracker=model.robot2tracker.matrix(), noise_a=model.tracker_noise.a,
        noise_b=model.tracker_noise.b, errors=errors,
    )


def load_circle_point(path: str | Path) -> tuple[CirclePointModel, Measurement]:
    """Load and check a circle-point file, or raise ``MissionError`` (``file:line:col`` diagnostics)."""
    data, source = load_file(Path(path))
    if not isinstance(data, dict):
        raise MissionError([source.at((), f"a calibration file is a mapping of keys, got {type(data).__name__}")])
    try:
        model = CirclePointModel.model_validate(data)
    except ValidationError as exc:
        raise MissionError(pydantic_diagnostics(exc, source, (), "", model=CirclePointModel)) from None
    problems = _per_joint(model, source)
    if problems:
        raise MissionError(problems)
    measurement = measurement_of(model)
    model_problems = check_model(measurement.table, measurement.q_final)
    if model_problems:
        raise MissionError([source.at(("nominal", i), f"nominal[{i}]: {text}") for i, text in model_problems])
    return model, measurement
