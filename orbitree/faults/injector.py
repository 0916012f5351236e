"""The fault injector that plays a mission's ``faults:`` schedule, and node substitution.

The schedule and the effect of each fault kind are documented in :mod:`orbitree.language.fault_spec`; this
module applies them: :class:`FaultInjector` wraps the drivers of each arm (the wrappers of
:mod:`orbitree.drivers.faulty`), starts and ends faults as the executive ticks, and records
each one in the log and the summary; :func:`substitute_leaves` swaps leaves for stubs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import py_trees

from orbitree.drivers.faulty import FaultyCamera, FaultyLatch, FaultyRobot, FaultyStateSensor
from orbitree.faults.schedule import ScheduledFault
from orbitree.language.fault_spec import (
    CAMERA_KINDS,
    RobotFault,
    StateSensorDropoutFault,
    TargetBumpedFault,
    TickOverrunFault,
    find_nodes,
    resolve_name,
)
from orbitree.nodes.build import BuiltTree
from orbitree.nodes.context import Context
from orbitree.skills.board_model import BOARDS, make_aruco_board

# --------------------------------------------------------------------------------------------
# the injector


class _Overrun:
    """Wraps one behaviour's ``tick`` so that it stalls while a tick_overrun is active."""

    def __init__(self, behaviour: py_trees.behaviour.Behaviour, stall: Callable[[float], None]) -> None:
        self.delays: dict[int, float] = {}
        self.count = 0
        self._stall = stall
        self._tick = behaviour.tick
        behaviour.tick = self.tick  # type: ignore[method-assign]

    def tick(self):
        if self.delays:
            self.count += 1
            self._stall(max(self.delays.values()))
        yield from self._tick()


class Arm(Protocol):
    """What the injector needs of an arm's device (``orbitree.runtime.devices.RobotDevice``)."""

    name: str
    spec: Any  # its RobotSpec
    driver: Any
    camera: Any
    latch: Any

    def replace_driver(self, robot: Any) -> None: ...


class SensedTarget(Protocol):
    """What the injector needs of a satellite's state sensor device
    (``orbitree.runtime.space.StateSensorDevice``): its target's name and the sensor it polls."""

    target: str
    sensor: Any


class FaultInjector:
    """Plays a fault schedule on the drivers and the tree of one run.

    The executive builds it from ``mission.model.faults``, calls :meth:`install` once (after the
    drivers and the tree exist, before ``setup``), :meth:`before_tick` at the start of every
    tick (before the drivers are read), :meth:`after_tick` with the statuses that changed in
    the tick, and :meth:`finish` when the run ends (before the tree is halted and the drivers
    stopped, so that halting reaches the real drivers). ``records`` is the summary's ``faults``.
    """

    def __init__(self, faults: Sequence[Any] = (), seed: int = 0) -> None:
        self.faults = list(faults)
        self.seed = seed
        self.records: list[dict[str, Any]] = []
        self.robots: dict[str, FaultyRobot] = {}
        self.cameras: dict[str, FaultyCamera] = {}
        self.latches: dict[str, FaultyLatch] = {}
        self.state_sensors: dict[str, FaultyStateSensor] = {}  # by target
        self._entries: list[ScheduledFault] = []
        self.revision = 0  # counts the faults started and ended (the executive republishes on a change)
        # nothing scheduled and no arm to deliver to: before_tick and after_tick have nothing to
        # do (the executive then calls neither); False from the first arm or fault on
        self.idle = True
        self._overruns: dict[int, _Overrun] = {}  # by node id
        self._ctx: Context | None = None
        self._arms: list[Arm] = []
        self._tree: BuiltTree | None = None
        self._simulated = True

    # setting up ----------------------------------------------------------------------------
    def install(self, ctx: Context, arms: Sequence[Arm], tree: BuiltTree, *, simulated: bool = True,
                sensors: Sequence[SensedTarget] = ()) -> None:
        """Wrap the drivers of every arm (below the command recorder) and the satellites' state
        sensors, and schedule the faults."""
        self._ctx, self._tree, self._simulated = ctx, tree, simulated
        self._arms = list(arms)
        clock = self._now
        for i, device in enumerate(arms):
            name = device.name
            robot = FaultyRobot(device.driver, clock)
            device.replace_driver(robot)  # the recorder journals, then the fault acts
            self.robots[name] = robot
            self.idle = False
            if device.camera is not None:
                device.camera = self.cameras[name] = FaultyCamera(
                    device.camera, clock, boards=self._boards(ctx), seed=[self.seed, 7, i]
                )
            if device.latch is not None:
                travel = device.spec.latch.travel_time if device.spec.latch is not None else 1.0
                device.latch = self.latches[name] = FaultyLatch(device.latch, clock, travel)
        for device in sensors:
            device.sensor = self.state_sensors[device.target] = FaultyStateSensor(device.sensor, clock)
        for fault in self.faults:
            self._schedule(fault, arms)

    def inject(self, fault: Any) -> None:
        """Add a fault to the schedule of a running mission (a live view's 'inject' button)."""
        if self._ctx is None:
            raise RuntimeError("install the injector before injecting")
        self.faults.append(fault)
        self._schedule(fault, self._arms)

    def _schedule(self, fault: Any, arms: Sequence[Any]) -> None:
        assert self._tree is not None
        robot = self._robot_of(fault, arms) if isinstance(fault, RobotFault) else None
        if isinstance(fault, RobotFault) and robot not in self.robots:
            raise ValueError(f"{fault.kind}: no arm {robot!r} to inject it into (arms: {', '.join(self.robots)})")
        target = None
        if isinstance(fault, TargetBumpedFault):
            target, problem = resolve_name(fault.target, list(self._ctx.targets), "target")
            if problem:
                raise ValueError(f"target_bumped: {problem}")
        if isinstance(fault, StateSensorDropoutFault):
            target, problem = resolve_name(fault.target, list(self.state_sensors), "target")
            if problem:
                raise ValueError(f"state_sensor_dropout: {problem} (targets with a state sensor)")
        nodes = find_nodes(self._tree.specs, fault.when_node) if fault.when_node is not None else []
        entry = ScheduledFault(len(self._entries), fault, robot, target, nodes, fault.at)
        self._entries.append(entry)
        self.idle = False
        if isinstance(fault, TickOverrunFault):
            for node in find_nodes(self._tree.specs, fault.node):
                if node not in self._overruns:
                    self._overruns[node] = _Overrun(self._tree.behaviours[node], self._stall)

    @staticmethod
    def _robot_of(fault: Any, arms: Sequence[Any]) -> str | None:
        if not isinstance(fault, RobotFault):
            return None
        if fault.robot is not None:
            return fault.robot
        return arms[0].name if len(arms) == 1 else None

    @staticmethod
    def _boards(ctx: Context) -> list[Any]:
        kinds = {getattr(t, "board", "sirom") for t in ctx.targets.values()} or {"sirom"}
        return [make_aruco_board(BOARDS[kind]()) for kind in sorted(kinds) if kind in BOARDS]  # not charuco

    def _now(self) -> float:
        assert self._ctx is not None
        return self._ctx.now

    # the tick loop -------------------------------------------------------------------------
    def before_tick(self, now: float) -> None:
        """End the faults whose time is up, start the due ones, deliver delayed commands."""
        if not self._entries and not self.robots:  # nothing scheduled, no arm to deliver to
            return
        for entry in self._entries:
            if entry.expired(now):
                self._deactivate(entry, now)
        for entry in self._entries:
            if entry.due(now):
                self._activate(entry, now)
        for robot in self.robots.values():
            robot.flush(now)

    def after_tick(self, now: float, changed: dict[int, str]) -> None:
        """Schedule the ``when`` faults whose event happened in this tick (for the next tick)."""
        if not changed:
            return
        period = self._ctx.period if self._ctx is not None else 0.0
        for entry in self._entries:
            if entry.state != "pending" or entry.start is not None or not entry.trigger_nodes:
                continue
            wanted = entry.spec.when_status
            if any(changed.get(node) == wanted for node in entry.trigger_nodes):
                entry.start = now + period

    def finish(self, now: float) -> None:
        """End every active fault and restore the drivers (the run is over)."""
        for entry in self._entries:
            if entry.state == "active":
                self._deactivate(entry, now)
        for wrapper in (*self.robots.values(), *self.cameras.values(), *self.latches.values(),
                        *self.state_sensors.values()):
            wrapper.clear()

    def not_injected(self, now: float) -> list[dict[str, Any]]:
        """Scheduled faults that never started (the run ended first, or their event never came),
        each with the reason: a fault test that silently tested nothing is worse than none."""
        out = []
        for entry in self._entries:
            if entry.state != "pending":
                continue
            fault = entry.spec
            if entry.start is not None:
                why = f"due at {entry.start:g} s; the run ended at {now:g} s"
            else:
                why = f"'{fault.when}' never happened before the run ended at {now:g} s"
            out.append({"id": entry.index, "kind": fault.kind, "trigger": fault.trigger(), "reason": why})
        return out

    @property
    def active(self) -> list[dict[str, Any]]:
        """The summary entries of the faults active now."""
        return [e.record for e in self._entries if e.state == "active"]

    # effects -------------------------------------------------------------------------------
    def _activate(self, entry: ScheduledFault, now: float) -> None:
        assert self._ctx is not None
        fault = entry.spec
        entry.state, entry.start = "active", now
        self.revision += 1
        duration = fault.duration
        if isinstance(fault, TickOverrunFault) and duration is None:
            duration = self._ctx.period  # once: the tick it starts in
        entry.end = None if duration is None else now + duration
        params = fault.params()
        if entry.robot is not None:
            params["robot"] = entry.robot
        if entry.target is not None:
            params["target"] = entry.target
        problem = self._apply(entry, params)
        entry.record = {
            "id": entry.index, "kind": fault.kind, "start": round(now, 6), "end": None,
            "trigger": fault.trigger(), "params": params,
        }
        self.records.append(entry.record)
        self._ctx.event("fault", fault=fault.kind, phase="start", id=entry.index, t=now, **params)
        if problem is not None:
            entry.record["injected"] = False
            entry.record["note"] = problem
            self._ctx.event("fault_not_injected", fault=fault.kind, id=entry.index, t=now, reason=problem)
        if fault.instantaneous:
            self._deactivate(entry, now)

    def _deactivate(self, entry: ScheduledFault, now: float) -> None:
        assert self._ctx is not None
        entry.state = "done"
        self.revision += 1
        entry.record["end"] = round(now, 6)
        i = entry.index
        if entry.robot is not None:
            for wrappers in (self.robots, self.cameras, self.latches):
                if entry.robot in wrappers:
                    wrappers[entry.robot].remove(i)
        if entry.target in self.state_sensors:
            self.state_sensors[entry.target].remove(i)
        for overrun in self._overruns.values():
            overrun.delays.pop(i, None)
        self._ctx.event("fault", fault=entry.spec.kind, phase="end", id=i, t=now)

    def _apply(self, entry: ScheduledFault, params: dict[str, Any]) -> str | None:
        """Switch the fault's effect on; returns why it could not be, if so."""
        fault, i = entry.spec, entry.index
        kind = fault.kind
        if kind in CAMERA_KINDS:
            camera = self.cameras[entry.robot]
            if kind == "camera_dropout":
                camera.drop(i)
            elif kind == "marker_occlusion":
                camera.occlude(i, fault.markers)
            elif kind == "pose_noise":
                camera.corner_noise(i, fault.sigma_px)
            else:
                camera.delay(i, fault.delay)
            return None
        robot = self.robots.get(entry.robot) if entry.robot is not None else None
        if kind == "ft_bias":
            robot.bias(i, np.array([*fault.force, *fault.torque]))
        elif kind == "ft_spike":
            axis = np.array(fault.axis if fault.axis is not None else
                            np.random.default_rng([self.seed, 11, i]).normal(size=3), dtype=float)
            axis /= np.linalg.norm(axis)
            params["axis"] = np.round(axis, 6).tolist()
            robot.spike(np.concatenate([fault.magnitude * axis, np.zeros(3)]))
        elif kind == "ft_dropout":
            robot.freeze_wrench(i)
        elif kind == "protective_stop":
            robot.protective_stop(i)
        elif kind == "robot_disconnect":
            robot.disconnect(i)
        elif kind == "command_latency":
            robot.delay_commands(i, fault.delay)
        elif kind == "latch_failure":
            self.latches[entry.robot].jam(i)
        elif kind == "state_sensor_dropout":
            self.state_sensors[entry.target].drop(i)
        elif kind == "tick_overrun":
            for node in find_nodes(self._tree.specs, fault.node):
                self._overruns[node].delays[i] = fault.delay
        elif kind == "target_bumped":
            world = self._ctx.world
            if world is None:
                return "no simulated world: a real target cannot be moved by software"
            world.push_target(entry.target, fault.offset.matrix(), speed=fault.speed,
                              angular_speed=fault.angular_speed, force=fault.force)
        return None

    def _stall(self, delay: float) -> None:
        """The overrun itself: real time on the wall clock, world time on the simulated one."""
        if not self._simulated:
            time.sleep(delay)
        elif self._ctx is not None and self._ctx.world is not None:
            self._ctx.world.step(delay)
