"""A simulated camera's calibration as built: the per-run truth behind the nominal values.

An estimator works with what was calibrated or measured: the camera's intrinsics, the hand-eye
mount (camera in the TCP frame) and the marker board's corner table. The real camera, bracket
and printed markers differ from those by the errors of the calibration, the hand-eye method and
the placement of the markers. :func:`draw_camera_truth` draws one run's truth from
:class:`CameraErrorModel` (standard deviations) with a seeded generator: the sim world renders
with the truth while the estimator keeps the nominal values.

Every error is Gaussian, zero-mean, truncated at 3 standard deviations (redrawn beyond), and
independent per component:

* intrinsics: ``fx`` and ``fy`` scaled by one common factor ``1 + focal`` (a focal-length
  error) and each by its own ``focal / 3`` more (aspect); ``cx``, ``cy`` moved by
  ``principal_point_px``; ``k1`` and ``k2`` moved by ``distortion`` (p1, p2, k3 kept);
* mount: the camera moved by ``mount_xyz_m`` along each of its own axes and turned by
  ``mount_rpy_rad`` about each;
* markers: the board printed at scale ``1 + print_scale`` (about the board's origin); each
  marker then moved in the board plane by ``marker_xy_m`` per axis and turned about the board's
  normal by ``marker_angle_rad`` (about its own centre): markers stuck on by hand.

The defaults of the mission's ``camera:`` (``orbitree.language.equipment_spec.CameraSpec``) give the
figures and where they come from; ``CameraErrorModel()`` is the ideal camera.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.skills.board_model import BoardModel

TRUNCATION = 3.0
"""Draws beyond this many standard deviations are redrawn."""


@dataclass(frozen=True)
class CameraErrorModel:
    """Standard deviations of a camera's calibration errors (all 0: the ideal camera)."""

    focal: float = 0.0  # relative, on fx and fy together
    principal_point_px: float = 0.0  # on cx and cy
    distortion: float = 0.0  # on k1 and k2
    mount_xyz_m: float = 0.0  # per camera axis
    mount_rpy_rad: float = 0.0  # per camera axis
    print_scale: float = 0.0  # relative, the whole board
    marker_xy_m: float = 0.0  # per marker, per board axis
    marker_angle_rad: float = 0.0  # per marker, about the board normal

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"CameraErrorModel.{name} must be a finite standard deviation >= 0, got {value}")


@dataclass(frozen=True)
class CameraTruth:
    """One run's camera as built: its intrinsics, its mount (cam2tcp) and the board as stuck on."""

    intrinsics: CameraIntrinsics
    mount: np.ndarray
    board: BoardModel


def truncated_normal(rng: np.random.Generator, sigma: float, size: int | tuple[int, ...] = ()) -> np.ndarray:
    """Draws of N(0, sigma²) truncated at ±TRUNCATION·sigma (redrawn), shape ``size``."""
    out = rng.standard_normal(size)
    bad = np.abs(out) > TRUNCATION
    while np.any(bad):
        out = np.where(bad, rng.standard_normal(np.shape(out)), out)
        bad = np.abs(out) > TRUNCATION
    return sigma * np.asarray(out, dtype=np.float64)


def perturbed_intrinsics(
    nominal: CameraIntrinsics, model: CameraErrorModel, rng: np.random.Generator
) -> CameraIntrinsics:
    """The lens as built, drawn around ``nominal``."""
    k = nominal.camera_matrix.copy()
    common = truncated_normal(rng, model.focal)
    aspect = truncated_normal(rng, model.focal / 3.0, 2)
    k[0, 0] *= 1.0 + common + aspect[0]
    k[1, 1] *= 1.0 + common + aspect[1]
    k[:2, 2] += truncated_normal(rng, model.principal_point_px, 2)
    dist = np.array(nominal.dist_coeffs, dtype=np.float64).copy()
    dist[:2] += truncated_normal(rng, model.distortion, 2)
    return CameraIntrinsics(k, dist, nominal.width, nominal.height)


def perturbed_mount(nominal: np.ndarray, model: CameraErrorModel, rng: np.random.Generator) -> np.ndarray:
    """The camera's real pose in the TCP frame: ``nominal`` moved and turned in its own axes."""
    error = np.eye(4)
    error[:3, 3] = truncated_normal(rng, model.mount_xyz_m, 3)
    error[:3, :3] = Rotation.from_euler("xyz", truncated_normal(rng, model.mount_rpy_rad, 3)).as_matrix()
    return np.asarray(nominal, dtype=np.float64) @ error


def perturbed_board(nominal: BoardModel, model: CameraErrorModel, rng: np.random.Generator) -> BoardModel:
    """The board as printed and stuck on: scaled, each marker moved and turned in its plane."""
    corners = nominal.corners * (1.0 + truncated_normal(rng, model.print_scale))
    moved = []
    for marker in corners:
        centre = marker.mean(axis=0)
        turn = Rotation.from_rotvec([0.0, 0.0, float(truncated_normal(rng, model.marker_angle_rad))]).as_matrix()
        shift = np.append(truncated_normal(rng, model.marker_xy_m, 2), 0.0)
        moved.append((marker - centre) @ turn.T + centre + shift)
    return BoardModel(np.array(moved), nominal.marker_ids, nominal.dictionary_id, nominal.marker_side_m,
                      nominal.border_m)


def draw_camera_truth(
    model: CameraErrorModel, rng: np.random.Generator, intrinsics: CameraIntrinsics, mount: np.ndarray,
    board: BoardModel,
) -> CameraTruth:
    """One run's truth around the nominal ``intrinsics``, ``mount`` and ``board`` (in that
    order from ``rng``, so each seed gives one camera)."""
    return CameraTruth(perturbed_intrinsics(intrinsics, model, rng), perturbed_mount(mount, model, rng),
                       perturbed_board(board, model, rng))
