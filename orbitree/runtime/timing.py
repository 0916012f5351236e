"""Per-node tick time, measured by a py_trees visitor.

py_trees yields each node to the visitors right after the node finished its part of the tick
(children before their parents). The time between two consecutive visits is therefore the time
spent in the node just visited *itself* (its ``update``, plus the composite's own bookkeeping),
excluding its children. Summing over a subtree gives the inclusive time.
"""

from __future__ import annotations

import time

import numpy as np
import py_trees


class TimingVisitor(py_trees.visitors.VisitorBase):
    def __init__(self, behaviours: list[py_trees.behaviour.Behaviour]) -> None:
        super().__init__(full=False)
        self.index = {id(b): i for i, b in enumerate(behaviours)}
        self.total = np.zeros(len(behaviours))
        self.count = np.zeros(len(behaviours), dtype=np.int64)
        self.worst = np.zeros(len(behaviours))
        self._last = 0.0

    def initialise(self) -> None:
        self._last = time.perf_counter()

    def run(self, behaviour: py_trees.behaviour.Behaviour) -> None:
        now = time.perf_counter()
        i = self.index.get(id(behaviour))
        if i is not None:
            spent = now - self._last
            self.total[i] += spent
            self.count[i] += 1
            if spent > self.worst[i]:
                self.worst[i] = spent
        self._last = now

    def report_us(self) -> dict[int, dict[str, float]]:
        """Node id -> mean and max self time (µs) over the ticks in which it was ticked."""
        out = {}
        for i in np.flatnonzero(self.count):
            out[int(i)] = {
                "mean": round(float(self.total[i] / self.count[i] * 1e6), 2),
                "max": round(float(self.worst[i] * 1e6), 2),
                "ticks": int(self.count[i]),
            }
        return out
