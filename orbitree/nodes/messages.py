"""Typed values that behaviours exchange on the blackboard."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StampedPose:
    """A pose measurement: ``matrix`` (4, 4) maps the target frame to ``frame``.

    stamp : time of the image it came from (s, the executive's clock).
    reprojection_error_px : RMS corner reprojection error of the estimate.
    markers : ids of the markers whose corners were used.
    """

    matrix: np.ndarray
    frame: str
    stamp: float
    reprojection_error_px: float
    markers: tuple[int, ...]

    @property
    def position(self) -> np.ndarray:
        return self.matrix[:3, 3]
