"""The tick loop: read drivers -> tick the tree -> safety -> record -> views, at a fixed rate.

One ``Executive`` runs one mission once. Per tick it

1. sets the context's clock and writes every driver reading to the blackboard (stamped);
2. ticks the py_trees tree once (a visitor measures the time spent in each node);
3. runs the safety hooks, which may stop the drivers and abort the run;
4. appends one record to the mission log and hands a snapshot to the live views;
5. steps simulated drivers by one period and waits for the next tick (``clock.wait_next``).

However the run ends — success, failure, ``max_duration``, Ctrl-C, SIGTERM or an exception in a
leaf — the tree is halted (every running leaf's ``terminate`` runs, so motions stop), every
driver is stopped and shut down, and the log gets its footer.

This module holds the loop and the executive's construction; the setup, the gates that hold the
loop, the verdict and the halt are ``Lifecycle``'s (orbitree/runtime/lifecycle.py), the log's
header and summary and the wall-time profile ``RunRecords``' (orbitree/runtime/run_records.py).
"""

from __future__ import annotations

import gc
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import py_trees
from py_trees.common import Status

from orbitree.drivers.interfaces import DriverDisconnected
from orbitree.drivers.render_process import RENDER_NICE
from orbitree.faults.injector import FaultInjector
from orbitree.faults.stubs import substitute_leaves
from orbitree.language.keys import FAULTS_ACTIVE
from orbitree.language.loader import Mission
from orbitree.nodes.build import BuiltTree, build_tree
from orbitree.nodes.context import Context
from orbitree.nodes.offload import Offload
from orbitree.nodes.structure import phase_ids
from orbitree.runtime.clock import Clock, SimClock, WallClock
from orbitree.runtime.devices import RobotDevice, build_devices, is_simulated
from orbitree.runtime.lifecycle import Lifecycle
from orbitree.runtime.profile import LoopTimes
from orbitree.runtime.quiet import quiet_debug
from orbitree.runtime.recorder import Recorder
from orbitree.runtime.run_records import RunRecords
from orbitree.runtime.safety import SafetyMonitor
from orbitree.runtime.scene import SceneSampler, observers_of
from orbitree.runtime.snapshot import Snapshot, View
from orbitree.runtime.supervisor import VIOLATIONS_KEY, SafetyHook, Supervisor
from orbitree.runtime.ticklog import TickLog
from orbitree.runtime.timing import TimingVisitor

SWITCH_INTERVAL_S = 2e-4
"""The interpreter's thread switch interval while threads work beside the tick (s)."""

__all__ = ["DriverAdapter", "Executive", "Interrupted", "RunResult", "Snapshot", "View"]


class Interrupted(Exception):
    """Raised in the tick loop on SIGTERM (Ctrl-C arrives as KeyboardInterrupt)."""


class DriverAdapter(Protocol):
    """What the executive needs of a driver: its blackboard keys and a safe stop."""

    name: str

    def keys(self) -> list[str]: ...

    def setup(self) -> None: ...

    def read(self, now: float) -> dict[str, Any]: ...

    def after_tick(self, period: float) -> None: ...

    def stop(self) -> None: ...

    def shutdown(self) -> None: ...


@dataclass
class RunResult:
    status: str  # SUCCESS, FAILURE or ABORTED
    reason: str
    summary: dict[str, Any]
    error: str | None = None


def collect_garbage() -> None:
    """One step of the garbage collector's own schedule, run by the caller when it has time: the
    youngest generation once its allocation count passes its threshold, an older one once the
    younger was collected as many times as the older one's threshold (Python's rule)."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    if counts[0] <= thresholds[0]:
        return
    generation = 0
    if counts[1] >= thresholds[1]:
        generation = 2 if counts[2] >= thresholds[2] else 1
    gc.collect(generation)


@dataclass
class Executive(Lifecycle, RunRecords):
    mission: Mission
    seed: int | None = None
    clock: str = "sim"  # or "wall"
    realtime: bool = False
    log_path: str | None = None
    views: Sequence[View] = ()
    drivers: Sequence[DriverAdapter] | None = None  # default: built from the mission's robots
    safety: Sequence[SafetyHook] = ()
    ctx: Context = field(init=False)
    tree: BuiltTree = field(init=False)

    def __post_init__(self) -> None:
        model = self.mission.model
        seed = model.seed if self.seed is None else self.seed
        self.seed = seed
        self.ctx = Context(period=1.0 / model.rate_hz, seed=seed, rng=np.random.default_rng(seed))
        self.ctx.targets = dict(model.targets)
        if self.drivers is None:
            self.drivers, self.ctx.world = build_devices(model.robots, model.targets, self.ctx, seed,
                                                         base_dir=self.mission.file.parent, orbit=model.orbit)
            if not is_simulated(model.robots):
                self.clock = "wall"
        self.ctx.drivers = {d.name: d for d in self.drivers}
        # paced by the wall clock, long work runs beside the tick: perception in its leaves'
        # worker threads, and a simulated camera renders in a process of its own (started by its
        # setup, stopped by its shutdown), as a real one exposes and transfers its frames while the
        # computer does other things; a thread would hold the interpreter lock the tick needs
        self.ctx.concurrent = self.clock == "wall" or self.realtime
        if self.ctx.concurrent and self.ctx.world is not None:
            # --realtime: the tick first (RENDER_NICE); beside an arm emulated on the wall clock the
            # frames must keep up with the arm
            nice = RENDER_NICE if self.clock == "sim" else 0
            for camera in self.ctx.world.cameras.values():
                camera.render_beside(nice=nice)
        py_trees.blackboard.Blackboard.clear()
        # fault injection: stubs for substituted leaves, then the injector wraps the arms'
        # drivers, the satellites' state sensors and the nodes a tick_overrun names
        self.tree = build_tree(substitute_leaves(self.mission.root, model.substitute, self.ctx), self.ctx)
        self.injector = FaultInjector(model.faults, seed=seed)
        arms = [d for d in self.drivers if isinstance(d, RobotDevice)]
        sensors = []
        if any(t.kind == "satellite" for t in model.targets.values()):  # as build_devices: space on demand
            from orbitree.runtime.space import StateSensorDevice

            sensors = [d for d in self.drivers if isinstance(d, StateSensorDevice)]
        self.injector.install(self.ctx, arms, self.tree, simulated=self.clock == "sim", sensors=sensors)
        self._disconnected: set[str] = set()  # drivers whose read raised DriverDisconnected
        # the safety monitor (after any hooks given) and the recovery tree it hands control to
        self.recovery = build_tree(self.mission.recovery, self.ctx) if self.mission.recovery else None
        if model.robots:
            self.safety = [*self.safety, SafetyMonitor(model.safety, list(model.robots))]
            box = model.safety.workspace
            if box is not None:
                self.ctx.workspace = (np.array(box.min), np.array(box.max))
                if self.ctx.world is not None:
                    self.ctx.world.workspace_box = self.ctx.workspace
        # node ids: the mission tree's, then the recovery tree's (logged and drawn as a second root)
        self._nodes = [*self.tree.behaviours, *(self.recovery.behaviours if self.recovery else ())]
        self._timer = TimingVisitor(self.tree.behaviours)
        self._bt = py_trees.trees.BehaviourTree(self.tree.root)
        self._writer = py_trees.blackboard.Client(name="executive")
        driver_keys = (k for d in self.drivers for k in d.keys())  # noqa: SIM118 (a device's keys(), not a dict)
        for key in {*model.blackboard, FAULTS_ACTIVE, VIOLATIONS_KEY, *driver_keys}:
            self._writer.register_key(key=key, access=py_trees.common.Access.WRITE)
        # keys the writer may set straight into the blackboard's storage, as ``Client.set`` would
        # (absolute, not remapped, no attribute path); others, or an activity stream, go through it
        remaps = self._writer.remappings
        self._direct_keys = frozenset(k for k in self._writer.write if remaps.get(k) == k and "." not in k)
        self.supervisor = Supervisor(self.safety, self.ctx, self.drivers, self._write, self.recovery,
                                     model.safety.recovery)
        self._active_faults: list[int] | None = None  # ids of the faults in /faults/active
        self._fault_revision = -1  # the injector's revision when they were last looked at
        self.loop_times = LoopTimes()  # where the wall time goes (``profile()``)
        self._parts = self.loop_times.parts
        self._ticklog: TickLog | None = None  # the log of the run under way
        self._sim_time_s = 0.0
        self._froze = False  # run() froze the heap (gc.freeze) and unfreezes it at its end

    # ---------------------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Run the mission to its end; however it ends, halt the tree, stop the drivers, log it.

        The heap as the run starts (the modules, the trees, the world) is left out of the garbage
        collector's passes until the run ends (``gc.freeze``): built to last the run, it has nothing
        to collect, and a pass of the oldest generation over it took milliseconds (3.7 ms on
        tick_overhead.py's mission, about one run in ten). Not when something else froze the heap
        already (a fork server's parent): unfreezing would undo its freeze."""
        self._froze = gc.get_freeze_count() == 0 and gc.isenabled()
        if self._froze:
            gc.freeze()
        try:
            return self._run()
        finally:
            if self._froze:
                gc.unfreeze()

    def _run(self) -> RunResult:
        model = self.mission.model
        clock: Clock = SimClock(self.ctx.period, realtime=self.realtime) if self.clock == "sim" \
            else WallClock(self.ctx.period)
        recorder = Recorder(self.log_path)
        header = self._header()
        sampler = None
        if header.get("scene") is not None:
            sampler = SceneSampler(header["scene"], self.ctx.world, observers=observers_of(header["nodes"]))
        ticks = TickLog(recorder, self._nodes, self.ctx, model.record.keys, self.views, sampler)
        ticks.also_show(model.view.keys)
        self._ticklog = ticks  # the timer notes the nodes it ticks in ``ticks.touched``
        tick_times: list[float] = []
        # the top-level phases, found in the header's nodes (the mission tree's come first)
        phases = {i: 0.0 for i in phase_ids(header["nodes"][:len(self.tree.behaviours)], model.phases)}
        phase_nodes = [(i, self._nodes[i]) for i in phases]
        period = self.ctx.period
        running = Status.RUNNING
        status, reason, error = "ABORTED", "not started", None
        offloads: list[Offload] | None = None  # found once set up
        started = time.monotonic()
        self.loop_times = loop = LoopTimes()
        self._parts = parts = loop.parts
        driver_step = loop.driver_step
        faults_s = read_s = tree_s = safety_s = log_s = step_s = 0.0  # the loop's parts, s
        clock_read = time.perf_counter
        switch = sys.getswitchinterval()
        if self.ctx.concurrent:
            # the threads beside the tick hold the interpreter between their OpenCV calls; the
            # tick thread should get it back within a fraction of its period, not Python's 5 ms
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        # paced by the wall clock, Python's cyclic garbage collector runs between ticks, in the
        # loop's slack, instead of inside whichever tick allocates past its threshold (a collection
        # of the older generations took 5-14 ms, two periods at 125 Hz); what exists before the
        # loop is built to last the run and is left out of the collections (frozen with the heap
        # by ``run``: collected first, to freeze none of its garbage)
        collect_between = self.ctx.concurrent and gc.isenabled()
        if collect_between:
            if self._froze:
                gc.unfreeze()
            gc.collect()
            if self._froze:
                gc.freeze()
            gc.disable()
        recorder.open()
        recorder.write(header)
        for view in self.views:
            view.start(header)
        loud = quiet_debug(self._nodes)  # py_trees' debug messages, unless its level is DEBUG
        try:
            self._setup()
            clock.start()
            gates = self._gates()
            supervisor, tree, root = self.supervisor, self.tree, self.tree.root
            ctx, drivers = self.ctx, self.drivers
            check, hooks, write_tick = supervisor.check, supervisor.hooks, ticks.write
            injector, timer_tick, touched, seen = self.injector, self._timer.tick, ticks.touched, ticks.seen
            last_start = model.max_duration - 1e-9  # the verdict's test of time, as _verdict makes it
            no_violations: list[dict[str, Any]] = []
            # work beside a wall-clock tick (perception, a sweep's plan) starts once the tick's own
            # work is done, in the loop's slack, not competing with it for the interpreter
            offloads = self._offloads()  # (made by the nodes' constructors and setups)
            beside = [work for work in offloads if work.threaded]
            for work in beside:
                work.hold = True
            while True:
                for gate in gates:  # a held loop's time is not mission time
                    clock.hold(gate.before_tick(clock.ticks))
                now = clock.now
                # faults, driver readings, one tick of the tree (or of the recovery): _tick, inlined
                ctx.now = now
                started_at = clock_read()
                if not injector.idle:
                    injector.before_tick(now)
                    if injector.revision != self._fault_revision:  # a fault started or ended
                        self._list_faults()
                if drivers:
                    read = clock_read()
                    self._read_drivers(now)
                    t0 = clock_read()
                    read_s += t0 - read
                    faults_s += read - started_at
                else:
                    t0 = clock_read()
                    faults_s += t0 - started_at
                if supervisor.recovering is None:
                    # the timer starts from t0 and returns its last reading, the end of the tick
                    ticked = timer_tick(root, touched, t0, seen)
                else:
                    ticked = self._tick_recovery()
                tree_s += ticked - t0
                tick_ms = (ticked - t0) * 1e3
                tick_times.append(tick_ms)
                for i, node in phase_nodes:
                    if node.status is running:
                        phases[i] += period
                t1 = ticked  # (the phases' bookkeeping counted with what follows: one reading less)
                if hooks:
                    fresh = check(tree)
                    t2 = clock_read()
                    safety_s += t2 - t1
                    t1 = t2
                else:
                    fresh = no_violations
                changed = write_tick(clock.ticks, now, tick_ms, clock.deadline_misses)
                t2 = clock_read()
                log_s += t2 - t1
                if changed and not injector.idle:  # (its after_tick looks at status changes only)
                    injector.after_tick(now, changed)
                    t3 = clock_read()
                    faults_s += t3 - t2
                    t2 = t3
                if fresh or supervisor.recovering is not None or root.status is not running \
                        or now + period > last_start:
                    verdict = self._verdict(fresh, now)
                    safety_s += clock_read() - t2
                    if verdict is not None:
                        status, reason = verdict
                        break
                for driver in drivers:
                    t0 = clock_read()
                    driver.after_tick(period)
                    spent = clock_read() - t0
                    driver_step[driver.name] += spent
                    step_s += spent
                for work in beside:
                    work.release()
                if collect_between:
                    collect_garbage()
                clock.wait_next()
        except (KeyboardInterrupt, Interrupted) as exc:
            reason = "interrupted by signal" if isinstance(exc, Interrupted) else "interrupted (Ctrl-C)"
            status = "ABORTED"
        except Exception as exc:  # a bug in a leaf or driver: stop everything, report, exit 1
            status = "ABORTED"
            reason = f"{self.tree.culprit(exc)}raised {type(exc).__name__}: {exc}"
            error = "".join(traceback.format_exception(exc))
        finally:
            # the loop's parts, added up in locals while it ran (a float add rather than a dict's)
            for part, seconds in (("faults", faults_s), ("drivers read", read_s), ("tree tick", tree_s),
                                  ("safety", safety_s), ("log and views", log_s), ("drivers step", step_s)):
                parts[part] += seconds
            sys.setswitchinterval(switch)
            if collect_between:
                gc.enable()
            try:
                self.injector.finish(clock.now)  # the drivers are themselves again for the halt
            finally:
                try:
                    halted = self._halt()
                    # perception workers end with the run
                    for work in self._offloads() if offloads is None else offloads:
                        work.close()
                finally:
                    loud()  # the nodes' own loggers back, however the halt ends
            self.ctx.event("halt", reason=reason, stopped_drivers=[d.name for d in self.drivers])
            if halted or self.ctx.events:
                ticks.write(clock.ticks, clock.now, 0.0, clock.deadline_misses, final=True)
        loop.stop()
        self._sim_time_s = clock.now
        summary = self._summary(status, reason, clock, tick_times, phases, started)
        recorder.write({"type": "footer", "summary": summary, "node_tick_us": self._timer.report_us(),
                        "error": error})
        recorder.close()
        for view in self.views:
            view.finish(summary)
        return RunResult(status, reason, summary, error)

    def _tick(self, now: float) -> float:
        """Faults, driver readings, one tick of the tree (or of the recovery); its duration in ms.
        ``run`` does the same inline; this is one step of it for harnesses that drive the loop
        themselves (tests/behaviours/grapple_world.py)."""
        self.ctx.now = now
        clock_read = time.perf_counter
        started = clock_read()
        self.injector.before_tick(now)
        if self.injector.revision != self._fault_revision:  # a fault started or ended
            self._list_faults()
        read = clock_read()
        if self.drivers:
            self._read_drivers(now)
        t0 = clock_read()
        ticklog = self._ticklog
        if self.supervisor.recovering is None:
            if ticklog is not None:
                ticked = self._timer.tick(self.tree.root, ticklog.touched, t0, ticklog.seen)
            else:
                ticked = self._timer.tick(self.tree.root, None, t0)
        else:
            ticked = self._tick_recovery()
        parts = self._parts
        parts["faults"] += read - started
        parts["drivers read"] += t0 - read
        parts["tree tick"] += ticked - t0
        return (ticked - t0) * 1e3

    def _list_faults(self) -> None:
        """The injector's revision moved (a fault started or ended): /faults/active anew if the
        active faults changed."""
        injector = self.injector
        self._fault_revision = injector.revision
        active = injector.active
        if [f["id"] for f in active] != self._active_faults:
            self._active_faults = [f["id"] for f in active]
            self._write(FAULTS_ACTIVE, [dict(f) for f in active])

    def _tick_recovery(self) -> float:
        """One tick of the recovery tree; the clock's reading at its end."""
        assert self.recovery is not None
        self.recovery.root.tick_once()
        if self._ticklog is not None:  # nodes the timer does not see ticked
            self._ticklog.rescan()
        return time.perf_counter()

    def _read_drivers(self, now: float) -> None:
        clock_read = time.perf_counter
        spent = self.loop_times.driver_read
        write = self._write
        for driver in self.drivers:
            t0 = clock_read()
            try:
                readings = driver.read(now)
            except DriverDisconnected as exc:  # its blackboard values go stale
                spent[driver.name] += clock_read() - t0
                if driver.name not in self._disconnected:
                    self._disconnected.add(driver.name)
                    self.ctx.event("driver_disconnected", driver=driver.name, error=str(exc))
                continue
            spent[driver.name] += clock_read() - t0
            if self._disconnected and driver.name in self._disconnected:
                self._disconnected.discard(driver.name)
                self.ctx.event("driver_reconnected", driver=driver.name)
            for key, value in readings.items():
                write(key, value)

    # ---------------------------------------------------------------------------------------
    def _write(self, key: str, value: Any) -> None:
        if key in self._direct_keys and py_trees.blackboard.Blackboard.activity_stream is None:
            py_trees.blackboard.Blackboard.storage[key] = value  # what Client.set does for such a key
        else:
            self._writer.set(key, value, overwrite=True)
        ctx = self.ctx
        ctx.stamps[key] = ctx.now  # ctx.touched(key), inlined
        ctx.dirty[key] = None

