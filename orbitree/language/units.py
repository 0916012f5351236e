"""Quantities with units in mission files: ``350 mm``, ``1.5 deg``, ``2 rpm``, ``100 ms``, ``5 N``.

Mission authors write values with their units; code only ever sees SI (metres, radians,
seconds, newtons). A bare number is already SI, except where a field documents otherwise
(the ``rpy`` angles of a pose are degrees, as roboticists write them).

The vocabulary is closed on purpose. A general units library (pint) treats the radian as
dimensionless, so it would accept ``duration: 3 deg`` as ``3 rad``-seconds-free nonsense and
``rate_hz: 2 rpm`` as a frequency; here angle is its own dimension and every field states the
one it expects. It also keeps ``orbitree validate`` free of pint's half-second start-up.
"""

from __future__ import annotations

import math
import re

# dimension name -> {unit spelling: factor to SI}
UNITS: dict[str, dict[str, float]] = {
    "length": {"m": 1.0, "cm": 1e-2, "mm": 1e-3, "um": 1e-6, "km": 1e3, "in": 0.0254},
    "angle": {"rad": 1.0, "mrad": 1e-3, "deg": math.pi / 180.0, "°": math.pi / 180.0},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0},
    "frequency": {"Hz": 1.0, "kHz": 1e3},
    "speed": {"m/s": 1.0, "mm/s": 1e-3, "cm/s": 1e-2},
    "acceleration": {"m/s^2": 1.0, "mm/s^2": 1e-3},
    "angular_speed": {
        "rad/s": 1.0,
        "deg/s": math.pi / 180.0,
        "rpm": 2.0 * math.pi / 60.0,
    },
    "angular_acceleration": {"rad/s^2": 1.0, "deg/s^2": math.pi / 180.0},
    "force": {"N": 1.0, "kN": 1e3, "mN": 1e-3},
    "torque": {"N*m": 1.0, "Nm": 1.0, "N.m": 1.0, "mNm": 1e-3},
    "mass": {"kg": 1.0, "g": 1e-3, "lb": 0.45359237},
    "stiffness": {"N/m": 1.0, "N/mm": 1e3},
    "damping": {"N*s/m": 1.0, "Ns/m": 1.0},
    "pixels": {"px": 1.0},
    "inertia": {"kg*m^2": 1.0, "kg.m^2": 1.0, "kgm^2": 1.0, "kg·m²": 1.0},
    "rotational_damping": {"N*m*s/rad": 1.0, "Nms/rad": 1.0, "N·m·s/rad": 1.0},
}

_SI_NAME = {
    "length": "m",
    "angle": "rad",
    "time": "s",
    "frequency": "Hz",
    "speed": "m/s",
    "acceleration": "m/s^2",
    "angular_speed": "rad/s",
    "angular_acceleration": "rad/s^2",
    "force": "N",
    "torque": "N*m",
    "mass": "kg",
    "stiffness": "N/m",
    "damping": "N*s/m",
    "pixels": "px",
    "inertia": "kg*m^2",
    "rotational_damping": "N*m*s/rad",
}

_UNIT_DIMENSION = {unit: dim for dim, table in UNITS.items() for unit in table}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d].*?)?\s*$")

QUANTITY_PATTERN = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*\S*\s*$"


class UnitError(ValueError):
    """A quantity string that cannot be read, or has the wrong dimension."""


def dimension_of(text: object) -> str | None:
    """The dimension of a ``"<number> <unit>"`` string (``"30 mm"`` -> ``length``); None for a
    bare number or anything that is not a quantity."""
    if not isinstance(text, str):
        return None
    match = _QUANTITY.match(text)
    if match is None or match.group(2) is None:
        return None
    return _UNIT_DIMENSION.get(match.group(2).strip())


def si_unit(dimension: str) -> str:
    """The SI unit code works in for ``dimension`` (``time`` -> ``s``)."""
    return _SI_NAME[dimension]


def units_for(dimension: str) -> list[str]:
    """Accepted unit spellings for ``dimension``, SI first."""
    return list(UNITS[dimension])


def parse_quantity(value: object, dimension: str, bare_unit: str | None = None) -> float:
    """Convert ``value`` (a number or ``"<number> <unit>"``) of ``dimension`` to SI.

    ``bare_unit`` is the unit a bare number is read in (default: the SI unit).

    >>> parse_quantity("350 mm", "length")
    0.35
    """
    if dimension not in UNITS:
        raise KeyError(f"unknown dimension {dimension!r}")
    table = UNITS[dimension]
    if isinstance(value, bool):
        raise UnitError(f"expected a {_describe(dimension)}, got a boolean")
    if isinstance(value, int | float):
        return finite_si(value, table[bare_unit] if bare_unit else 1.0, value, dimension)
    if not isinstance(value, str):
        raise UnitError(f"expected a {_describe(dimension)}, got {type(value).__name__}")
    match = _QUANTITY.match(value)
    if match is None:
        raise UnitError(f"cannot read {value!r} as a {_describe(dimension)}")
    number, unit = match.group(1), match.group(2)
    if unit is None:
        return finite_si(number, table[bare_unit] if bare_unit else 1.0, value, dimension)
    unit = unit.strip()
    if unit in table:
        return finite_si(number, table[unit], value, dimension)
    other = _UNIT_DIMENSION.get(unit)
    if other is not None:
        raise UnitError(
            f"{value!r} is in units of {other.replace('_', ' ')}, expected a {_describe(dimension)}"
        )
    raise UnitError(f"unknown unit {unit!r} in {value!r}; expected a {_describe(dimension)}")


def finite_si(number: int | float | str, factor: float, written: object, dimension: str | None = None) -> float:
    """``number * factor`` as a float, or ``UnitError`` when that is not finite: a quantity is a
    finite number (``1e400 mm``, ``.inf`` or ``.nan`` would reach the drivers as inf or NaN)."""
    try:
        value = float(number) * factor
    except OverflowError:  # an integer beyond any float
        value = math.inf
    if not math.isfinite(value):
        what = f"a finite {dimension.replace('_', ' ')}" if dimension else "a finite quantity"
        shown = repr(written) if len(repr(written)) <= 30 else repr(written)[:30] + "..."
        raise UnitError(f"{shown} is not {what}: quantities must be finite numbers")
    return value


def _describe(dimension: str) -> str:
    spellings = ", ".join(units_for(dimension))
    return (
        f"{dimension.replace('_', ' ')} (a number in {_SI_NAME[dimension]} or one of: {spellings})"
    )
