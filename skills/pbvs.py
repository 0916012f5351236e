"""Position-based visual servoing (PBVS) for an eye-in-hand camera: error, interaction, law, twists.

Frames (all poses (4, 4), ``A2B`` maps coordinates in A to coordinates in B):

* ``cam``: the current camera frame; ``cam*`` ("desired"): where the camera must end up;
* ``board``: the target's frame (for SIROM, the passive interface's frame), fixed in the world;
* ``board2cam``: the target seen by the camera now (board pose estimate);
  ``board2cam_desired``: the same pose once the servo has converged.

**Error** ``e = (c_t_o − c*_t_o, θu)``, shape (6,), metres and radians:

* ``c_t_o = board2cam[:3, 3]`` and ``c*_t_o = board2cam_desired[:3, 3]``;
* ``θu`` is the rotation vector of ``cam2desired = c*Rc = R(board2cam_desired) · R(board2cam)ᵀ``:
  the orientation of the current camera frame expressed in the desired one (ViSP's
  ``vpFeatureThetaU`` of type ``cdRc``, Chaumette & Hutchinson 2006). Turning the desired frame
  by ``θ`` about ``u`` gives the current one, so the camera must turn by ``−θu`` (and the law
  commands ``ω = −λ θu``).

**Camera twist** ``v_c = (v, ω)``: velocity of the camera origin and angular velocity, both in the
current camera frame (ViSP's kinematic screw). For a target fixed in the world,
``de/dt = L_e · v_c`` exactly (checked by finite differences in the tests), with::

    L_e  = [[-I3, [c_t_o]x], [0, L_θu]]
    L_θu = I3 + (θ/2) [u]x + (1 - sinc θ / sinc²(θ/2)) [u]x²

Sign note: Chaumette & Hutchinson (2006), whose matrix the SIROM self-coupling paper uses
([SIROM] in the README's Sources, eqs. 10-11), print ``− (θ/2)[u]×``. That matrix is the transpose of
the one above: it is exact for ``ω`` expressed in the *desired* camera frame, while for ``ω`` in
the current frame (what the robot is commanded with) the sign is ``+``, as in ViSP's ``cdRc``
interaction. The law is unaffected either way: ``L_θu⁻¹ θu = θu`` for both, so
``v_c = −λ L_e⁺ e`` gives ``ω = −λ θu`` and ``v = λ (c_t_o − c*_t_o) − λ [c_t_o]× θu``.

**Robot twist**: the arm takes the twist of its TCP point in the base frame (``speed_l``, see
:mod:`orbitree.skills.kinematics`); :func:`camera_to_tcp_twist` converts, given ``cam2tcp`` (the
hand-eye calibration) and ``tcp2base``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from orbitree.skills.gain import AdaptiveGain
from orbitree.skills.rotation_bits import rotvec_of_rotation
from orbitree.skills.se3 import (
    adjoint,
    check_fixed_pose,
    check_pose,
    check_vector,
    rotate_screw,
    skew,
    vector_norm,
)

DEFAULT_GAIN = AdaptiveGain()
"""ViSP's UR example gain (1.5, 0.4, 30)."""


# ---------------------------------------------------------------------------- error, interaction


def pbvs_error(board2cam: np.ndarray, board2cam_desired: np.ndarray) -> np.ndarray:
    """PBVS error ``e = (c_t_o − c*_t_o, θu)`` (6,), m and rad; ``θu = rotvec(cam2desired)``.

    ``board2cam`` : (4, 4) current target pose in the camera frame;
    ``board2cam_desired`` : (4, 4) the desired one. ``θ`` is in ``[0, π]``.
    """
    current = check_pose(board2cam, "board2cam")
    desired = check_fixed_pose(board2cam_desired, "board2cam_desired")  # a leaf's goal, every tick
    cam2desired = desired[:3, :3] @ current[:3, :3].T
    # both rotations passed check_pose, so their product is one (to what check_pose allows):
    # scipy's conversion with ``assume_valid``, bit for bit on Python floats (rotation_bits)
    rx, ry, rz = rotvec_of_rotation(cam2desired).tolist()
    # numpy's subtractions and concatenation, on Python floats (a servo's error, every tick)
    (cx, cy, cz), (dx, dy, dz) = current[:3, 3].tolist(), desired[:3, 3].tolist()
    return np.array([cx - dx, cy - dy, cz - dz, rx, ry, rz])


def _sinc(x: float) -> float:
    return 1.0 if x == 0.0 else math.sin(x) / x


def theta_u_interaction(theta_u: np.ndarray) -> np.ndarray:
    """``L_θu`` (3, 3) with ``d(θu)/dt = L_θu · ω``, ``ω`` the camera rate in the camera frame.

    ``L_θu = I3 + (θ/2)[u]× + (1 − sinc θ / sinc²(θ/2)) [u]×²`` for ``θu = rotvec(cam2desired)``
    (see the module docstring for the sign). Written with ``[θu]×`` so it is smooth at ``θ = 0``
    (where it is I3); singular only at ``θ = 2π``.
    """
    rotvec = check_vector(theta_u, 3, "theta_u")
    theta = vector_norm(rotvec)
    cross = skew(rotvec)
    if theta < 1e-4:
        # (1 - sinc θ / sinc²(θ/2)) / θ² = 1/12 + θ²/720 + O(θ⁴): the ratio cancels badly here.
        quadratic = 1.0 / 12.0 + theta * theta / 720.0
    else:
        quadratic = (1.0 - _sinc(theta) / _sinc(theta / 2.0) ** 2) / (theta * theta)
    return np.eye(3) + 0.5 * cross + quadratic * (cross @ cross)


def interaction_matrix(board_in_cam: np.ndarray, theta_u: np.ndarray) -> np.ndarray:
    """``L_e = [[−I3, [c_t_o]×], [0, L_θu]]`` (6, 6), with ``de/dt = L_e · v_c``.

    ``board_in_cam`` : (3,) ``c_t_o`` = ``board2cam[:3, 3]`` (m), the *current* translation;
    ``theta_u`` : (3,) rad, the rotation part of :func:`pbvs_error`.
    """
    translation = check_vector(board_in_cam, 3, "board_in_cam")
    interaction = np.zeros((6, 6))
    interaction[:3, :3] = -np.eye(3)
    interaction[:3, 3:] = skew(translation)
    interaction[3:, 3:] = theta_u_interaction(theta_u)
    return interaction


def control_law(error: np.ndarray, interaction: np.ndarray, gain: float) -> np.ndarray:
    """Camera twist ``v_c = −λ · L_e⁺ · e`` (6,) in the camera frame, m/s and rad/s.

    ``error`` : (6,); ``interaction`` : (6, 6); ``gain`` λ > 0 (1/s). With the exact ``L_e`` the
    error then decreases exponentially, ``de/dt = −λ e``.
    """
    e = check_vector(error, 6, "error")
    matrix = np.asarray(interaction, dtype=float)
    if matrix.shape != (6, 6) or not np.isfinite(matrix).all():
        raise ValueError(f"interaction must be a finite (6, 6) matrix, got shape {matrix.shape}")
    lam = float(gain)
    if not math.isfinite(lam) or lam <= 0.0:
        raise ValueError(f"gain must be finite and > 0, got {gain}")
    return -lam * (np.linalg.pinv(matrix) @ e)


@dataclass(frozen=True)
class PbvsCommand:
    """One PBVS step: ``error`` (6,), its magnitude, the gain used and the camera ``twist`` (6,)."""

    error: np.ndarray
    error_norm: float
    gain: float
    twist: np.ndarray


def camera_velocity(
    board2cam: np.ndarray,
    board2cam_desired: np.ndarray,
    gain: float | Callable[[float], float] = DEFAULT_GAIN,
    *,
    norm: Literal["euclidean", "infinity"] = "euclidean",
) -> PbvsCommand:
    """Error, gain and camera twist (camera frame) for one servo tick.

    ``gain`` is a constant λ or a callable of the error magnitude (e.g. :class:`AdaptiveGain`).
    The magnitude is ``‖e‖₂`` (the SIROM paper's ``λ(‖e‖)``, default) or ``‖e‖∞`` (what ViSP's
    ``vpAdaptiveGain`` takes for a vector); it mixes metres and radians, as both do.
    """
    error = pbvs_error(board2cam, board2cam_desired)
    if norm == "euclidean":
        magnitude = vector_norm(error)
    elif norm == "infinity":
        magnitude = float(np.max(np.abs(error)))
    else:
        raise ValueError(f"norm must be 'euclidean' or 'infinity', got {norm!r}")
    lam = float(gain(magnitude)) if callable(gain) else float(gain)
    if not math.isfinite(lam) or lam <= 0.0:
        raise ValueError(f"gain must be finite and > 0, got {lam}")
    # control_law(error, interaction_matrix(c_t_o, θu), λ) in closed form: L_e is block upper
    # triangular with L_θu θu = θu, so L_e⁻¹ e = (−(c_t_o − c*_t_o) + [c_t_o]× θu, θu) (the module
    # docstring); no (6, 6) matrix and no SVD per tick
    # (numpy's products, differences and concatenation, on Python floats: the same IEEE operations)
    x, y, z = np.asarray(board2cam, dtype=float)[:3, 3].tolist()
    e0, e1, e2, a, b, c = error.tolist()
    cross = (y * c - z * b, z * a - x * c, x * b - y * a)  # np.cross's products
    twist = np.array([lam * (e0 - cross[0]), lam * (e1 - cross[1]), lam * (e2 - cross[2]),
                      -lam * a, -lam * b, -lam * c])
    return PbvsCommand(error, magnitude, lam, twist)


# ---------------------------------------------------------------------------- twists


def camera_to_tcp_twist(
    twist_cam: np.ndarray, cam2tcp: np.ndarray, tcp2base: np.ndarray
) -> np.ndarray:
    """TCP twist in the base frame (6,) for a camera twist ``twist_cam`` (6,) in the camera frame.

    ``cam2tcp`` : (4, 4) hand-eye pose; ``tcp2base`` : (4, 4) current TCP pose. The result is
    the velocity of the TCP point and the angular velocity, both in base axes (``speed_l``).
    """
    twist = check_vector(twist_cam, 6, "twist_cam")
    twist_tcp = adjoint(cam2tcp) @ twist
    return rotate_screw(check_pose(tcp2base, "tcp2base")[:3, :3], twist_tcp)


def tcp_to_camera_twist(
    twist_tcp_base: np.ndarray, cam2tcp: np.ndarray, tcp2base: np.ndarray
) -> np.ndarray:
    """Inverse of :func:`camera_to_tcp_twist`: camera twist (6,) in the camera frame."""
    twist = check_vector(twist_tcp_base, 6, "twist_tcp_base")
    twist_tcp = rotate_screw(check_pose(tcp2base, "tcp2base")[:3, :3].T, twist)
    return adjoint(np.linalg.inv(check_pose(cam2tcp, "cam2tcp"))) @ twist_tcp


def saturate_twist(twist: np.ndarray, max_linear: float, max_angular: float) -> np.ndarray:
    """``twist`` (6,) scaled by one factor ``s <= 1`` so ``‖v‖ <= max_linear`` (m/s) and
    ``‖ω‖ <= max_angular`` (rad/s).

    One factor for both halves keeps the direction of the whole twist, so a saturated servo
    follows the same path, only slower. Limits must be > 0 (``math.inf`` disables one).
    """
    values = check_vector(twist, 6, "twist")
    limits = {"max_linear": float(max_linear), "max_angular": float(max_angular)}
    for name, limit in limits.items():
        if math.isnan(limit) or limit <= 0.0:
            raise ValueError(f"{name} must be > 0, got {limit}")
    linear = vector_norm(values[:3])
    angular = vector_norm(values[3:])
    factor = 1.0
    if linear > limits["max_linear"]:
        factor = limits["max_linear"] / linear
    if angular > limits["max_angular"]:
        factor = min(factor, limits["max_angular"] / angular)
    return values * factor
