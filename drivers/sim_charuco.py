"""A printed ChArUco calibration board for the simulated camera.

The board is OpenCV's own image (``CharucoBoard.generateImage``) on white paper half a square
wide around it, as a texture pyramid of exact resolutions (28 texels per square at level 0, so
the 5x5-bit markers' cells fall on texel edges at every level), drawn by the renderer of
:mod:`orbitree.drivers.sim_render` like the marker boards. The body frame is the board's
(:mod:`orbitree.skills.charuco`): origin at the board's top-left corner, x right, y down the
printed image, z into the board; put it on a table face up with ``board2world`` turning z down.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from orbitree.drivers.sim_render import Patch
from orbitree.drivers.sim_scene import PoseSource, SceneObject
from orbitree.skills.charuco import CharucoSpec

TEXELS_PER_SQUARE = 28
LEVELS = 4  # finest 224 texels per square: sharp down to about 0.2 m from a 40 mm square


@lru_cache(maxsize=4)
def charuco_levels(spec: CharucoSpec, black: float = 0.04, white: float = 0.85) -> tuple[np.ndarray, ...]:
    """The printed board (with its paper margin) as opaque albedo textures, level 0 first."""
    board = spec.board()
    columns, rows = spec.squares
    levels = []
    for level in range(LEVELS):
        per_square = TEXELS_PER_SQUARE * 2**level
        margin = per_square // 2
        image = board.generateImage((columns * per_square + 2 * margin, rows * per_square + 2 * margin),
                                    marginSize=margin, borderBits=1)
        levels.append(np.where(image > 127, white, black).astype(np.float32))
    return tuple(levels)


def charuco_object(name: str, spec: CharucoSpec, board2world: PoseSource, supersample: int = 3) -> SceneObject:
    """The board ``spec`` as a scene object at ``board2world`` (seen from both sides)."""
    levels = charuco_levels(spec)
    texel = spec.square_m / TEXELS_PER_SQUARE
    margin = spec.square_m / 2
    tex2plane = np.array([[texel, 0.0, -margin], [0.0, texel, -margin], [0.0, 0.0, 1.0]])
    plane2body = np.column_stack([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    return SceneObject(name, [Patch(levels, tex2plane, plane2body, supersample)], board2world)
