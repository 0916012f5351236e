"""Fault-injecting wrappers around any ``Robot``, ``Camera``, ``Latch`` or target state sensor.

``FaultyRobot``, ``FaultyCamera``, ``FaultyLatch`` and ``FaultyStateSensor`` implement the same
protocols as what they wrap and forward every call, so the executive and the behaviours run the code they run on
hardware; an effect switched on by :class:`orbitree.faults.injector.FaultInjector` changes what a call
returns or does. Effects are keyed by the id of the fault that switched them on, so overlapping
faults combine (two biases add up) and each ends on its own (``remove(fault_id)``). With no
effect on, each call costs one test on top of the wrapped driver's.

Times come from ``clock()``, the executive's clock (mission time). The wrappers know nothing of
fault schedules or mission files; see :mod:`orbitree.faults` for those. ``FaultyCamera``
lives in :mod:`orbitree.drivers.faulty_camera` (imported here with the others).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from orbitree.drivers.faulty_camera import FaultyCamera, hide_markers
from orbitree.drivers.interfaces import (
    DriverDisconnected,
    LatchState,
    RobotState,
)

__all__ = ["COMMANDS", "MOTION_COMMANDS", "FaultyCamera", "FaultyLatch", "FaultyRobot", "FaultyStateSensor",
           "hide_markers"]

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
