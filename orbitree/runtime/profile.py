"""Where a run's wall time went: ``orbitree run --profile FILE`` (issue 15).

The executive always keeps the cheap counters this needs (two clock reads per driver call and
per loop part): the time in each driver's ``read`` (sensors; a simulated camera renders there
unless it renders beside the loop) and ``after_tick`` (a simulated arm steps its world there),
in the tree's tick (split per node by :class:`~orbitree.runtime.timing.TimingVisitor`'s self
times), in the log and views, and in the safety supervisor ("drivers read" also holds writing
the readings to the blackboard). Besides, a simulated camera counts
its rendering and a leaf's :class:`~orbitree.nodes.offload.Offload` the time of its jobs
(perception): on the simulated clock they run inside a driver read or a node's tick (their
time is part of those too), with ``--realtime`` or on hardware in threads beside the loop.

:func:`wall_profile` gathers these into one JSON-able dict; :func:`format_profile` prints the
short table.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

LOOP_PARTS = ("drivers read", "tree tick", "drivers step", "safety", "log and views", "faults")


class LoopTimes:
    """Seconds per loop part and per driver call, accumulated over a run."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = dict.fromkeys(LOOP_PARTS, 0.0)
        self.driver_read: dict[str, float] = defaultdict(float)
        self.driver_step: dict[str, float] = defaultdict(float)
        self.started = time.perf_counter()
        self.ended: float | None = None

    def add(self, part: str, seconds: float) -> None:
        self.parts[part] += seconds

    def stop(self) -> None:
        self.ended = time.perf_counter()

    @property
    def wall_s(self) -> float:
        return (self.ended if self.ended is not None else time.perf_counter()) - self.started


def wall_profile(loop: LoopTimes, node_seconds: list[tuple[int, str, float, int]],
                 cameras: dict[str, tuple[int, float, bool, bool]],
                 workers: dict[str, tuple[int, float, bool]], sim_time_s: float,
                 ticks: int) -> dict[str, Any]:
    """The profile of one run.

    ``node_seconds``: (node id, name, self seconds, ticks) per node ticked; ``cameras``: name ->
    (frames rendered, seconds, rendered beside the loop, rendered when read: inside the readers'
    time, e.g. perception's); ``workers``: name -> (jobs, seconds,
    threaded).
    """
    wall = loop.wall_s
    in_loop = sum(loop.parts.values())

    def share(seconds: float) -> float:
        return round(100.0 * seconds / wall, 2) if wall > 0 else 0.0

    nodes = sorted(node_seconds, key=lambda n: -n[2])
    return {
        "wall_s": round(wall, 4),
        "sim_time_s": round(sim_time_s, 6),
        "ticks": ticks,
        "sim_per_wall": round(sim_time_s / wall, 4) if wall > 0 else None,
        "loop": {part: {"s": round(s, 4), "percent": share(s)} for part, s in loop.parts.items()}
        | {"outside the loop parts (setup, pacing, halt)": {"s": round(wall - in_loop, 4),
                                                            "percent": share(wall - in_loop)}},
        "nodes": [{"id": i, "name": name, "s": round(s, 5), "percent": share(s), "ticks": n,
                   "mean_us": round(1e6 * s / n, 2) if n else 0.0} for i, name, s, n in nodes],
        "drivers": {name: {"read_s": round(loop.driver_read.get(name, 0.0), 4),
                           "step_s": round(loop.driver_step.get(name, 0.0), 4),
                           "percent": share(loop.driver_read.get(name, 0.0) + loop.driver_step.get(name, 0.0))}
                    for name in sorted({*loop.driver_read, *loop.driver_step})},
        "rendering": {name: {"frames": n, "s": round(s, 4), "mean_ms": round(1e3 * s / n, 3) if n else 0.0,
                             "percent": share(s), "beside_the_loop": beside, "on_demand": on_demand}
                      for name, (n, s, beside, on_demand) in cameras.items()},
        "perception": {name: {"frames": n, "s": round(s, 4), "mean_ms": round(1e3 * s / n, 3) if n else 0.0,
                              "percent": share(s), "beside_the_loop": threaded}
                       for name, (n, s, threaded) in workers.items()},
    }


def format_profile(profile: dict[str, Any], top_nodes: int = 8) -> str:
    """A short table of :func:`wall_profile`'s result."""
    lines = [f"wall time {profile['wall_s']:.2f} s for {profile['sim_time_s']:.2f} s of mission "
             f"({profile['ticks']} ticks, {profile['sim_per_wall'] or 0:.2f}x real time)",
             f"  {'where':<46} {'s':>9} {'%':>6}"]

    def row(label: str, seconds: float, percent: float) -> None:
        lines.append(f"  {label:<46} {seconds:>9.3f} {percent:>6.1f}")

    for part, v in profile["loop"].items():
        row(part, v["s"], v["percent"])
    for name, v in profile["drivers"].items():
        row(f"driver {name}: read", v["read_s"], 100.0 * v["read_s"] / max(profile["wall_s"], 1e-12))
        row(f"driver {name}: step", v["step_s"], 100.0 * v["step_s"] / max(profile["wall_s"], 1e-12))
    for name, v in profile["rendering"].items():
        where = "beside the loop" if v["beside_the_loop"] else \
            "as read, inside the reader's time" if v.get("on_demand") else "in its driver's read"
        row(f"rendering {name} ({v['frames']} frames, {where})", v["s"], v["percent"])
    for name, v in profile["perception"].items():
        where = "beside the loop" if v["beside_the_loop"] else "in its node's tick"
        row(f"{name} ({v['frames']} jobs, {where})", v["s"], v["percent"])  # a frame, a sweep's plan
    for node in profile["nodes"][:top_nodes]:
        row(f"node {node['id']} {node['name']}", node["s"], node["percent"])
    return "\n".join(lines)
