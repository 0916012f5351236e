"""The orbits of the simulated world: the target's (Kepler or SGP4) and the servicer's about it.

Mission time ``t`` (s) is UTC ``epoch + t``. The target's orbit comes from Keplerian elements
(two-body, ``orbitree.skills.orbit.propagate_kepler``: ECI) or from a two-line element set
(SGP4: TEME, the frame SGP4 works in; the LVLH frame and the relative state do not depend on
the choice of inertial frame). The servicer's state relative to the target, in the target's
LVLH frame, follows Clohessy–Wiltshire from its initial value (exact for a circular target orbit;
for an eccentric one an approximation good to the order of e times the separation).

The simulated workspace's axes are the servicer's LVLH axes (the simulation frame of
OnOrbitROS, [OnOrbitROS] in the README's Sources, with LVLH orientation): the servicer holds an
LVLH-aligned attitude, and a body's attitude in the workspace is its attitude relative to LVLH.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from orbitree.skills import orbit as orb

StateFn = Callable[[float], tuple[np.ndarray, np.ndarray]]  # mission time -> (r, v) inertial, m, m/s


@dataclass
class OrbitModel:
    """``target_state(t)``: the target's inertial state; ``relative0`` (6,): the servicer's
    position (m) and velocity (m/s) relative to the target, target LVLH, at t = 0."""

    epoch: dt.datetime
    target_state: StateFn
    relative0: np.ndarray
    mean_motion: float  # rad/s, of the target's orbit (CW's n)
    target: str = "target"

    @classmethod
    def kepler(cls, epoch: dt.datetime, a: float, e: float, i: float, raan: float, argp: float, nu: float,
               relative0: np.ndarray, target: str = "target") -> OrbitModel:
        def state(t: float) -> tuple[np.ndarray, np.ndarray]:
            return orb.propagate_kepler(a, e, i, raan, argp, nu, t)

        return cls(epoch, state, np.asarray(relative0, float), orb.mean_motion(a), target)

    @classmethod
    def tle(cls, epoch: dt.datetime, line1: str, line2: str, relative0: np.ndarray,
            target: str = "target") -> OrbitModel:
        from sgp4.api import WGS72, Satrec

        orb.check_tle(line1, line2)
        n = Satrec.twoline2rv(line1, line2, WGS72).no_kozai / 60.0  # rad/min -> rad/s

        def state(t: float) -> tuple[np.ndarray, np.ndarray]:
            return orb.sgp4_state(line1, line2, epoch + dt.timedelta(seconds=t))

        return cls(epoch, state, np.asarray(relative0, float), n, target)

    def utc(self, t: float) -> dt.datetime:
        return self.epoch + dt.timedelta(seconds=t)

    def relative(self, t: float) -> np.ndarray:
        """The servicer's state (6,) relative to the target in the target's LVLH frame (CW)."""
        return orb.cw_propagate(self.relative0, self.mean_motion, t)

    def states(self, t: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Inertial (r, v) of ``target`` and ``servicer`` at mission time ``t``."""
        r, v = self.target_state(t)
        rotation = orb.lvlh_frame(r, v)
        omega = np.cross(r, v) / float(r @ r)
        rel = self.relative(t)
        dr = rotation @ rel[:3]
        return {"target": (r, v), "servicer": (r + dr, v + rotation @ rel[3:] + np.cross(omega, dr))}
