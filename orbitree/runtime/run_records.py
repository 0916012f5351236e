"""What the executive records about its run (a base class of ``Executive``).

``RunRecords`` holds the methods that describe a run rather than drive it: the log's header (the
mission, clock, the mission and recovery trees' structure, the 3-D scene's static part), the
footer's summary (outcome, tick times, phases, faults, safety violations, the drivers' figures)
and the wall-time profile of the last run (``orbitree.runtime.profile``), with the nodes' work
beside the tick it counts (``Offload``). They read the attributes ``Executive`` sets up.
"""

from __future__ import annotations

import datetime as dt
import gc
import time
from typing import Any

import numpy as np

from orbitree.nodes.offload import Offload
from orbitree.runtime.profile import wall_profile
from orbitree.runtime.recorder import FORMAT
from orbitree.runtime.scene import scene_header


class RunRecords:
    """The executive's log header, summary and profile; mixed into ``Executive``."""

    def _structure(self) -> list[dict[str, Any]]:
        """The header's ``nodes``: the mission tree, then the recovery tree (``"tree":
        "recovery"``, its root with no parent), ids continuing."""
        nodes = self.tree.structure()
        if self.recovery is not None:
            base = len(nodes)
            for node in self.recovery.structure():
                parent = None if node["parent"] is None else node["parent"] + base
                nodes.append({**node, "id": node["id"] + base, "parent": parent, "tree": "recovery"})
        return nodes

    def _header(self) -> dict[str, Any]:
        model = self.mission.model
        header = {
            "type": "header",
            "format": FORMAT,
            "mission": model.mission,
            "file": str(self.mission.file),
            "seed": self.seed,
            "rate_hz": model.rate_hz,
            "clock": self.clock,
            "start_time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "nodes": self._structure(),
            "recorded_keys": model.record.keys,
            "phases": model.phases,
        }
        if model.robots:  # the 3-D scene's static part (orbitree.runtime.scene)
            header["scene"] = scene_header(model, self.ctx.drivers, self.ctx.world)
        return header

    def profile(self) -> dict[str, Any]:
        """Where the wall time of the last ``run()`` went (``orbitree.runtime.profile``): the loop's
        parts, each driver's read and step, each node's self time in the tree's tick, each
        simulated camera's rendering and each leaf's offloaded work (perception)."""
        timer = self._timer
        nodes = [(int(i), self._nodes[i].name, float(timer.total[i]), int(timer.count[i]))
                 for i in np.flatnonzero(timer.count)]
        cameras = {}
        if self.ctx.world is not None:
            for name, camera in self.ctx.world.cameras.items():
                cameras[name] = (camera.frames_rendered, camera.render_s, camera.renders_beside,
                                 bool(getattr(camera, "lazy_frames", False)) and not camera.renders_beside)
        workers: dict[str, tuple[int, float, bool]] = {}
        for work in self._offloads():  # two leaves of one name (a search in two branches) add up
            jobs, busy, _ = workers.get(work.name, (0, 0.0, work.threaded))
            workers[work.name] = (jobs + work.jobs, busy + work.busy_s, work.threaded)
        ticks = int(timer.count[0]) if len(timer.count) else 0
        return wall_profile(self.loop_times, nodes, cameras, workers, self._sim_time_s, ticks)

    def _offloads(self) -> list[Offload]:
        """The nodes' work beside the tick (perception): the ``Offload`` values of their attributes.

        Read without asking a node for its ``__dict__``: CPython (3.11+) keeps an object's
        attributes inline until someone does, and from then on every attribute access of that
        object takes a slower path; ``vars()`` of every node, called before the loop, made py_trees'
        own tick slower inside the executive than bare (benchmarks/tick_overhead.py, CPU time:
        executive/bare 1.61 -> 1.52, 33.3 -> 31.0 µs a tick, without it). The garbage collector's
        referents of a node are what it holds as stored: its class and either its attribute values,
        inline, or the one dict they are kept in once made.
        """
        found = []
        for node in self._nodes:
            values = [value for value in gc.get_referents(node) if value is not type(node)]
            if len(values) == 1 and type(values[0]) is dict:  # its __dict__, made already
                values = list(values[0].values())
            found += [value for value in values if isinstance(value, Offload)]
        return found

    def _summary(self, status, reason, clock, tick_times, phases, started) -> dict[str, Any]:
        times = np.asarray(tick_times) if tick_times else np.zeros(1)
        p50, p99 = np.percentile(times, [50, 99])  # one sort for both
        summary: dict[str, Any] = {
            "mission": self.mission.name,
            "status": status,
            "reason": reason,
            "seed": self.seed,
            "sim_time_s": round(clock.now, 6),
            "wall_time_s": round(time.monotonic() - started, 3),
            "ticks": len(tick_times),
            "tick_ms": {
                "p50": round(float(p50), 4),
                "p99": round(float(p99), 4),
                "max": round(float(times.max()), 4),
            },
            "deadline_misses": clock.deadline_misses,
            "final_error": None,
            "in_capture_envelope": None,
            "max_contact_force_n": None,
            "max_tcp_speed_mps": None,
            "phase_s": {self.tree.specs[i].name: round(s, 6) for i, s in phases.items()},
            "faults": self.injector.records,
            "faults_not_injected": self.injector.not_injected(clock.now),
            "safety_violations": self.supervisor.violations,
        }
        for driver in self.drivers:
            for key, value in getattr(driver, "summary", dict)().items():
                current = summary.get(key)
                summary[key] = value if current is None else max(current, value)
        if self.mission.model.robots:
            limits = self.mission.model.safety
            summary["safety_limits"] = {"max_force_n": limits.max_force, "max_tcp_speed_mps": limits.max_tcp_speed}
        summary.update(self.ctx.summary)
        return summary
