"""Pydantic field types for mission files: quantities with units, blackboard keys, poses.

Each type converts what the author wrote to SI at validation time and documents itself in the
JSON Schema (a number, or a string with one of the accepted units), so editors can complete and
check mission files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    WithJsonSchema,
    field_validator,
)
from scipy.spatial.transform import Rotation

from orbitree.language.units import UNITS, UnitError, finite_si, parse_quantity, si_unit

_NUMBER = r"(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?"


def _quantity_schema(dimension: str, bare: str | None, number: dict[str, Any]) -> dict[str, Any]:
    """A number (with the field's bounds), or a string of a number and one of the dimension's
    units; the string's sign (and zero) are constrained as far as a pattern can say them."""
    units = "(" + "|".join(re.escape(u) for u in sorted(UNITS[dimension], key=len, reverse=True)) + ")"
    low = number.get("exclusiveMinimum", number.get("minimum"))
    sign = r"\+?" if low is not None and low >= 0 else "[-+]?"
    zero = rf"(?!\+?(0+\.?0*|\.0+)([eE][-+]?\d+)?\s*{units}?\s*$)"  # refuses a zero
    not_zero = zero if number.get("exclusiveMinimum") == 0 else ""
    pattern = rf"^\s*{not_zero}{sign}{_NUMBER}\s*{units}?\s*$"
    bare_note = f"bare numbers are {bare}" if bare else "bare numbers are SI"
    return {
        "anyOf": [number, {"type": "string", "pattern": pattern}],
        "description": f"{dimension.replace('_', ' ')}: a number or '<number> <unit>' "
        f"with unit in {', '.join(UNITS[dimension])}; {bare_note}",
    }


def _quantity_validator(dimension: str, bare: str | None = None):
    def convert(value: Any) -> float:
        try:
            return parse_quantity(value, dimension, bare)
        except UnitError as exc:
            raise ValueError(str(exc)) from None

    return convert


@dataclass(frozen=True)
class Dimension:
    """Marks a field type as a quantity: its dimension, and the unit of a bare number (None: SI)."""

    name: str
    bare: str | None = None

    @property
    def bare_unit(self) -> str:
        return self.bare or si_unit(self.name)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        # the float's own schema carries the field's bounds (gt=0 -> exclusiveMinimum); a bound
        # given inside a union (``Annotated[Duration, Field(ge=0)] | None``) arrives unrenamed
        number = dict(handler(core_schema))
        for raw, keyword in (("ge", "minimum"), ("gt", "exclusiveMinimum"), ("le", "maximum"),
                             ("lt", "exclusiveMaximum")):
            if raw in number:
                number[keyword] = number.pop(raw)
        return _quantity_schema(self.name, self.bare, number)


@dataclass(frozen=True)
class AnyUnit:
    """Marks a float that may be written with a unit of any dimension (a condition's threshold:
    its key decides the dimension, checked by the loader)."""


def quantity(dimension: str, bare: str | None = None) -> Any:
    """An annotated float of ``dimension`` accepting ``"<number> <unit>"``, stored in SI."""
    return Annotated[
        float,
        Dimension(dimension, bare),
        BeforeValidator(_quantity_validator(dimension, bare)),
    ]


Length = quantity("length")
Angle = quantity("angle")
AngleDeg = quantity("angle", bare="deg")
Duration = quantity("time")
Frequency = quantity("frequency")
Speed = quantity("speed")
AngularSpeed = quantity("angular_speed")
Force = quantity("force")
Torque = quantity("torque")
Mass = quantity("mass")

_ANY_UNIT = {unit: (dim, factor) for dim, table in UNITS.items() for unit, factor in table.items()}
_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S+)\s*$")


def any_quantity(value: Any) -> Any:
    """Convert a ``"<number> <unit>"`` string of any known dimension to SI; leave others alone.

    Used where a field compares against blackboard values whose dimension the loader cannot
    know (``condition: {key: /servo/error_norm, below: 1 mm}``). Lists are converted element by
    element (``[350 mm, 2 cm]`` -> ``[0.35, 0.02]``).
    """
    if isinstance(value, list):
        return [any_quantity(item) for item in value]
    if isinstance(value, str):
        match = _NUMBER_UNIT.match(value)
        if match and match.group(2) in _ANY_UNIT:
            dimension, factor = _ANY_UNIT[match.group(2)]
            try:
                return finite_si(match.group(1), factor, value, dimension)
            except UnitError as exc:
                raise ValueError(str(exc)) from None
        if match:
            raise ValueError(f"unknown unit {match.group(2)!r} in {value!r}")
    return value


KEY_PATTERN = r"^(/[A-Za-z_][A-Za-z0-9_]*)+$"

_KEY = re.compile(KEY_PATTERN)


def _check_key(value: str) -> str:
    if not _KEY.match(value):
        raise ValueError(
            f"{value!r} is not a blackboard key: write an absolute path of names made of "
            "letters, digits and '_', e.g. /robot/arm/tcp_pose"
        )
    return value


BlackboardKey = Annotated[
    str,
    AfterValidator(_check_key),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": KEY_PATTERN,
            "description": "absolute blackboard key such as /robot/arm/tcp_pose",
        }
    ),
]


class Pose(BaseModel):
    """A pose as authors write it: ``{xyz: [x, y, z], rpy: [roll, pitch, yaw]}``.

    ``xyz`` is in metres unless units are given; ``rpy`` is in degrees unless units are given
    (roboticists write angles of poses in degrees). Roll, pitch and yaw are extrinsic rotations
    about the fixed x, y and z axes (R = Rz(yaw) Ry(pitch) Rx(roll)). A six-element list
    ``[x, y, z, roll, pitch, yaw]`` is accepted with the same units.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    xyz: tuple[Length, Length, Length] = (0.0, 0.0, 0.0)
    rpy: tuple[AngleDeg, AngleDeg, AngleDeg] = (0.0, 0.0, 0.0)

    @field_validator("xyz", "rpy", mode="before")
    @classmethod
    def _three(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and len(value) != 3:
            raise ValueError(f"expected 3 values, got {len(value)}")
        return value

    def matrix(self) -> np.ndarray:
        """The (4, 4) homogeneous transform."""
        out = np.eye(4)
        out[:3, :3] = Rotation.from_euler("xyz", self.rpy).as_matrix()
        out[:3, 3] = self.xyz
        return out


def _pose_from_list(value: Any) -> Any:
    if isinstance(value, list | tuple):
        if len(value) != 6:
            raise ValueError(
                f"a pose list needs 6 values [x, y, z, roll, pitch, yaw], got {len(value)}"
            )
        return {"xyz": list(value[:3]), "rpy": list(value[3:])}
    return value


class _PoseListToo:
    """The schema of a pose field says what ``_pose_from_list`` takes: the mapping, or 6 values."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        six = {"type": "array", "minItems": 6, "maxItems": 6, "items": {"type": ["number", "string"]},
               "description": "[x, y, z, roll, pitch, yaw]: metres and degrees unless units are given"}
        return {"anyOf": [handler(core_schema), six]}


PoseField = Annotated[Pose, BeforeValidator(_pose_from_list), _PoseListToo]


SIValue = Annotated[Any, BeforeValidator(any_quantity)]
