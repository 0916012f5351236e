"""A camera frame whose image is made when something first looks at it, whole or in parts.

A simulated camera spends most of its time rendering, and a tracker that follows a target from
frame to frame reads only a few windows of each image. :class:`LazyFrame` lets the camera hand out
a frame at its capture without rendering it: ``image`` renders the whole image on first use (and
keeps it), ``region(boxes)`` only the pixels of those boxes, bit for bit the whole image's (the
rest of the array is 0). Whatever is rendered and whenever, the pixels are those of the frame as
it was captured: the camera takes at capture everything a render reads that can change (poses,
the frame's noise draw, its sensor and scene state), so rendering later, in parts or not at all
changes nothing downstream (the noise of later frames included).

A consumer that can use regions checks for ``region`` (:class:`orbitree.skills.board_tracker.
BoardTracker` does); everything else reads ``image`` as from any :class:`Frame`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from orbitree.drivers.interfaces import Frame

__all__ = ["LazyFrame"]

Box = tuple[int, int, int, int]  # (x0, y0, x1, y1) pixels


class LazyFrame(Frame):
    """A :class:`Frame` rendered on demand.

    ``render(boxes)``: the (H, W) uint8 image, whole when ``boxes`` is None, else only the
    pixels of ``boxes`` (a list of (x0, y0, x1, y1)), 0 elsewhere; ``shape``: (H, W).
    """

    def __init__(self, render: Callable[[Sequence[Box] | None], np.ndarray], shape: tuple[int, int],
                 stamp: float, meta: dict | None = None) -> None:
        object.__setattr__(self, "stamp", stamp)
        object.__setattr__(self, "meta", {} if meta is None else meta)
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "_render", render)
        object.__setattr__(self, "_image", None)
        object.__setattr__(self, "_lock", threading.Lock())  # a view's thread and the tracker's may ask at once
        object.__setattr__(self, "regions_rendered", 0)  # region() calls that rendered (for tests)

    @property
    def image(self) -> np.ndarray:  # type: ignore[override]
        """The whole image, rendered on the first call."""
        with self._lock:
            if self._image is None:
                object.__setattr__(self, "_image", self._render(None))
            return self._image

    @property
    def rendered(self) -> bool:
        """True once the whole image exists."""
        return self._image is not None

    def region(self, boxes: Sequence[Box]) -> np.ndarray:
        """An (H, W) uint8 image whose pixels inside ``boxes`` are the frame's (the whole image
        when it was already rendered)."""
        with self._lock:
            if self._image is not None:
                return self._image
            object.__setattr__(self, "regions_rendered", self.regions_rendered + 1)
            return self._render(list(boxes))

    def with_meta(self, meta: dict) -> LazyFrame:
        """The same frame (its image still made on demand, once) with ``meta``."""
        twin = LazyFrame(self._render, self.shape, self.stamp, meta)
        object.__setattr__(twin, "_image", self._image)
        return twin

    def __repr__(self) -> str:
        return f"LazyFrame(stamp={self.stamp!r}, shape={self.shape}, rendered={self.rendered}, meta={self.meta!r})"
