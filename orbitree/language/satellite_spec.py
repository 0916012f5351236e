"""The parts of a satellite target (``targets.<name>.kind: satellite``).

```yaml
targets:
  mockup:
    kind: satellite
    pose: {xyz: [1.2, 0, 0.4], rpy: [0, 0, 0]}      # centre of mass and body axes, world frame
    mass: 159 kg
    inertia: {principal: [18, 18, 20], products: [0, 0, 0]}   # kg*m^2, body frame
    spin: {rate: 2 rpm, axis: [0, 0, 1]}             # body axis; gimbal: the bearing's axis
    mount: gimbal                                     # or free
    bearing: {viscous: 0.02 N*m*s/rad, coulomb: 0.01 N*m}
    fixtures:
      pad_left: {pose: {xyz: [0, 0.5, 0], rpy: [-90, 0, 0]}, radius: 50 mm}   # z: the pad's normal
    state_sensor: {rate: 2 Hz, latency: 100 ms, sigma_position: 2 mm, sigma_attitude: 0.5 deg}
```
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from orbitree.language.quantities import (
    Angle,
    AngularSpeed,
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
from orbitree.skills.satellite import check_inertia

Inertia = quantity("inertia")
RotationalDamping = quantity("rotational_damping")
Stiffness = quantity("stiffness")
Damping = quantity("damping")
DEG = float(np.pi / 180.0)

SATELLITE_FIELDS = ("mass", "inertia", "fixtures", "spin", "mount", "bearing", "state_sensor")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InertiaSpec(_Strict):
    principal: tuple[Inertia, Inertia, Inertia] = Field(description="Ixx, Iyy, Izz (kg*m^2)")
    products: tuple[Inertia, Inertia, Inertia] = Field(
        (0.0, 0.0, 0.0), description="Ixy, Ixz, Iyz: the tensor's off-diagonal entries as written (kg*m^2)")

    @property
    def matrix(self) -> tuple[tuple[float, ...], ...]:
        (xx, yy, zz), (xy, xz, yz) = self.principal, self.products
        return ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))

    @model_validator(mode="after")
    def _physical(self) -> InertiaSpec:
        check_inertia(np.array(self.matrix))
        return self


def _inertia_forms(value: Any) -> Any:
    """``[Ixx, Iyy, Izz]`` or a 3x3 matrix -> ``{principal, products}``."""
    if isinstance(value, list | tuple):
        if len(value) == 3 and all(isinstance(row, list | tuple) for row in value):
            if any(len(row) != 3 for row in value):
                raise ValueError("an inertia matrix has 3 rows of 3 values")
            from orbitree.language.units import parse_quantity

            m = [[parse_quantity(v, "inertia") for v in row] for row in value]
            if not np.allclose(m, np.transpose(m)):
                raise ValueError(f"an inertia matrix is symmetric, got {m}")
            return {"principal": [m[0][0], m[1][1], m[2][2]], "products": [m[0][1], m[0][2], m[1][2]]}
        if len(value) != 3:
            raise ValueError(f"inertia: give 3 principal moments [Ixx, Iyy, Izz] or a 3x3 matrix, "
                             f"got {len(value)} values")
        return {"principal": list(value)}
    return value


_INERTIA_NUMBER = {"anyOf": [{"type": "number"}, {"type": "string"}], "description": "kg*m^2"}
InertiaField = Annotated[
    InertiaSpec,
    BeforeValidator(_inertia_forms),
    WithJsonSchema({
        "description": "inertia about the centre of mass, body frame (kg*m^2): [Ixx, Iyy, Izz], a 3x3 "
                       "matrix, or {principal: [Ixx, Iyy, Izz], products: [Ixy, Ixz, Iyz]}",
        "anyOf": [
            {"type": "array", "items": _INERTIA_NUMBER, "minItems": 3, "maxItems": 3},
            {"type": "array", "minItems": 3, "maxItems": 3,
             "items": {"type": "array", "items": _INERTIA_NUMBER, "minItems": 3, "maxItems": 3}},
            {"type": "object", "additionalProperties": False, "required": ["principal"],
             "properties": {"principal": {"type": "array", "items": _INERTIA_NUMBER, "minItems": 3, "maxItems": 3},
                            "products": {"type": "array", "items": _INERTIA_NUMBER,
                                         "minItems": 3, "maxItems": 3}}},
        ],
    }),
]


def _unit_axis(value: tuple[float, float, float]) -> tuple[float, float, float]:
    norm = float(np.linalg.norm(value))
    if norm < 1e-9:
        raise ValueError("an axis needs a direction: [0, 0, 0] has none")
    return tuple(float(v) / norm for v in value)  # type: ignore[return-value]


class SpinSpec(_Strict):
    rate: AngularSpeed = Field(description="spin rate about 'axis' (e.g. 2 rpm)")
    axis: tuple[float, float, float] = Field((0.0, 0.0, 1.0), description="spin axis, body frame (normalised)")

    @field_validator("axis")
    @classmethod
    def _axis(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        return _unit_axis(value)


class BearingSpec(_Strict):
    """The gimbal's bearing; defaults: assumed, so that a 159 kg mockup spinning at 3 rpm stops in
    about 8 minutes (the JPL mockup "can spin freely on a gimbal for several minutes")."""

    viscous: RotationalDamping = Field(0.02, ge=0.0, description="viscous friction torque per rate")
    coulomb: Torque = Field(0.01, ge=0.0, description="Coulomb (dry) friction torque")


class FixtureSpec(_Strict):
    """A grapple pad (Velcro disc) on the satellite; contact defaults are assumptions (see README)."""

    pose: PoseField = Field(default_factory=Pose, description="pad frame in the body frame; z: its outward normal")
    shape: Literal["disc"] = Field("disc", description="a flat disc (a Velcro pad)")
    radius: Length = Field(0.05, gt=0.0, description="disc radius")
    stiffness: Stiffness = Field(5000.0, gt=0.0, description="pad and tool handle in series")
    damping: Damping = Field(100.0, ge=0.0, description="contact damping")
    friction: float = Field(0.5, ge=0.0, le=2.0, description="Coulomb friction coefficient, tool on pad")
    engage_force: Force = Field(20.0, gt=0.0, description="pressing force at which the Velcro engages")
    hold_force: Force = Field(100.0, gt=0.0, description="pull along the normal that tears the Velcro open")


class StateSensorSpec(_Strict):
    """The JPL vision's state messages (about 2 Hz in the seed); latency and noise: assumptions."""

    rate: Frequency = Field(2.0, gt=0.0, le=1000.0, description="messages per second")
    latency: Duration = Field(0.1, ge=0.0, le=10.0, description="measurement to delivery")
    sigma_position: Length = Field(0.002, ge=0.0, description="std of the position, per axis")
    sigma_attitude: Angle = Field(
        0.5 * DEG, ge=0.0, description="std of the attitude (rotation vector), per axis")
    sigma_velocity: Speed = Field(0.002, ge=0.0, description="std of the velocity, per axis")
    sigma_angular_velocity: AngularSpeed = Field(0.2 * DEG, ge=0.0,
                                                 description="std of the angular velocity, per axis")
