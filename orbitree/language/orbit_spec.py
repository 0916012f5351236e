"""A mission's ``orbit:`` section: when, where the target flies, and where the servicer is.

```yaml
orbit:
  epoch: 2024-03-01T12:00:00Z        # UTC, ISO 8601 (Z or an offset); mission time 0
  target: mockup                     # the target (in 'targets:') this orbit is
  kepler: {semi_major_axis: 6928 km, eccentricity: 0.001, inclination: 51.6 deg,
           raan: 0 deg, arg_perigee: 0 deg, true_anomaly: 0 deg}
  # or: tle: ["1 25544U 98067A ...", "2 25544  51.64 ..."]   (epoch: the TLE's when omitted)
  servicer: {position: [0, -20 m, 0], velocity: [0, 0, 0]}   # relative to the target, its LVLH
```
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from orbitree.language.quantities import AngleDeg, Length, Speed
from orbitree.skills import orbit as orb

EARTH_RADIUS_M = 6_378_137.0  # WGS-84 equatorial radius


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_epoch(value: Any) -> dt.datetime:
    """A UTC instant from ISO 8601 text with its zone (``2024-03-01T12:00:00Z``, ``...+00:00``) or
    an aware datetime (YAML reads unquoted timestamps as such); ValueError otherwise."""
    example = "an ISO 8601 UTC time such as 2024-03-01T12:00:00Z"
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise ValueError(f"{value!r} is not {example}") from None
    else:
        raise ValueError(f"expected {example}, got {type(value).__name__}")
    if when.tzinfo is None:
        raise ValueError(f"{str(value)!r} has no time zone: write it in UTC with a Z, e.g. 2024-03-01T12:00:00Z")
    return when.astimezone(dt.UTC)


Epoch = Annotated[dt.datetime, BeforeValidator(parse_epoch)]


def _line(number: int):
    def check(line: str) -> str:
        orb.check_tle_line(number, line)
        return line

    return Annotated[str, AfterValidator(check)]


TleLine1 = _line(1)
TleLine2 = _line(2)


class KeplerSpec(_Strict):
    semi_major_axis: Length = Field(gt=0.0, description="a (e.g. 6928 km)")
    eccentricity: float = Field(0.0, ge=0.0, description="e, 0 <= e < 1")
    inclination: AngleDeg = Field(0.0, description="i (deg unless units are given)")
    raan: AngleDeg = Field(0.0, description="right ascension of the ascending node")
    arg_perigee: AngleDeg = Field(0.0, description="argument of perigee")
    true_anomaly: AngleDeg = Field(0.0, description="true anomaly at the epoch")

    @field_validator("eccentricity")
    @classmethod
    def _ellipse(cls, e: float) -> float:
        if e >= 1.0:
            raise ValueError(f"eccentricity {e:g} >= 1 is not a closed orbit (an ellipse needs 0 <= e < 1)")
        return e

    @model_validator(mode="after")
    def _above_ground(self) -> KeplerSpec:
        perigee = self.semi_major_axis * (1.0 - self.eccentricity)
        if perigee <= EARTH_RADIUS_M:
            raise ValueError(f"perigee radius {perigee / 1e3:.0f} km is inside the Earth "
                             f"({EARTH_RADIUS_M / 1e3:.0f} km): semi_major_axis is from the Earth's centre")
        return self


class ServicerSpec(_Strict):
    position: tuple[Length, Length, Length] = Field(
        (0.0, 0.0, 0.0),
        description="servicer relative to the target, target LVLH (x radial, y along-track, z normal)")
    velocity: tuple[Speed, Speed, Speed] = Field((0.0, 0.0, 0.0), description="its velocity in that frame")


class OrbitSpec(_Strict):
    epoch: Epoch | None = Field(None, description="UTC of mission time 0, ISO 8601 (default: the TLE's epoch)")
    target: str = Field(description="the target (declared in 'targets:') flying this orbit")
    kepler: KeplerSpec | None = Field(None, description="the target's Keplerian elements (two-body, ECI)")
    tle: tuple[TleLine1, TleLine2] | None = Field(
        None, description="the target's two-line element set (SGP4, TEME)")
    servicer: ServicerSpec = Field(default_factory=ServicerSpec, description="servicer's state, target LVLH (CW)")

    @field_validator("tle", mode="before")
    @classmethod
    def _two_lines(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [line for line in value.strip().splitlines() if line.strip()]
        if isinstance(value, list | tuple) and len(value) == 3 and all(isinstance(v, str) for v in value):
            value = value[1:] if not value[0].startswith("1 ") else value  # a title line (3LE) is allowed
        if isinstance(value, list | tuple) and len(value) != 2:
            raise ValueError(f"a TLE has two lines, got {len(value)}")
        return value

    @field_validator("tle", mode="after")
    @classmethod
    def _one_satellite(cls, value: tuple[str, str] | None) -> tuple[str, str] | None:
        if value is not None:
            orb.check_tle(*value)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> OrbitSpec:
        if (self.kepler is None) == (self.tle is None):
            raise ValueError("give the target's orbit as 'kepler:' or as 'tle:' (one of them)")
        if self.tle is not None:
            try:
                orb.sgp4_state(*self.tle, self.when())
            except ValueError as error:
                raise ValueError(f"tle: {error}") from None
        elif self.epoch is None:
            raise ValueError("'kepler:' elements need an 'epoch:' (UTC, e.g. 2024-03-01T12:00:00Z)")
        return self

    def when(self) -> dt.datetime:
        """The epoch: given, or the TLE's."""
        if self.epoch is not None:
            return self.epoch
        assert self.tle is not None
        return orb.tle_epoch(*self.tle)

    def relative0(self) -> list[float]:
        return [*self.servicer.position, *self.servicer.velocity]

    def period_s(self) -> float:
        if self.kepler is not None:
            return 2.0 * math.pi / orb.mean_motion(self.kepler.semi_major_axis)
        from sgp4.api import WGS72, Satrec

        assert self.tle is not None
        return 2.0 * math.pi / (Satrec.twoline2rv(*self.tle, WGS72).no_kozai / 60.0)
