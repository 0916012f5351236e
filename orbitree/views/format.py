"""Blackboard values as an engineer reads them: poses as xyz in mm and rpy in degrees, wrenches in
N and N·m, twists in mm/s and deg/s, joints in degrees, each with its unit. Both views use it; the
log keeps SI values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.language.keys import SERVO_ERROR

DEADLINE_MISS = (
    "deadline miss: a tick (read the drivers, tick the tree, record, step the simulation) that ended "
    "past its deadline on the wall clock, so the arm's next command came late (hardware: it overran "
    "its period into the next tick's; --realtime: it ended more than a period behind the schedule); "
    "counted only when the loop is paced by the wall clock. 'tree' is the time of the tree's tick alone."
)
"""What the views say a deadline miss is (terminal: a line under the figures; web: a tooltip)."""


def _vec(values: Any, scale: float = 1.0, digits: int = 1) -> str:
    return "[" + ", ".join(f"{v * scale:.{digits}f}" for v in values) + "]"


def pose_text(matrix: np.ndarray) -> str:
    """``xyz [x, y, z] mm  rpy [r, p, y] deg`` of a (4, 4) pose (rpy: extrinsic x-y-z)."""
    rpy = Rotation.from_matrix(matrix[:3, :3]).as_euler("xyz", degrees=True)
    return f"xyz {_vec(matrix[:3, 3], 1e3)} mm  rpy {_vec(rpy)} deg"


def _pose_text_or_none(matrix: np.ndarray) -> str | None:
    """``pose_text``, or None when the matrix holds no rotation (a corrupted or hand-edited log:
    zeros, NaN, a reflection), which scipy refuses with a ValueError."""
    if not np.isfinite(matrix).all():
        return None
    try:
        with np.errstate(all="ignore"):
            return pose_text(matrix)
    except ValueError:  # numpy's LinAlgError too
        return None


def display_value(key: str, value: Any) -> str:
    """One line for ``value`` written under ``key``."""
    text = unit_text(key, value)
    if text is not None:
        return text
    if isinstance(value, float):
        if key.endswith("/last_seen"):
            return f"{value:.3f} s"
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    return repr(value)


def unit_text(key: str, value: Any) -> str | None:
    """The reading with units of a pose, stamped pose, wrench, twist, joints or servo error —
    live (numpy) or replayed from a log (lists, a stamped pose as a mapping) — else None."""
    if isinstance(value, dict) and "matrix" in value:  # a stamped pose, as logged
        matrix, stamp = _array(value["matrix"]), value.get("stamp")
    else:
        matrix, stamp = _array(getattr(value, "matrix", None)), getattr(value, "stamp", None)
    if matrix is not None and matrix.shape == (4, 4):
        text = _pose_text_or_none(matrix)
        if text is None:
            return None
        return text + (f"  @ {stamp:.3f} s" if isinstance(stamp, int | float) and math.isfinite(stamp) else "")
    array = _array(value)
    if array is None or array.ndim == 0:
        return None
    return _array_text(key, array)


def _array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, list) and value:
        try:
            return np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return None
    return None


def _array_text(key: str, value: np.ndarray) -> str:
    leaf = key.rsplit("/", 1)[-1]
    if value.shape == (4, 4):
        text = _pose_text_or_none(value)
        if text is not None:
            return text
    if value.shape == (6,):
        if leaf == "wrench":
            return f"F {_vec(value[:3])} N  τ {_vec(value[3:], digits=2)} N·m"
        if leaf == "tcp_twist":
            return f"v {_vec(value[:3], 1e3)} mm/s  ω {_vec(value[3:], 180 / math.pi)} deg/s"
        if key == SERVO_ERROR:
            return f"t {_vec(value[:3], 1e3, 2)} mm  θu {_vec(value[3:], 180 / math.pi, 2)} deg"
    if leaf == "q":
        return f"{_vec(value, 180 / math.pi)} deg"
    return np.array2string(value, precision=4, suppress_small=True, max_line_width=10_000)
