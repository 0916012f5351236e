"""Capture envelope of a docking interface: limits as data, final error, inside / violated axes.

Frames (poses (4, 4), ``A2B``):

* ``target``: the passive interface's frame (for SIROM, the board frame of the SIROM paper [SIROM]: origin
  at the connection triangle's centre, z out of the face);
* ``tcp``: the active interface mounted as the robot's tool;
* ``tcp2target_docked``: the TCP pose in the target frame when the two interfaces are fully
  coupled (zero error). :data:`SIROM_TCP2TARGET_DOCKED` assumes coincident origins with the tool z
  axis pointing into the passive face (a half turn about x); a real cell takes it from the
  interface drawings or a taught pose.

**Envelope error** (:func:`envelope_error`), in the *target* frame's axes:

* ``x, y, z``: position of the current TCP minus its docked position, ``tcp2target[:3, 3] −
  tcp2target_docked[:3, 3]``. ``z > 0`` means the active interface stands off the passive face
  (not yet seated); ``z < 0`` means it would penetrate.
* ``rx, ry, rz``: the rotation vector of ``R(tcp2target) · R(tcp2target_docked)ᵀ``, the turn that
  takes the docked TCP orientation onto the current one, about the target's axes. Within
  ±1.5 deg per axis it differs from extrinsic x-y-z roll-pitch-yaw angles by < 0.02 deg.

**SIROM** (EROSS capture tests, as the SIROM self-coupling paper reports them: [SIROM] in the
README's Sources, section 4.5): ±5 mm in x and y, 0–10 mm in z, ±1.5 deg about each axis. The
approach deliberately stops ``standoff`` = 1.5 mm short in z so the interfaces do not collide;
:func:`aim_tcp2target` and :func:`desired_board2cam` build that aim point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType

import numpy as np

from orbitree.skills.pose_solve import solve_poses
from orbitree.skills.rotation_bits import rotvec_of_rotation
from orbitree.skills.se3 import check_pose

AXES: tuple[str, ...] = ("x_mm", "y_mm", "z_mm", "rx_deg", "ry_deg", "rz_deg")
"""Names of the six error components, in order (also the mission summary's ``final_error``)."""

BOUNDARY_TOLERANCE = 1e-9
"""Slack (m or rad) when comparing with a limit, so a value on the boundary counts as inside."""

Sextuple = tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class CaptureEnvelope:
    """Per-axis limits ``lower <= error <= upper`` in SI: (x, y, z) m, (rx, ry, rz) rad.

    ``standoff`` (m) is the z error the approach aims for, inside ``[lower z, upper z]``.
    """

    lower: Sextuple
    upper: Sextuple
    standoff: float = 0.0
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for key in ("lower", "upper"):
            values = tuple(float(v) for v in getattr(self, key))
            if len(values) != 6 or not all(math.isfinite(v) for v in values):
                raise ValueError(f"CaptureEnvelope.{key} must be 6 finite numbers, got {values}")
            object.__setattr__(self, key, values)
        for axis, low, high in zip(AXES, self.lower, self.upper, strict=True):
            if low > high:
                raise ValueError(f"CaptureEnvelope {axis}: lower {low} > upper {high} (SI units)")
        standoff = float(self.standoff)
        if not self.lower[2] <= standoff <= self.upper[2]:
            raise ValueError(
                f"CaptureEnvelope.standoff must lie in [{self.lower[2]}, {self.upper[2]}] m, "
                f"got {standoff}"
            )
        object.__setattr__(self, "standoff", standoff)


_MM = 1e-3
_RAD2DEG = 180.0 / math.pi  # np.degrees' factor
_DEG = math.pi / 180.0

SIROM_ENVELOPE = CaptureEnvelope(
    lower=(-5 * _MM, -5 * _MM, 0.0, -1.5 * _DEG, -1.5 * _DEG, -1.5 * _DEG),
    upper=(5 * _MM, 5 * _MM, 10 * _MM, 1.5 * _DEG, 1.5 * _DEG, 1.5 * _DEG),
    standoff=1.5 * _MM,
    name="sirom",
)
"""SIROM capture range (EROSS): ±5 mm x/y, 0–10 mm z, ±1.5 deg about each axis; 1.5 mm standoff."""

ENVELOPES: Mapping[str, CaptureEnvelope] = MappingProxyType({"sirom": SIROM_ENVELOPE})
"""Named presets, as a mission refers to them (``envelope: sirom``)."""


def _half_turn_about_x() -> np.ndarray:
    pose = np.diag([1.0, -1.0, -1.0, 1.0])
    pose.setflags(write=False)
    return pose


SIROM_TCP2TARGET_DOCKED: np.ndarray = _half_turn_about_x()
"""Assumed docked TCP pose in the passive frame: same origin, tool z = −target z, x aligned."""


@dataclass(frozen=True)
class EnvelopeError:
    """Final error per axis (mm and deg) in the target frame; see the module docstring."""

    x_mm: float
    y_mm: float
    z_mm: float
    rx_deg: float
    ry_deg: float
    rz_deg: float

    @classmethod
    def from_si(cls, values: np.ndarray) -> EnvelopeError:
        """From (6,) ``[x, y, z]`` m and ``[rx, ry, rz]`` rad."""
        array = np.asarray(values, dtype=float)
        floats = array.tolist()
        if array.shape != (6,) or not all(map(math.isfinite, floats)):
            raise ValueError(f"error must be 6 finite numbers (m, rad), got {values}")
        # on Python floats, numpy's operations bit for bit (``np.degrees`` multiplies by the
        # double 180 / pi): a compliant leaf converts its error every tick
        x, y, z, rx, ry, rz = floats
        return cls(x / _MM, y / _MM, z / _MM, rx * _RAD2DEG, ry * _RAD2DEG, rz * _RAD2DEG)

    def si(self) -> np.ndarray:
        """(6,) ``[x, y, z]`` m and ``[rx, ry, rz]`` rad."""
        # numpy's ``* 1e-3`` and ``np.radians`` (a product by the double pi / 180) on floats
        return np.array([self.x_mm * _MM, self.y_mm * _MM, self.z_mm * _MM,
                         self.rx_deg * _DEG, self.ry_deg * _DEG, self.rz_deg * _DEG])

    def as_dict(self) -> dict[str, float]:
        """``{x_mm, y_mm, z_mm, rx_deg, ry_deg, rz_deg}`` (the summary's ``final_error``)."""
        return asdict(self)


def envelope_error(
    tcp2base: np.ndarray,
    target2base: np.ndarray,
    tcp2target_docked: np.ndarray = SIROM_TCP2TARGET_DOCKED,
) -> EnvelopeError:
    """Error of the current TCP from its docked pose, in the target frame (mm, deg).

    ``tcp2base`` : (4, 4) current TCP pose; ``target2base`` : (4, 4) passive interface pose;
    ``tcp2target_docked`` : (4, 4) the TCP in the target frame when coupled.
    """
    tcp = check_pose(tcp2base, "tcp2base")
    target = check_pose(target2base, "target2base")
    docked = tcp2target_docked
    if docked is not _DOCKED:  # the default was checked once
        docked = check_pose(docked, "tcp2target_docked")
    tcp2target = solve_poses(target, tcp)
    position = tcp2target[:3, 3] - docked[:3, 3]
    # three checked poses make a rotation: scipy's conversion with ``assume_valid``, bit for bit
    turn = rotvec_of_rotation(tcp2target[:3, :3] @ docked[:3, :3].T)
    return EnvelopeError.from_si(np.concatenate([position, turn]))


_DOCKED = check_pose(SIROM_TCP2TARGET_DOCKED, "SIROM_TCP2TARGET_DOCKED")  # checked once


def violated_axes(envelope: CaptureEnvelope, error: EnvelopeError) -> tuple[str, ...]:
    """Names (from :data:`AXES`) of the components outside the envelope; empty when inside.

    Limits are inclusive (to :data:`BOUNDARY_TOLERANCE`).
    """
    values = error.si()
    lower = np.asarray(envelope.lower) - BOUNDARY_TOLERANCE
    upper = np.asarray(envelope.upper) + BOUNDARY_TOLERANCE
    outside = (values < lower) | (values > upper)
    return tuple(axis for axis, bad in zip(AXES, outside, strict=True) if bad)


def inside(envelope: CaptureEnvelope, error: EnvelopeError) -> bool:
    """Whether every component of ``error`` is within ``envelope`` (limits inclusive)."""
    return not violated_axes(envelope, error)


def aim_tcp2target(
    envelope: CaptureEnvelope = SIROM_ENVELOPE,
    tcp2target_docked: np.ndarray = SIROM_TCP2TARGET_DOCKED,
) -> np.ndarray:
    """TCP pose (4, 4) in the target frame the approach aims for: docked, backed off by
    ``envelope.standoff`` along the target's z (so its envelope error is ``(0, 0, standoff)``)."""
    aim = check_pose(tcp2target_docked, "tcp2target_docked").copy()
    aim[2, 3] += envelope.standoff
    return aim


def desired_board2cam(
    cam2tcp: np.ndarray,
    envelope: CaptureEnvelope = SIROM_ENVELOPE,
    tcp2target_docked: np.ndarray = SIROM_TCP2TARGET_DOCKED,
) -> np.ndarray:
    """``board2cam_desired`` (4, 4) for PBVS: the board (= target frame) as the eye-in-hand camera
    sees it when the TCP is at :func:`aim_tcp2target`. ``cam2tcp`` : (4, 4) hand-eye pose."""
    cam2target = aim_tcp2target(envelope, tcp2target_docked) @ check_pose(cam2tcp, "cam2tcp")
    return np.linalg.inv(cam2target)
