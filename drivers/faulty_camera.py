"""Fault-injecting wrapper around any ``Camera`` (``camera_dropout``, ``camera_latency``,
``marker_occlusion`` faults): see :mod:`orbitree.drivers.faulty` for how the wrappers work."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

from orbitree.drivers.interfaces import CameraIntrinsics, Frame

Clock = Callable[[], float]
_EPS = 1e-9


class FaultyCamera:
    """A ``Camera`` whose frames faults can withhold, delay or alter.

    Effects: ``drop`` (``read()`` returns None; the wrapped camera is not even read),
    ``delay`` (frames are held back: ``read()`` returns the newest frame taken at least
    ``delay`` ago, with its own stamp, each frame once; a latency that starts therefore
    delivers nothing new for ``delay``, and when it ends the held frames are dropped for the
    latest one), ``occlude`` (the listed marker ids are painted over in the image, see
    :func:`hide_markers`) and ``corner_noise`` (frames carry ``meta["corner_noise_px"]`` and a
    per-frame ``meta["corner_noise_seed"]``; the board pose estimator adds that Gaussian noise
    to the detected corners before PnP).
    """

    def __init__(
        self,
        inner: Any,
        clock: Clock,
        *,
        boards: Sequence[cv2.aruco.Board] = (),
        seed: int | Sequence[int] = 0,
    ) -> None:
        self._inner = inner
        self._clock = clock
        self.name = inner.name
        self._boards = list(boards)
        self._rng = np.random.default_rng(seed)
        self._drop: set[int] = set()
        self._delay: dict[int, float] = {}
        self._occlude: dict[int, frozenset[int]] = {}
        self._noise: dict[int, float] = {}
        self._frames: deque[Frame] = deque()
        self._last_stamp = -np.inf
        self._faulty = False

    @property
    def inner(self) -> Any:
        return self._inner

    @property
    def intrinsics(self) -> CameraIntrinsics:
        return self._inner.intrinsics

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    # effects -------------------------------------------------------------------------------
    def drop(self, fault_id: int) -> None:
        self._drop.add(fault_id)
        self._update()

    def delay(self, fault_id: int, delay: float) -> None:
        self._delay[fault_id] = float(delay)
        self._update()

    def occlude(self, fault_id: int, marker_ids: Sequence[int]) -> None:
        self._occlude[fault_id] = frozenset(int(i) for i in marker_ids)
        self._update()

    def corner_noise(self, fault_id: int, sigma_px: float) -> None:
        self._noise[fault_id] = float(sigma_px)
        self._update()

    def remove(self, fault_id: int) -> None:
        for effects in (self._delay, self._occlude, self._noise):
            effects.pop(fault_id, None)
        self._drop.discard(fault_id)
        if not self._delay:
            self._frames.clear()
        self._update()

    def clear(self) -> None:
        self._drop.clear()
        for effects in (self._delay, self._occlude, self._noise):
            effects.clear()
        self._frames.clear()
        self._update()

    def _update(self) -> None:
        self._faulty = bool(self._drop or self._delay or self._occlude or self._noise)

    # Camera protocol -----------------------------------------------------------------------
    def setup(self) -> None:
        self._inner.setup()

    def shutdown(self) -> None:
        self._inner.shutdown()

    def read(self) -> Frame | None:
        if not self._faulty:
            return self._inner.read()
        if self._drop and not self._delay:
            return None  # do not even grab (a simulated frame costs a render)
        frame = self._inner.read()
        if self._delay:
            frame = self._delayed(frame, self._clock())
        if frame is None or self._drop:
            return None
        self._last_stamp = frame.stamp
        if self._occlude:
            hidden = frozenset().union(*self._occlude.values())
            image = hide_markers(frame.image, hidden, self._boards, self.intrinsics)
            frame = Frame(image, frame.stamp, frame.meta)
        if self._noise:
            sigma = float(np.sqrt(sum(s * s for s in self._noise.values())))
            meta = {**frame.meta, "corner_noise_px": sigma,
                    "corner_noise_seed": int(self._rng.integers(2**31))}
            frame = frame.with_meta(meta)
        return frame

    def _delayed(self, frame: Frame | None, now: float) -> Frame | None:
        """Hold ``frame`` back; the newest held frame at least the delay old, if not given yet."""
        if frame is not None:
            self._frames.append(frame)
        delay = max(self._delay.values())
        ready = None
        while self._frames and self._frames[0].stamp <= now - delay + _EPS:
            ready = self._frames.popleft()
        return ready if ready is not None and ready.stamp > self._last_stamp else None


def hide_markers(
    image: np.ndarray,
    marker_ids: frozenset[int] | set[int],
    boards: Sequence[cv2.aruco.Board] = (),
    intrinsics: CameraIntrinsics | None = None,
    grow_px: int = 3,
) -> np.ndarray:
    """A copy of ``image`` with the listed ArUco markers painted over.

    The markers are found the way the board pose estimator finds them (its detector for each
    board, with the recovery of blurred markers from the board layout); without boards, by a
    plain detector of the SIROM dictionary (7x7). Each marker's quad, grown by ``grow_px`` and
    by a tenth of its side, is filled with the median of the ring of pixels around it (the
    marker's white quiet zone, or whatever surrounds it), so no edge is left for a detector to
    find. Markers not detected in the image are left as they are (they are not seen anyway).
    """
    from orbitree.skills.board import BoardEstimatorConfig, detect_board_markers, make_detector
    from orbitree.skills.board_model import SIROM_DICTIONARY
    from orbitree.skills.marker_refine import to_gray

    gray = to_gray(image)
    quads: list[np.ndarray] = []
    if boards:
        k = intrinsics.camera_matrix if intrinsics is not None else None
        dist = intrinsics.dist_coeffs if intrinsics is not None else None
        config = BoardEstimatorConfig(recover_missing=k is not None)
        for board in boards:
            found, ids = detect_board_markers(gray, board, k, dist, make_detector(board, config), config)
            quads += [q for q, i in zip(found, ids, strict=True) if int(i) in marker_ids]
    else:
        detector = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(SIROM_DICTIONARY))
        corners, ids, _ = detector.detectMarkers(gray)
        if ids is not None:
            quads += [np.reshape(c, (4, 2)) for c, i in zip(corners, ids.ravel(), strict=True)
                      if int(i) in marker_ids]
    if not quads:
        return image
    out = image.copy()
    h, w = gray.shape
    for quad in quads:
        side = float(np.mean(np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)))
        grow = round(grow_px + 0.1 * side)
        mask = np.zeros((h, w), np.uint8)
        cv2.fillConvexPoly(mask, np.round(quad).astype(np.int32), 255)
        mask = cv2.dilate(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1,) * 2))
        ring = cv2.dilate(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (9, 9))) & ~mask
        around = out[ring > 0]
        fill = np.median(around, axis=0) if len(around) else 128
        out[mask > 0] = np.asarray(fill).astype(out.dtype)
    return out
