"""A bench for tick-by-tick leaf tests: scripted fake arm and hooks, the real recording device.

``Bench.tick()`` does what the executive does in one tick, with nothing simulated: the device's
readings go to the blackboard, the tree is ticked once, the fakes advance one step and the
clock one period. It returns every node's status (``"sweep=R"``); ``sent`` holds the commands
journalled that tick (``"arm.move_j"``, ``"arm_latch.close"``), as the mission log has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import py_trees
from py_trees.common import Status
from scipy.spatial.transform import Rotation

from orbitree.drivers.interfaces import DriverDisconnected, LatchState, RobotState
from orbitree.language.world_spec import RobotSpec
from orbitree.nodes.context import Context
from orbitree.nodes.leaf import Leaf
from orbitree.runtime.devices import RobotDevice

LETTER = {Status.RUNNING: "R", Status.SUCCESS: "S", Status.FAILURE: "F", Status.INVALID: "-"}


class FakeRobot:
    """An arm whose moves end ``move_ticks`` steps after they are sent, at ``reach`` of the way.

    Every command is journalled in ``calls`` as ``(name, *args)``; ``motion_done`` (a poll) is not.
    """

    def __init__(self, tcp2base: np.ndarray | None = None, q: Sequence[float] = (0.0,) * 6,
                 move_ticks: int = 2, reach: float = 1.0) -> None:
        self.name = "arm"
        self.tcp2base = np.eye(4) if tcp2base is None else np.array(tcp2base, dtype=float)
        self.q = np.array(q, dtype=float)
        self.wrench = np.zeros(6)
        self.protective_stop = False
        self.move_ticks, self.reach = move_ticks, reach
        self.calls: list[tuple[Any, ...]] = []
        self.connected = True
        self._left = 0  # steps until the move under way ends
        self._end: tuple[str, np.ndarray] | None = None
        self._stamp = 0

    def setup(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def read(self) -> RobotState:
        self._stamp += 1
        zeros = np.zeros(6)
        return RobotState(float(self._stamp), self.q.copy(), zeros, self.tcp2base.copy(), zeros,
                          self.wrench.copy(), self.protective_stop, moving=self._left > 0)

    def move_l(self, tcp2base: np.ndarray, speed: float = 0.25, acceleration: float = 1.2) -> None:
        self._send("move_l", tcp2base, speed, acceleration)
        start, goal = self.tcp2base.copy(), np.array(tcp2base, dtype=float)
        goal[:3, 3] = start[:3, 3] + self.reach * (goal[:3, 3] - start[:3, 3])
        self._left, self._end = self.move_ticks, ("tcp2base", goal)

    def move_j(self, q: np.ndarray, speed: float = 1.05, acceleration: float = 1.4) -> None:
        self._send("move_j", q, speed, acceleration)
        self._left, self._end = self.move_ticks, ("q", np.array(q, dtype=float))

    def speed_l(self, twist: np.ndarray, acceleration: float = 0.5) -> None:
        self._send("speed_l", np.array(twist, dtype=float), acceleration)

    def servo_l(self, tcp2base: np.ndarray) -> None:
        self._send("servo_l", tcp2base)

    def stop(self) -> None:
        self._send("stop")
        self._left, self._end = 0, None

    def zero_ft(self) -> None:
        self._send("zero_ft")

    def motion_done(self) -> bool:
        if not self.connected:
            raise DriverDisconnected(f"{self.name}: link down")
        return self._left == 0

    def step(self) -> None:
        if self._left == 0:
            return
        self._left -= 1
        if self._left == 0 and self._end is not None:
            setattr(self, *self._end)
            self._end = None

    def _send(self, name: str, *args: Any) -> None:
        if not self.connected:
            raise DriverDisconnected(f"{self.name}: link down")
        self.calls.append((name, *args))


class FakeLatch:
    """Hooks that reach OPEN or CLOSED ``travel_ticks`` steps after the command; ``jam()`` makes
    them report FAULT. ``calls`` journals ``close`` and ``open``."""

    def __init__(self, travel_ticks: int = 2, state: LatchState = LatchState.OPEN) -> None:
        self.name = "arm_latch"
        self.travel_ticks = travel_ticks
        self.calls: list[str] = []
        self.jammed = False
        self.connected = True
        self._at, self._going, self._left = state, state, 0

    def setup(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def close(self) -> None:
        self._command("close", LatchState.CLOSED)

    def open(self) -> None:
        self._command("open", LatchState.OPEN)

    def state(self) -> LatchState:
        if self.jammed:
            return LatchState.FAULT
        if self._left:
            return LatchState.CLOSING if self._going == LatchState.CLOSED else LatchState.OPENING
        return self._at

    def step(self) -> None:
        if self._left and not self.jammed:
            self._left -= 1
            if self._left == 0:
                self._at = self._going

    def _command(self, name: str, going: LatchState) -> None:
        if not self.connected:
            raise DriverDisconnected(f"{self.name}: link down")
        self.calls.append(name)
        self._going, self._left = going, self.travel_ticks


@dataclass
class Bench:
    ctx: Context
    robot: FakeRobot
    latch: FakeLatch | None
    device: RobotDevice
    leaf: Leaf
    root: py_trees.behaviour.Behaviour
    sent: list[str] = field(default_factory=list)  # commands journalled in the last tick
    events: list[dict[str, Any]] = field(default_factory=list)  # events of the last tick

    def set(self, key: str, value: Any) -> None:
        """Write a blackboard key as another leaf would (perceive, a condition's writer)."""
        py_trees.blackboard.Blackboard.set(key, value)
        self.ctx.touched(key)

    def get(self, key: str) -> Any:
        return py_trees.blackboard.Blackboard.get(key)

    def tick(self) -> str:
        """One executive tick; returns ``"name=R ..."`` for every node of the tree."""
        for key, value in self.device.read(self.ctx.now).items():
            self.set(key, value)
        self.root.tick_once()
        _, commands, self.events = self.ctx.take_tick_records()
        self.sent = [f"{c['device']}.{c['cmd']}" for c in commands]
        self.robot.step()
        if self.latch is not None:
            self.latch.step()
        self.ctx.now = round(self.ctx.now + self.ctx.period, 9)
        return self.state()

    def state(self) -> str:
        nodes = [self.root, *self.root.children]
        return " ".join(f"{node.name}={LETTER[node.status]}" for node in nodes)

    def run(self, expected: Sequence[tuple[str, list[str], str | None]]) -> None:
        """Tick once per row, checking ``(statuses, commands sent, feedback or None)``."""
        for i, (statuses, sent, feedback) in enumerate(expected, start=1):
            t = self.ctx.now
            got = (self.tick(), self.sent, self.leaf.feedback_message if feedback is not None else None)
            assert got == (statuses, sent, feedback), f"tick {i} (t = {t:.1f} s): got {got}"


def make_bench(leaf_class: type[Leaf], params: dict[str, Any], *, robot: FakeRobot | None = None,
               latch: FakeLatch | None = None, spec: dict[str, Any] | None = None,
               preempt: Sequence[str] | None = None, period: float = 0.1) -> Bench:
    """``leaf_class`` on a fake arm named ``arm`` (with ``latch``; ``spec``: its RobotSpec fields).

    With ``preempt`` (status letters, one per tick, then SUCCESS), the leaf runs under a selector
    whose first child, ``preempt?``, halts it when it succeeds, as a guard does in a mission.
    """
    ctx = Context(period=period)
    robot = robot or FakeRobot()
    device = RobotDevice("arm", RobotSpec.model_validate(spec or {}), robot, None, ctx, latch)
    ctx.drivers["arm"] = device
    name = params.pop("name", leaf_class.kind)
    leaf = leaf_class(name, leaf_class.Params.model_validate(params), ctx)
    leaf.setup()
    root: py_trees.behaviour.Behaviour = leaf
    if preempt is not None:
        statuses = [{"S": Status.SUCCESS, "F": Status.FAILURE, "R": Status.RUNNING}[s] for s in preempt]
        guard = py_trees.behaviours.StatusQueue("preempt?", queue=statuses, eventually=Status.SUCCESS)
        root = py_trees.composites.Selector("guarded", memory=False, children=[guard, leaf])
    return Bench(ctx, robot, latch, device, leaf, root)


def pose(xyz: Sequence[float] = (0.0, 0.0, 0.0), rotvec: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """(4, 4) pose from a translation (m) and a rotation vector (rad)."""
    out = np.eye(4)
    out[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    out[:3, 3] = xyz
    return out
