"""What the simulated UR10e is built with (:class:`~orbitree.drivers.sim_robot.SimRobot`).

:class:`SimRobotLimits`: the joint speed, acceleration and range limits and the TCP speed limits
(SI units); :data:`UR10E_HOME_Q`: a common start pose; ``WrenchSource``: the external wrench the
wrist sensor sees (a contact model); :func:`perturbed_table`: a real arm's kinematic calibration
errors, drawn around the nominal DH table (the ``true_table`` the simulated arm is built to while
its controller computes with the nominal one). :mod:`orbitree.drivers.sim_robot` re-exports these
names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from orbitree.skills import kinematics as kin

WrenchSource = Callable[[float, np.ndarray, np.ndarray], np.ndarray]
"""``(t, tcp2base, tcp_twist) -> wrench (6,)`` in the TCP frame, N and N·m."""

#: A common UR start pose: elbow up, tool pointing down (rad).
UR10E_HOME_Q: tuple[float, ...] = tuple(np.deg2rad([0.0, -90.0, 90.0, -90.0, -90.0, 0.0]))


@dataclass(frozen=True)
class SimRobotLimits:
    """Speed, acceleration and position limits of the simulated arm (SI units)."""

    joint_speed: tuple[float, ...] = tuple(kin.UR10E_MAX_JOINT_SPEED)
    joint_acceleration: float = 8.0
    joint_lower: tuple[float, ...] = tuple(kin.UR10E_JOINT_LOWER)
    joint_upper: tuple[float, ...] = tuple(kin.UR10E_JOINT_UPPER)
    tcp_speed: float = 1.0
    tcp_angular_speed: float = math.pi

    def __post_init__(self) -> None:
        for key in ("joint_acceleration", "tcp_speed", "tcp_angular_speed"):
            if not getattr(self, key) > 0.0:
                raise ValueError(f"SimRobotLimits.{key} must be > 0, got {getattr(self, key)}")
        if min(self.joint_speed) <= 0.0:
            raise ValueError(f"joint_speed must be > 0, got {self.joint_speed}")
        if any(lo >= hi for lo, hi in zip(self.joint_lower, self.joint_upper, strict=True)):
            raise ValueError("joint_lower must be below joint_upper for every joint")


def perturbed_table(
    table: kin.DHTable, rng: np.random.Generator, length_std: float, angle_std: float
) -> kin.DHTable:
    """``table`` with every ``d`` and ``a`` moved by N(0, ``length_std``) (m) and every
    ``theta_offset`` and ``alpha`` by N(0, ``angle_std``) (rad): a real arm's small deviations
    from its nominal kinematics, drawn from ``rng``. A Hayati–Mirmirani joint keeps ``d = 0`` and
    gets the tilt ``beta`` moved instead."""
    n = table.n_joints
    lengths = rng.normal(0.0, length_std, (2, n))
    angles = rng.normal(0.0, angle_std, (3, n))
    hm = np.asarray(table.hm)
    return kin.DHTable(
        d=tuple(np.add(table.d, np.where(hm, 0.0, lengths[0]))),
        theta_offset=tuple(np.add(table.theta_offset, angles[0])),
        a=tuple(np.add(table.a, lengths[1])),
        alpha=tuple(np.add(table.alpha, angles[1])),
        beta=tuple(np.add(table.beta, np.where(hm, angles[2], 0.0))),
        hm=table.hm, name=f"{table.name} (as built)",
    )
