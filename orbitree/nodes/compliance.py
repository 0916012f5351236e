"""Complying with contact forces: the wrist wrench, filtered, through the admittance law to a twist.

Shared by the leaves that let the arm yield while something pulls or pushes the tool:
``capture`` (while the hooks close) and ``admittance_dock`` (until the interfaces seat). Each
tick :meth:`AdmittanceLoop.sense` takes the wrist reading (TCP frame) and the TCP pose, turns the
wrench to the base frame at the TCP and filters the fresh readings over ``filter`` with a moving
median, axis by axis (the UR10e's sensor is noisy, ±5 N per reading, see
``orbitree.drivers.sim_ft``; a median also ignores a one-reading spike that a mean would pass on
as a fifth of itself); :meth:`AdmittanceLoop.step` runs the admittance law of
``orbitree.skills.admittance`` on it and returns the twist for ``speed_l``, held to the speed
limits.

The window costs delay: n readings lag by about (n − 1)/2 periods. On a stiff contact the loop's
delay margin is small (``orbitree.skills.admittance.sampled_delay_margin``), so the damping must
be high enough for the window, the sensor's own lag and the tick together.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.quantities import AngularSpeed, Duration, Force, Speed, Torque
from orbitree.skills.admittance import AdmittanceParams, admittance_step
from orbitree.skills.pbvs import saturate_twist
from orbitree.skills.se3 import vector_norm, wrench_tcp_to_base

Six = tuple[float, float, float, float, float, float]


class DeadBand(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    force: Force = Field(3.0, ge=0.0)
    torque: Torque = Field(0.2, ge=0.0)


class Compliance(BaseModel):
    """How a leaf complies: the admittance law, the reading filter and the twist's limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mass: Six = Field((11.25, 11.25, 11.25, 0.5, 0.5, 0.5), description="kg, kg·m² (UR's URScript example)")
    damping: Six = Field((24000.0, 24000.0, 24000.0, 960.0, 960.0, 960.0), description="N·s/m, N·m·s/rad")
    dead_band: DeadBand = DeadBand()
    filter: Duration = Field(0.024, ge=0.0, description="moving median of the wrist readings over this long")
    max_speed: Speed = Field(0.02, gt=0.0, description="limit on the commanded TCP speed")
    max_angular_speed: AngularSpeed = Field(0.2, gt=0.0, description="limit on the commanded TCP rotation rate")
    acceleration: float = Field(2.0, gt=0.0, description="speed_l acceleration, m/s²")
    max_force: Force = Field(80.0, gt=0.0, description="stop and fail at two readings in a row above this")


class AdmittanceLoop:
    """The state of one compliant motion: the reading window, the twist, the law's offset."""

    def __init__(self, law: AdmittanceParams, period: float, filter_s: float, max_speed: float,
                 max_angular_speed: float) -> None:
        self.law = law
        self.period = period
        self.window = max(1, round(filter_s / period))  # readings the median takes
        self.max_speed, self.max_angular_speed = max_speed, max_angular_speed
        self.reset()

    @classmethod
    def from_params(cls, params: Compliance, period: float,
                    stiffness: Six = (0.0,) * 6) -> AdmittanceLoop:
        law = AdmittanceParams(params.mass, params.damping, stiffness, force_dead_band=params.dead_band.force,
                               torque_dead_band=params.dead_band.torque)
        return cls(law, period, params.filter, params.max_speed, params.max_angular_speed)

    def reset(self) -> None:
        self.readings: deque[np.ndarray] = deque(maxlen=self.window)
        self._rows = np.empty((self.window, 6))  # the same readings, a ring the median reads in place
        self._taken = 0  # readings taken since the reset
        self.over = 0  # fresh readings in a row above a force limit
        self.raw_force = 0.0  # the newest reading's force (N)
        self.twist = np.zeros(6)
        self.offset = np.zeros(6)
        self.wrench = np.zeros(6)  # the filtered wrench, base frame at the TCP

    @property
    def delay(self) -> float:
        """What the filter adds to the loop's delay (s): about (n − 1)/2 periods."""
        return 0.5 * (self.window - 1) * self.period

    def sense(self, wrench_tcp: np.ndarray, tcp2base: np.ndarray, fresh: bool = True) -> np.ndarray:
        """Take a reading (a stale one is not counted twice); the filtered wrench, base frame."""
        if fresh or not self.readings:
            reading = wrench_tcp_to_base(np.asarray(wrench_tcp, dtype=float), tcp2base)
            self.readings.append(reading)
            self._rows[self._taken % self.window] = reading
            self._taken += 1
            self.raw_force = vector_norm(reading[:3])
        # the median of the window (of the rows in any order: the same values)
        self.wrench = _column_median(self._rows[: len(self.readings)])
        return self.wrench

    def overloaded(self, limit: float, fresh: bool = True) -> bool:
        """Two fresh readings in a row above ``limit`` (N): raw readings, not the filter, so that
        an oscillation the median would flatten still counts, and one spike does not."""
        if fresh:
            self.over = self.over + 1 if self.raw_force > limit else 0
        return self.over >= 2

    @property
    def ready(self) -> bool:
        """The window is full: the filter can be trusted (a one-reading spike is outvoted)."""
        return len(self.readings) == self.window

    def step(self) -> np.ndarray:
        """One tick of the law on the filtered wrench: the twist to send, within the limits;
        zero until the window is full."""
        if not self.ready:
            return self.twist
        twist, offset = admittance_step(self.wrench, self.twist, self.offset, self.period, self.law)
        # the law goes on from what the arm is told, not from beyond the limits (no wind-up)
        self.twist = saturate_twist(twist, self.max_speed, self.max_angular_speed)
        # np.allclose(twist, self.twist) for finite twists (saturate_twist takes no other), without
        # its isclose machinery: its operations per axis, on Python floats
        close = all(abs(a - b) <= 1e-8 + 1e-5 * abs(b)
                    for a, b in zip(twist.tolist(), self.twist.tolist(), strict=True))
        self.offset = self.offset + self.period * self.twist if not close else offset
        return self.twist


def _column_median(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=0)`` (6,) of a few finite rows (n, 6), on Python floats: per column
    the middle value, or the mean ``(a + b) / 2`` of the middle two (numpy's sum, then its
    division), at a quarter of numpy's cost (a compliant leaf filters every tick). Only a column
    holding both 0.0 and -0.0 as its middle values could differ, in the zero's sign."""
    count = len(rows)
    middle = count // 2
    columns = [sorted(column) for column in zip(*rows.tolist(), strict=True)]
    if count % 2:
        return np.array([column[middle] for column in columns])
    return np.array([(column[middle - 1] + column[middle]) / 2 for column in columns])
