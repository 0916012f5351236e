"""Search: a sweep of joint configurations that carries the eye-in-hand camera over the table.

The search of the SIROM self-coupling paper ([SIROM] in the README's Sources, section 3.2)
moves the arm through predefined joint configurations while the vision runs, stops as soon as
the target is detected and remembers the configuration it had reached, so that a later search
resumes from there instead of starting over.

``table_sweep`` builds such a sweep: a serpentine grid of camera poses looking straight down on
a rectangle of the table from a fixed height, each turned into joints by inverse kinematics
seeded with the previous configuration (so consecutive configurations stay close and the joint
moves between them are short).
"""

from __future__ import annotations

import numpy as np

from orbitree.skills import kinematics as kin
from orbitree.skills import se3

LOOK_DOWN = np.diag([1.0, -1.0, -1.0])  # camera z (optical axis) along base -z


def grid_points(center_xy: np.ndarray, size_xy: np.ndarray, spacing: float) -> np.ndarray:
    """(N, 2) serpentine grid covering the rectangle ``center_xy ± size_xy / 2`` (m)."""
    center = se3.check_vector(center_xy, 2, "center_xy")
    size = se3.check_vector(size_xy, 2, "size_xy")
    if spacing <= 0 or np.any(size < 0):
        raise ValueError(f"spacing must be > 0 and size >= 0, got {spacing} and {size}")
    counts = np.maximum(1, np.ceil(size / spacing).astype(int) + 1)
    xs = np.linspace(-size[0] / 2, size[0] / 2, counts[0]) + center[0]
    ys = np.linspace(-size[1] / 2, size[1] / 2, counts[1]) + center[1]
    rows = [np.column_stack([xs if i % 2 == 0 else xs[::-1], np.full(len(xs), y)]) for i, y in enumerate(ys)]
    return np.vstack(rows)


def camera_poses(points_xy: np.ndarray, height: float, yaw: float = 0.0) -> list[np.ndarray]:
    """(4, 4) cam2base poses looking straight down from ``height`` (m) above each point."""
    c, s = np.cos(yaw), np.sin(yaw)
    spin = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    poses = []
    for x, y in np.asarray(points_xy, dtype=float):
        pose = np.eye(4)
        pose[:3, :3] = spin @ LOOK_DOWN
        pose[:3, 3] = (x, y, height)
        poses.append(pose)
    return poses


def table_sweep(
    center_xy: np.ndarray,
    size_xy: np.ndarray,
    height: float,
    spacing: float,
    cam2tcp: np.ndarray,
    tool: np.ndarray,
    q_seed: np.ndarray,
    table: kin.DHTable = kin.UR10E,
) -> list[np.ndarray]:
    """Joint configurations (each (6,), rad) putting the camera over the grid, looking down.

    cam2tcp : (4, 4) camera mount. tool : (4, 4) TCP in the flange frame. Points the arm cannot
    reach are skipped; raises if none is reachable.
    """
    tcp2cam = np.linalg.inv(se3.check_pose(cam2tcp, "cam2tcp"))
    sweep: list[np.ndarray] = []
    q = se3.check_vector(q_seed, table.n_joints, "q_seed").copy()
    for cam2base in camera_poses(grid_points(center_xy, size_xy, spacing), height):
        solution, ok = kin.inverse_kinematics(table, cam2base @ tcp2cam, q, tool, tolerance=1e-7)
        if ok:
            sweep.append(solution)
            q = solution
    if not sweep:
        raise ValueError("no configuration of the sweep is reachable")
    return sweep


def resume_index(sweep: list[np.ndarray], resume_q: np.ndarray | None) -> int:
    """Index to restart a sweep from: the configuration nearest ``resume_q`` (0 if None)."""
    if resume_q is None or not sweep:
        return 0
    distances = [float(np.max(np.abs(np.asarray(q) - resume_q))) for q in sweep]
    return int(np.argmin(distances))
