"""How the executive's run begins, pauses and ends (a base class of ``Executive``).

``Lifecycle`` holds the methods around the tick loop (orbitree/runtime/executive.py): the drivers'
and both trees' setup before the first tick, the views that may hold the loop between two ticks,
the verdict after a tick (safety, the tree's outcome, ``max_duration``) and the halt however the
run ends (running leaves terminated, drivers stopped and shut down). They work on the attributes
``Executive`` sets up (``drivers``, ``tree``, ``recovery``, ``supervisor``, ``views``, ...).
"""

from __future__ import annotations

import threading
from typing import Any

import py_trees
from py_trees.common import Status

from orbitree.runtime.snapshot import GatingView


class Lifecycle:
    """The executive's setup, gates, verdict and halt; mixed into ``Executive``."""

    def _setup(self) -> None:
        for driver in self.drivers:
            driver.setup()
        # py_trees enforces a setup timeout with a signal, which only the main thread may set;
        # elsewhere (a Dask worker's thread) setup runs without one; so does a tree whose nodes all
        # set up as py_trees' own do (no I/O, nothing to wait for: the watchdog is a thread started
        # and stopped, ~1 ms a run)
        on_main = threading.current_thread() is threading.main_thread()
        watched = on_main and any(not type(node).setup.__module__.startswith("py_trees.")
                                  for node in self.tree.root.iterate())
        self._bt.setup(timeout=15.0 if watched else py_trees.common.Duration.INFINITE)
        if self.recovery is not None:
            for node in self.recovery.root.iterate():
                node.setup()
        for key, value in self.mission.model.blackboard.items():
            self._write(key, value)

    def _verdict(self, fresh: list[dict[str, Any]], now: float) -> tuple[str, str] | None:
        """(status, reason) if the run ends after this tick: safety, the tree's outcome, time."""
        verdict = self.supervisor.verdict(fresh)
        if verdict is not None:
            return verdict
        root_status = self.tree.root.status if self.supervisor.recovering is None else Status.RUNNING
        if root_status == Status.SUCCESS:
            return "SUCCESS", "tree returned SUCCESS"
        if root_status == Status.FAILURE:
            return "FAILURE", f"tree returned FAILURE: {self.tree.failing_path()}"
        max_duration = self.mission.model.max_duration
        if now + self.ctx.period > max_duration - 1e-9:
            return self.supervisor.out_of_time() or ("FAILURE", f"max_duration {max_duration:g} s reached")
        return None

    # pause / step / breakpoints (views that gate the loop) ---------------------------------
    def _gates(self) -> list[GatingView]:
        """Views that may hold the loop between two whole ticks.

        Time held is not mission time (the clock's origin moves by it), so a paused simulation
        resumes where it stopped and on the wall clock no timeout fires for the pause. On the
        wall clock (hardware) the drivers are stopped when a hold begins, since a speed command
        would go on while nothing ticks; the leaves command them again when ticking resumes.
        """
        gates = [v for v in self.views if hasattr(v, "before_tick")]
        on_hold = self._stop_drivers if self.clock == "wall" else None
        for gate in gates:
            gate.attach(self._timer.report_us, on_hold)
        return gates

    def _stop_drivers(self) -> None:
        for driver in self.drivers:
            driver.stop()

    def _halt(self) -> bool:
        """Halt the tree (running leaves' ``terminate`` stop their motions), then the drivers."""
        halted = False
        try:
            for tree in (self.tree, self.recovery):
                if tree is not None and tree.root.status == Status.RUNNING:
                    tree.root.stop(Status.INVALID)
                    halted = True
        finally:
            for driver in self.drivers:
                try:
                    self.ctx.command(driver.name, "stop", reason="halt")
                    driver.stop()
                except Exception as exc:  # unreachable (disconnected): its watchdog stops it
                    self.ctx.event("stop_failed", drivers=[f"{driver.name}: {type(exc).__name__}: {exc}"])
                finally:
                    driver.shutdown()
        return halted

