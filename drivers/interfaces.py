"""Driver interfaces: what the executive and the behaviours may ask of hardware.

Every backend (simulated or real) implements one of these small protocols, so a mission runs
unchanged on the simulated world and on a Universal Robots arm.

Conventions (the whole project follows them):

* units: metres, radians, seconds, newtons, newton-metres;
* poses are 4x4 homogeneous matrices named ``A2B`` (``tcp2base`` maps TCP coordinates to base
  coordinates);
* twists are 6-vectors ``[vx, vy, vz, wx, wy, wz]`` of the TCP expressed in the robot base frame
  (the convention of URScript's ``speedl``);
* wrenches are 6-vectors ``[fx, fy, fz, tx, ty, tz]`` measured at the wrist sensor and expressed
  in the TCP frame.

Nothing here connects to anything: ``__init__`` stores configuration, ``setup()`` connects.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class RobotState:
    """One reading of an arm, taken at ``stamp`` (s, the executive's clock)."""

    stamp: float
    q: np.ndarray  # (6,) joint positions, rad
    qd: np.ndarray  # (6,) joint velocities, rad/s
    tcp2base: np.ndarray  # (4, 4) TCP pose in the base frame
    tcp_twist: np.ndarray  # (6,) TCP twist in the base frame, m/s and rad/s
    wrench: np.ndarray  # (6,) wrist force/torque in the TCP frame, N and N·m
    protective_stop: bool = False
    moving: bool = False  # a move_l / move_j started by the caller has not finished
    # when the F/T sensor took ``wrench`` (s); None means ``stamp``. A sensor that stopped
    # delivering (the ft_dropout fault) repeats its last wrench with its old stamp.
    wrench_stamp: float | None = None

    def __post_init__(self) -> None:
        if self.wrench_stamp is None:
            object.__setattr__(self, "wrench_stamp", self.stamp)


class DriverDisconnected(ConnectionError):
    """A driver lost its connection: every call raises this until it is reconnected.

    The executive skips the readings of a disconnected device (its blackboard values go stale);
    a command a leaf sends through the device proxy is lost and logged (``command_lost``), as on
    a real network, and the safety monitor stops the mission when the readings go stale.
    """


@runtime_checkable
class Robot(Protocol):
    """A 6-axis arm with a wrist force/torque sensor."""

    name: str

    def setup(self) -> None:
        """Connect and check the arm can be commanded; raise on failure."""

    def shutdown(self) -> None:
        """Stop motion and release the connection. Safe to call twice."""

    def read(self) -> RobotState:
        """Current state; never blocks for more than one control period."""

    def speed_l(self, twist: np.ndarray, acceleration: float = 0.5) -> None:
        """Command a TCP twist (6,) in the base frame; must be refreshed every tick."""

    def servo_l(self, tcp2base: np.ndarray) -> None:
        """Servo the TCP towards a (4, 4) pose in the base frame (one control period)."""

    def move_l(self, tcp2base: np.ndarray, speed: float = 0.25, acceleration: float = 1.2) -> None:
        """Start a straight-line move; returns at once, poll ``motion_done``."""

    def move_j(self, q: np.ndarray, speed: float = 1.05, acceleration: float = 1.4) -> None:
        """Start a joint move to ``q`` (6,) rad; returns at once, poll ``motion_done``."""

    def motion_done(self) -> bool:
        """True when the last move_l / move_j has finished (or none was started)."""

    def stop(self) -> None:
        """Decelerate to rest now (any motion mode)."""

    def zero_ft(self) -> None:
        """Zero the force/torque sensor at the current load."""


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole model with OpenCV's distortion coefficients (k1, k2, p1, p2, k3)."""

    camera_matrix: np.ndarray  # (3, 3)
    dist_coeffs: np.ndarray  # (5,)
    width: int
    height: int


@dataclass(frozen=True)
class Frame:
    """One image (H, W) uint8 grey or (H, W, 3) BGR, taken at ``stamp`` (s)."""

    image: np.ndarray
    stamp: float
    meta: dict = field(default_factory=dict)

    def with_meta(self, meta: dict) -> Frame:
        """The same frame with ``meta`` instead of its own."""
        return Frame(self.image, self.stamp, meta)


@runtime_checkable
class Camera(Protocol):
    name: str
    intrinsics: CameraIntrinsics

    def setup(self) -> None:
        """Open the device; raise on failure."""

    def shutdown(self) -> None:
        """Release the device. Safe to call twice."""

    def read(self) -> Frame | None:
        """The latest frame, or None when no new frame is available."""


class LatchState(enum.Enum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"
    OPENING = "opening"
    FAULT = "fault"


@runtime_checkable
class Latch(Protocol):
    """The docking hooks of the active interface."""

    name: str

    def setup(self) -> None: ...

    def shutdown(self) -> None: ...

    def close(self) -> None:
        """Start closing the hooks; returns at once, poll ``state``."""

    def open(self) -> None:
        """Start opening the hooks; returns at once, poll ``state``."""

    def state(self) -> LatchState: ...
