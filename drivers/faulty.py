"""Fault-injecting wrappers around any ``Robot``, ``Camera``, ``Latch`` or target state sensor.

``FaultyRobot``, ``FaultyCamera``, ``FaultyLatch`` and ``FaultyStateSensor`` implement the same
protocols as what they wrap and forward every call, so the executive and the behaviours run the code they run on
hardware; an effect switched on by :class:`orbitree.faults.injector.FaultInjector` changes what a call
returns or does. Effects are keyed by the id of the fault that switched them on, so overlapping
faults combine (two biases add up) and each ends on its own (``remove(fault_id)``). With no
effect on, each call costs one test on top of the wrapped driver's.

Times come from ``clock()``, the executive's clock (mission time). The wrappers know nothing of
fault schedules or mission files; see ``orbitree/faults.py`` for those.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

from orbitree.drivers.interfaces import (
    CameraIntrinsics,
    DriverDisconnected,
    Frame,
    LatchState,
    RobotState,
)

Clock = Callable[[], float]

MOTION_COMMANDS = ("speed_l", "servo_l", "move_l", "move_j")
COMMANDS = (*MOTION_COMMANDS, "stop", "zero_ft")
_EPS = 1e-9


class FaultyRobot:
    """A ``Robot`` whose readings and commands faults can alter.

    Effects: ``bias`` (constant wrench added to every reading), ``spike`` (a wrench added to the
    next reading only), ``freeze_wrench`` (the F/T sensor stops delivering: its last wrench and
    ``wrench_stamp`` repeat), ``protective_stop`` (on a robot that can be put in one, e.g.
    ``SimRobot.trigger_protective_stop``, the robot enters it; otherwise readings report one and
    motion commands do nothing, as a UR does until unlocked), ``disconnect`` (the arm is stopped
    once, as a UR's RTDE watchdog does when its client goes silent, then every call raises
    :class:`DriverDisconnected` until the effect is removed: the reconnection) and
    ``delay_commands`` (commands are queued and forwarded ``delay`` after they were sent, by
    :meth:`flush`; a queued move keeps ``motion_done()`` False).
    """

    def __init__(self, inner: Any, clock: Clock) -> None:
        self._inner = inner
        self._clock = clock
        self.name = inner.name
        self._bias: dict[int, np.ndarray] = {}
        self._spikes: list[np.ndarray] = []
        self._freeze: set[int] = set()
        self._pstop: set[int] = set()
        self._pstop_native = hasattr(inner, "trigger_protective_stop") and hasattr(inner, "unlock_protective_stop")
        self._disconnect: set[int] = set()
        self._delay: dict[int, float] = {}
        self._queue: deque[tuple[float, str, tuple, dict]] = deque()
        self._delivered: tuple[np.ndarray, float] | None = None  # last wrench read, its stamp
        self._frozen: tuple[np.ndarray, float] | None = None
        self._faulty = False

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, attr: str) -> Any:  # anything else a backend offers (SimRobot.tcp2base)
        return getattr(self._inner, attr)

    # effects -------------------------------------------------------------------------------
    def bias(self, fault_id: int, wrench: np.ndarray) -> None:
        self._bias[fault_id] = np.asarray(wrench, dtype=float).reshape(6)
        self._update()

    def spike(self, wrench: np.ndarray) -> None:
        self._spikes.append(np.asarray(wrench, dtype=float).reshape(6))
        self._update()

    def freeze_wrench(self, fault_id: int) -> None:
        self._freeze.add(fault_id)
        self._update()

    def protective_stop(self, fault_id: int) -> None:
        self._pstop.add(fault_id)
        if self._pstop_native:
            self._inner.trigger_protective_stop("fault injection")
        self._update()

    def disconnect(self, fault_id: int) -> None:
        if not self._disconnect:
            self._queue.clear()  # commands in flight are lost with the connection
            self._inner.stop()
        self._disconnect.add(fault_id)
        self._update()

    def delay_commands(self, fault_id: int, delay: float) -> None:
        self._delay[fault_id] = float(delay)
        self._update()

    def remove(self, fault_id: int) -> None:
        """End the effects of one fault (a reconnection, an unlock, the end of a latency...)."""
        self._bias.pop(fault_id, None)
        self._freeze.discard(fault_id)
        if not self._freeze:
            self._frozen = None
        if fault_id in self._pstop:
            self._pstop.discard(fault_id)
            if not self._pstop and self._pstop_native:
                self._inner.unlock_protective_stop()
        self._disconnect.discard(fault_id)
        if self._delay.pop(fault_id, None) is not None and not self._delay:
            self.flush(float("inf"))  # the link is fast again: what was in flight arrives now
        self._update()

    def clear(self) -> None:
        """Drop every effect and every queued command (the end of a run)."""
        self._queue.clear()
        for fault_id in {*self._bias, *self._freeze, *self._pstop, *self._disconnect, *self._delay}:
            self.remove(fault_id)
        self._spikes.clear()
        self._update()

    def flush(self, now: float) -> None:
        """Forward the queued commands due by ``now`` (the injector calls it every tick)."""
        while self._queue and self._queue[0][0] <= now + _EPS:
            _, name, args, kwargs = self._queue.popleft()
            getattr(self._inner, name)(*args, **kwargs)
            if not self._queue:
                self._update()

    def _update(self) -> None:
        self._faulty = bool(
            self._bias or self._spikes or self._freeze or self._pstop or self._disconnect
            or self._delay or self._queue
        )

    def _check_connected(self) -> None:
        if self._disconnect:
            raise DriverDisconnected(f"robot {self.name!r}: connection lost (injected robot_disconnect)")

    # Robot protocol ------------------------------------------------------------------------
    def setup(self) -> None:
        self._check_connected()
        self._inner.setup()

    def shutdown(self) -> None:
        self._inner.shutdown()

    def read(self) -> RobotState:
        if not self._faulty:
            state = self._inner.read()
            self._delivered = (state.wrench, state.wrench_stamp)
            return state
        self._check_connected()
        state = self._inner.read()
        changes: dict[str, Any] = {}
        wrench = state.wrench
        if self._bias or self._spikes:
            wrench = wrench + sum(self._bias.values(), np.zeros(6)) + sum(self._spikes, np.zeros(6))
            self._spikes.clear()
            changes["wrench"] = wrench
        if self._freeze:
            if self._frozen is None:
                self._frozen = self._delivered or (wrench, state.wrench_stamp)
            changes["wrench"], changes["wrench_stamp"] = self._frozen
        else:
            self._delivered = (wrench, state.wrench_stamp)
        if self._pstop and not self._pstop_native:
            changes["protective_stop"] = True
        if any(name in ("move_l", "move_j") for _, name, _, _ in self._queue):
            changes["moving"] = True
        self._update()
        return dataclasses.replace(state, **changes) if changes else state

    def motion_done(self) -> bool:
        if self._faulty:
            self._check_connected()
            if any(name in ("move_l", "move_j") for _, name, _, _ in self._queue):
                return False
        return self._inner.motion_done()

    def _command(self, name: str, args: tuple, kwargs: dict) -> None:
        if self._faulty:
            self._check_connected()
            if self._pstop and not self._pstop_native and name in MOTION_COMMANDS:
                return  # a controller in protective stop ignores motion until unlocked
            if self._delay:
                due = self._clock() + max(self._delay.values())
                self._queue.append((due, name, args, kwargs))
                self._update()
                return
        getattr(self._inner, name)(*args, **kwargs)

    def speed_l(self, *args: Any, **kwargs: Any) -> None:
        self._command("speed_l", args, kwargs)

    def servo_l(self, *args: Any, **kwargs: Any) -> None:
        self._command("servo_l", args, kwargs)

    def move_l(self, *args: Any, **kwargs: Any) -> None:
        self._command("move_l", args, kwargs)

    def move_j(self, *args: Any, **kwargs: Any) -> None:
        self._command("move_j", args, kwargs)

    def stop(self) -> None:
        self._command("stop", (), {})

    def zero_ft(self) -> None:
        self._command("zero_ft", (), {})


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
            frame = dataclasses.replace(frame, image=hide_markers(
                frame.image, hidden, self._boards, self.intrinsics))
        if self._noise:
            sigma = float(np.sqrt(sum(s * s for s in self._noise.values())))
            meta = {**frame.meta, "corner_noise_px": sigma,
                    "corner_noise_seed": int(self._rng.integers(2**31))}
            frame = dataclasses.replace(frame, meta=meta)
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


class FaultyLatch:
    """A ``Latch`` whose hooks a fault can keep from closing (``jam``).

    While jammed, ``close()`` does not reach the hooks; ``state()`` reports CLOSING for the
    latch's travel time after the call, then FAULT (as a latch controller reports a motion that
    did not complete) until the fault ends. From then on a ``SimLatch`` is also set ``jammed``,
    so the simulated latch itself reports FAULT and its hooks stay where they are. ``open()``
    is forwarded; before the FAULT it cancels the failed close. When the fault ends, the latch
    reports its real state again (the hooks never moved: OPEN).
    """

    def __init__(self, inner: Any, clock: Clock, travel_time: float = 1.0) -> None:
        self._inner = inner
        self._clock = clock
        self.name = inner.name
        self.travel_time = float(getattr(inner, "travel_time", travel_time))
        self._jams: set[int] = set()
        self._failed_close: float | None = None  # when the swallowed close() was called
        self._faulted = False
        self._was_jammed: bool | None = None  # a SimLatch's own flag before we jammed it

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    def jam(self, fault_id: int) -> None:
        self._jams.add(fault_id)

    def remove(self, fault_id: int) -> None:
        self._jams.discard(fault_id)
        if not self._jams:
            self._failed_close, self._faulted = None, False
            if self._was_jammed is not None:
                self._inner.jammed = self._was_jammed
                self._was_jammed = None

    def clear(self) -> None:
        for fault_id in list(self._jams):
            self.remove(fault_id)

    # Latch protocol ------------------------------------------------------------------------
    def setup(self) -> None:
        self._inner.setup()

    def shutdown(self) -> None:
        self._inner.shutdown()

    def close(self) -> None:
        if not self._jams:
            self._inner.close()
        elif self._failed_close is None:
            self._failed_close = self._clock()

    def open(self) -> None:
        if not self._faulted:
            self._failed_close = None
        self._inner.open()

    def state(self) -> LatchState:
        if self._faulted:
            return LatchState.FAULT
        if self._failed_close is None:
            return self._inner.state()
        if self._clock() - self._failed_close < self.travel_time - _EPS:
            return LatchState.CLOSING
        self._faulted = True
        if hasattr(self._inner, "jammed"):
            self._was_jammed = bool(self._inner.jammed)
            self._inner.jammed = True
        return LatchState.FAULT


class FaultyStateSensor:
    """A target state sensor (``orbitree.drivers.state_sensor.StateSensor``) whose messages a
    fault can withhold (``drop``).

    While dropped, ``poll()`` still runs the wrapped sensor (it keeps its own schedule) and
    returns no message: every message that arrives meanwhile is lost, as a vision system that has
    lost its target sends nothing. When the effect is removed, messages arrive again.
    """

    def __init__(self, inner: Any, clock: Clock) -> None:
        self._inner = inner
        self._clock = clock
        self._drop: set[int] = set()
        self.lost = 0  # messages withheld

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, attr: str) -> Any:  # period, latency, covariance, measure
        return getattr(self._inner, attr)

    def drop(self, fault_id: int) -> None:
        self._drop.add(fault_id)

    def remove(self, fault_id: int) -> None:
        self._drop.discard(fault_id)

    def clear(self) -> None:
        self._drop.clear()

    def poll(self, now: float, tolerance: float = 1e-9) -> list[Any]:
        arrived = self._inner.poll(now, tolerance)
        if self._drop:
            self.lost += len(arrived)
            return []
        return arrived
