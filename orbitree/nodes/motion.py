"""Base classes of leaves that command an arm or its hooks: they own the lifecycle.

``MotionLeaf`` is BT.CPP's ``StatefulActionNode`` on py_trees: a subclass fills in ``start()``
(send the first command; may end at once), ``running()`` (poll, return at once) and optionally
``halted()``, and never overrides ``initialise`` / ``update`` / ``terminate``. The base records
what the leaf set going (``move_l``, ``move_j``, ``speed_l``, or anything passed to
``commanded``) and, however the leaf ends (success, failure, halt), stops what is still going
and nothing else. ``WaypointLeaf`` adds the walk shared by ``search`` and ``relocate``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import py_trees
from pydantic import Field

from orbitree.drivers.interfaces import LatchState
from orbitree.language.keys import robot_key, target_key
from orbitree.language.params import NodeParams
from orbitree.language.quantities import Duration
from orbitree.nodes.leaf import Leaf

Status = py_trees.common.Status
ARM = "arm"  # what a move or a twist sets going; robot.stop() stops it


class Hooks(Protocol):
    """What a leaf may do with the docking hooks (the device's recording latch)."""

    def close(self) -> None: ...

    def open(self) -> None: ...

    def state(self) -> LatchState: ...


class MotionParams(NodeParams):
    robot: str = Field(description="the arm this leaf moves")


class MotionLeaf(Leaf):
    """Runs ``start()`` then ``running()`` in the first tick (as py_trees runs ``initialise``
    then ``update``), unless ``start()`` ends the leaf; ``running()`` on every tick after."""

    params: MotionParams
    _LIFECYCLE: ClassVar[tuple[str, ...]] = ("initialise", "update", "terminate", "tick", "stop")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        overridden = [name for name in MotionLeaf._LIFECYCLE if name in vars(cls)]
        if overridden:
            raise TypeError(f"{cls.__name__} overrides {', '.join(overridden)}: fill in start/running/halted")

    def setup(self, **kwargs: Any) -> None:
        self.device = self.ctx.drivers[self.params.robot]
        self.robot = self.device.robot
        self._started: dict[str, tuple[Callable[[], None], str]] = {}

    def robot_key(self, name: str) -> str:
        return robot_key(self.params.robot, name)

    # hooks --------------------------------------------------------------------------------
    def start(self) -> Status:
        """Send the first command; RUNNING to go on, SUCCESS or FAILURE to end at once."""
        return Status.RUNNING

    def running(self) -> Status:
        """Poll the work started; return at once, with ``feedback_message`` set."""
        raise NotImplementedError

    def halted(self) -> None:
        """Preempted: clean up beyond stopping what was started (the base does that)."""

    # what this leaf set going ------------------------------------------------------------
    def commanded(self, what: str, stop: Callable[[], None], stopped: str = "stopped") -> None:
        """Note that this leaf set ``what`` going; ``stop`` ends it should the leaf end first
        (``stopped`` is how the halt's feedback words it)."""
        self._started[what] = (stop, stopped)

    def finished(self, what: str) -> None:
        """``what`` got where it was sent: there is nothing left to stop."""
        self._started.pop(what, None)

    def move_l(self, tcp2base: np.ndarray, speed: float, acceleration: float) -> None:
        self.robot.move_l(tcp2base, speed, acceleration)
        self.commanded(ARM, self.robot.stop)

    def move_j(self, q: np.ndarray, speed: float, acceleration: float) -> None:
        self.robot.move_j(q, speed, acceleration)
        self.commanded(ARM, self.robot.stop)

    def speed_l(self, twist: np.ndarray, acceleration: float) -> None:
        self.robot.speed_l(twist, acceleration)
        self.commanded(ARM, self.robot.stop)

    def arrived(self) -> bool:
        """True when the last ``move_l`` / ``move_j`` has finished (the arm is at rest)."""
        done = bool(self.robot.motion_done())
        if done:
            self.finished(ARM)
        return done

    def require_latch(self) -> Hooks:
        """The arm's hooks, their commands journalled to the mission log (call in ``setup``)."""
        latch = self.device.recording_latch
        if latch is None:
            raise RuntimeError(f"{self.kind}: robot {self.params.robot!r} has no latch")
        return latch

    # the lifecycle (py_trees calls these; subclasses do not override them) ----------------
    def initialise(self) -> None:
        self._started.clear()
        self._start_status: Status | None = self.start()

    def update(self) -> Status:
        ended, self._start_status = self._start_status, None
        if ended in (Status.SUCCESS, Status.FAILURE):  # start() ended the leaf in its first tick
            return ended
        return self.running()

    def terminate(self, new_status: Status) -> None:
        if new_status == Status.INVALID and self.status == Status.RUNNING:
            self.halted()
        stopped = []
        for what, (stop, words) in reversed(list(self._started.items())):  # last started, first stopped
            stop()
            stopped.append(f"{what} {words}")
        self._started.clear()
        if new_status == Status.INVALID and stopped:
            self.feedback_message = "halted: " + ", ".join(stopped)


class WaypointParams(MotionParams):
    target: str = Field(description="the target to look for")
    dwell: Duration = Field(0.3, ge=0.0, description="pause at each waypoint so the camera can look")


class WaypointLeaf(MotionLeaf):
    """Walks waypoints until the target is seen: go to one, wait until the arm is there, dwell,
    go on. SUCCESS as soon as ``/target/<target>/visible`` is true (the arm stops there),
    FAILURE when the last waypoint was reached in vain. Subclasses say what the waypoints
    are (``plan``), how to go to one (``go``) and what to say and write at the end."""

    params: WaypointParams

    @classmethod
    def reads(cls, params: WaypointParams) -> list[str]:
        return [target_key(params.target, "visible")]

    def plan(self) -> tuple[Sequence[Any], int]:
        """The waypoints of this run, and the index of the first one to visit."""
        raise NotImplementedError

    def go(self, index: int) -> None:
        """Send the move to waypoint ``index`` and set ``feedback_message``."""
        raise NotImplementedError

    def seen(self) -> None:
        """The target came into view at waypoint ``self.index`` (or on the way to it)."""

    def missed(self) -> None:
        """Every waypoint was visited without a sighting."""

    def start(self) -> Status:
        self.waypoints, self.index = self.plan()
        self.dwell_until: float | None = None
        self.go(self.index)
        return Status.RUNNING

    def running(self) -> Status:
        if self.read(target_key(self.params.target, "visible")):
            self.seen()
            return Status.SUCCESS
        if not self.arrived() or not self._dwelt():
            return Status.RUNNING
        self.index += 1
        if self.index >= len(self.waypoints):
            self.missed()
            return Status.FAILURE
        self.go(self.index)
        return Status.RUNNING

    def _dwelt(self) -> bool:
        if self.dwell_until is None:
            self.dwell_until = self.ctx.now + self.params.dwell
        if self.ctx.now < self.dwell_until - 1e-9:
            return False
        self.dwell_until = None
        return True
