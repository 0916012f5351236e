"""``CvCamera``: the ``Camera`` protocol over ``cv2.VideoCapture``.

A USB/V4L2 device index, a video file or a stream URL (RTSP, HTTP MJPEG, GStreamer pipeline)
is opened in ``setup()``; the requested resolution (by default the calibration's image size) is
asked of the device and the delivered size is checked against the calibration, because
intrinsics calibrated at one resolution are wrong at another.

Intrinsics come from a calibration file (see :mod:`orbitree.drivers.calibration_io`), read in
``__init__``: the file is configuration, not hardware, so a missing or malformed calibration
fails when the mission is loaded, before anything moves, and ``intrinsics`` is available (as
the Camera protocol and SimCamera have it) without opening the device.

``read()`` never waits for the device in the default threaded mode: a background thread grabs
frames as the device produces them and ``read()`` hands out the newest one once, returning None
when no new frame has arrived since the last call (the Camera contract). With ``threaded=False``
``read()`` grabs synchronously (blocks for up to a frame period; used by tests and by file
playback).

Stamps: a frame is stamped at its capture, not when it is used. The capture instant is the
driver's own timestamp when it is meaningful: ``CAP_PROP_POS_MSEC`` of a V4L2 device is the
buffer's kernel timestamp on ``CLOCK_MONOTONIC`` (Python's ``time.monotonic``), taken when the
frame started to arrive; it is used when it lies between 0 and ``MAX_DRIVER_AGE_S`` before the
grab returned, on ``clock``. Otherwise (a video file's position, a stream's presentation time, a
backend without timestamps) it is the instant ``grab()`` returned, read on ``clock`` at once, the
closest software instant to the exposure. ``meta["stamp_source"]`` says which (``driver`` or
``grab``). With ``mission_clock`` (the executive's time, read during its tick), ``read()`` puts
the stamp on that clock keeping the frame's age: ``mission_clock() - (clock() - capture)``.

Usage::

    camera = CvCamera("wrist_cam", 0, "calib/wrist_cam.yaml")  # CalibrationFileError
    camera.setup()                 # raises CameraOpenError
    frame = camera.read()          # Frame(image, stamp) or None
    camera.shutdown()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from orbitree.drivers.calibration_io import load_intrinsics
from orbitree.drivers.interfaces import CameraIntrinsics, Frame

__all__ = ["CameraOpenError", "CvCamera", "VideoCaptureLike"]

_log = logging.getLogger(__name__)


class VideoCaptureLike(Protocol):
    """The part of ``cv2.VideoCapture`` that CvCamera uses."""

    def isOpened(self) -> bool: ...

    def set(self, prop_id: int, value: float) -> bool: ...

    def get(self, prop_id: int) -> float: ...

    def grab(self) -> bool: ...

    def retrieve(self) -> tuple[bool, np.ndarray | None]: ...

    def release(self) -> None: ...


class CameraOpenError(RuntimeError):
    """The capture device could not be opened or does not deliver what was asked."""


class CvCamera:
    """A camera read through OpenCV's ``VideoCapture``.

    Parameters
    ----------
    name : driver name used in messages and frame metadata.
    source : device index (``0`` or ``"0"``), video file path or stream URL.
    calibration : calibration file with the intrinsics (OpenCV FileStorage or plain YAML),
        or the intrinsics themselves.
    width, height : requested resolution in pixels; default: the calibration's image size.
    fps : requested frame rate, if any.
    grey : deliver (H, W) uint8 grey images instead of (H, W, 3) BGR.
    threaded : grab in a background thread so that ``read()`` never blocks.
    api_preference : an OpenCV ``cv2.CAP_*`` backend (e.g. ``cv2.CAP_V4L2``), or None.
    clock : the clock capture stamps are taken on (s); ``time.monotonic`` by default, the clock
        of V4L2's buffer timestamps.
    mission_clock : when given, ``read()`` hands out stamps on this clock (the frame's age kept).
    capture_factory : builds the capture, ``factory(source)`` or
        ``factory(source, api_preference)``; tests pass a fake.
    """

    def __init__(
        self,
        name: str,
        source: int | str,
        calibration: str | Path | CameraIntrinsics,
        *,
        width: int | None = None,
        height: int | None = None,
        fps: float | None = None,
        grey: bool = False,
        threaded: bool = True,
        api_preference: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        mission_clock: Callable[[], float] | None = None,
        capture_factory: Callable[..., VideoCaptureLike] | None = None,
    ) -> None:
        if (width is None) != (height is None):
            raise ValueError(f"camera {name!r}: give both width and height or neither")
        self.name = name
        self.source = int(source) if isinstance(source, str) and source.isdigit() else source
        if isinstance(calibration, CameraIntrinsics):
            self.calibration: str = "the given intrinsics"
            self.intrinsics = calibration
        else:
            self.calibration = str(calibration)
            self.intrinsics = load_intrinsics(calibration)
        self.requested_size = (width, height) if width is not None else None
        self.fps = fps
        self.grey = grey
        self.threaded = threaded
        self.api_preference = api_preference
        self._clock = clock
        self._mission_clock = mission_clock
        self._capture_factory = capture_factory or cv2.VideoCapture
        self._capture: VideoCaptureLike | None = None
        self._sequence = 0
        self._grabber: _Grabber | None = None

    def setup(self) -> None:
        """Open the device, request the resolution and check it against the calibration."""
        if self._capture is not None:
            return
        intrinsics = self.intrinsics
        width, height = self.requested_size or (intrinsics.width, intrinsics.height)
        capture = self._open()
        try:
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, float(width))
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, float(height))
            if self.fps is not None:
                capture.set(cv2.CAP_PROP_FPS, float(self.fps))
            # Keep the driver queue short so that frames are fresh, where the backend allows.
            capture.set(cv2.CAP_PROP_BUFFERSIZE, 1.0)
            first = self._grab_once(capture)
            if first is None:
                raise CameraOpenError(
                    f"camera {self.name!r}: {self.source!r} opened but delivered no frame"
                )
            self._check_size(first.image, intrinsics)
        except BaseException:
            capture.release()
            raise
        self._capture = capture
        if self.threaded:
            self._grabber = _Grabber(self.name, lambda: self._grab_once(capture))
            self._grabber.start()

    def read(self) -> Frame | None:
        """The newest frame not returned before, or None (no new frame, or the grab failed)."""
        if self._capture is None:
            raise RuntimeError(f"camera {self.name!r}: read() before setup()")
        frame = self._grabber.take() if self._grabber is not None else self._grab_once(self._capture)
        if frame is None or self._mission_clock is None:
            return frame
        age = self._clock() - frame.stamp
        return Frame(frame.image, self._mission_clock() - age, {**frame.meta, "age_s": age})

    def shutdown(self) -> None:
        """Stop the grab thread and release the device. Safe to call twice."""
        grabber, self._grabber = self._grabber, None
        if grabber is not None:
            grabber.stop()
        capture, self._capture = self._capture, None
        if capture is not None:
            capture.release()

    def _open(self) -> VideoCaptureLike:
        try:
            if self.api_preference is None:
                capture = self._capture_factory(self.source)
            else:
                capture = self._capture_factory(self.source, self.api_preference)
        except (cv2.error, OSError) as exc:
            raise CameraOpenError(
                f"camera {self.name!r}: cannot open {self.source!r} ({exc})"
            ) from exc
        if not capture.isOpened():
            capture.release()
            raise CameraOpenError(
                f"camera {self.name!r}: cannot open {self.source!r}: check the device index or "
                "URL, that no other program holds the device, and its permissions"
            )
        return capture

    def _grab_once(self, capture: VideoCaptureLike) -> Frame | None:
        if not capture.grab():
            return None
        grabbed = self._clock()
        stamp, source = capture_stamp(capture, grabbed)
        ok, image = capture.retrieve()
        if not ok or image is None:
            return None
        if self.grey and image.ndim == 3:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        self._sequence += 1
        meta = {"camera": self.name, "seq": self._sequence, "stamp_source": source}
        return Frame(image=image, stamp=stamp, meta=meta)

    def _check_size(self, image: np.ndarray, intrinsics: CameraIntrinsics) -> None:
        height, width = image.shape[:2]
        if (width, height) != (intrinsics.width, intrinsics.height):
            raise CameraOpenError(
                f"camera {self.name!r}: {self.source!r} delivers {width}x{height} but "
                f"{self.calibration} was calibrated at {intrinsics.width}x{intrinsics.height}; "
                "request the calibrated size or recalibrate at this one"
            )


MAX_DRIVER_AGE_S = 0.5
"""A driver timestamp older than this at the grab is not a capture time on our clock."""


def capture_stamp(capture: VideoCaptureLike, grabbed: float) -> tuple[float, str]:
    """(capture instant, ``"driver"`` or ``"grab"``): the driver's ``CAP_PROP_POS_MSEC`` when it
    reads as a time on the grab's clock less than ``MAX_DRIVER_AGE_S`` old, else ``grabbed``."""
    try:
        driver = float(capture.get(cv2.CAP_PROP_POS_MSEC)) / 1000.0
    except (cv2.error, TypeError, ValueError):
        return grabbed, "grab"
    age = grabbed - driver
    if driver > 0.0 and 0.0 <= age <= MAX_DRIVER_AGE_S:
        return driver, "driver"
    return grabbed, "grab"


class _Grabber:
    """Grabs frames in a daemon thread and keeps only the newest one."""

    def __init__(self, name: str, grab: Callable[[], Frame | None]) -> None:
        self._grab = grab
        self._lock = threading.Lock()
        self._latest: Frame | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"grab-{name}", daemon=True)
        self._failures = 0

    def start(self) -> None:
        self._thread.start()

    def take(self) -> Frame | None:
        with self._lock:
            frame, self._latest = self._latest, None
        return frame

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self._grab()
            except cv2.error as exc:
                _log.warning("%s: grab failed: %s", self._thread.name, exc)
                frame = None
            if frame is None:
                # A failed grab returns at once on some backends: do not spin.
                self._failures += 1
                self._stop.wait(min(0.001 * self._failures, 0.1))
                continue
            self._failures = 0
            with self._lock:
                self._latest = frame
