"""Relocation: small camera translations that bring a lost target back into view.

When the target is lost during the approach, the SIROM self-coupling paper ([SIROM] in the
README's Sources, section 3.2) translates the camera by 100 mm along X (both ways), Y and Z,
checking after each move whether the target is seen again; if it is, the approach resumes,
otherwise search restarts. One reading of the moves is ±100 mm X, ±100 mm Y, +100 mm Z; the
paper's text reads "±100 mm, +100 mm and +100 mm" for X, Y and Z. The default list here is the
union (x+, x-, y+, y-, z+), and a mission may give its own.

Moves are written ``x+100 mm``, ``y-5 cm``, ``z+0.1`` and are translations of the camera along
the axes of the robot base frame (``+z`` is up, away from a target on the table) or, with
``frame: camera``, along the camera's own axes.
"""

from __future__ import annotations

import re

import numpy as np

from orbitree.skills import se3

DEFAULT_MOVES = ("x+100 mm", "x-100 mm", "y+100 mm", "y-100 mm", "z+100 mm")
_MOVE = re.compile(r"^\s*([xyz])\s*([+-])\s*(\d+\.?\d*|\.\d+)\s*(mm|cm|m)?\s*$")
_SCALE = {"mm": 1e-3, "cm": 1e-2, "m": 1.0, None: 1.0}


def parse_move(text: str) -> np.ndarray:
    """``"x+100 mm"`` -> ``[0.1, 0, 0]`` (m)."""
    match = _MOVE.match(text)
    if match is None:
        raise ValueError(f"cannot read move {text!r}: write e.g. 'x+100 mm', 'y-5 cm' or 'z+0.1'")
    axis, sign, amount, unit = match.groups()
    out = np.zeros(3)
    out["xyz".index(axis)] = (1.0 if sign == "+" else -1.0) * float(amount) * _SCALE[unit]
    return out


def shifted_tcp(tcp2base: np.ndarray, cam2tcp: np.ndarray, shift: np.ndarray, frame: str = "base") -> np.ndarray:
    """(4, 4) TCP pose that translates the camera by ``shift`` (3,) m without rotating it.

    frame : 'base' (shift along the base axes) or 'camera' (along the camera's axes).
    """
    tcp2base = se3.check_pose(tcp2base, "tcp2base")
    cam2base = tcp2base @ se3.check_pose(cam2tcp, "cam2tcp")
    delta = se3.check_vector(shift, 3, "shift")
    if frame == "camera":
        delta = cam2base[:3, :3] @ delta
    elif frame != "base":
        raise ValueError(f"frame must be 'base' or 'camera', got {frame!r}")
    moved = cam2base.copy()
    moved[:3, 3] += delta
    return moved @ np.linalg.inv(cam2tcp)
