"""Per-node tick time, measured while the tree ticks.

py_trees yields each node right after the node finished its part of the tick (children before
their parents). The time between two consecutive yields is therefore the time spent in the node
just yielded *itself* (its ``update``, plus the composite's own bookkeeping), excluding its
children. Summing over a subtree gives the inclusive time.

:meth:`TimingVisitor.tick` ticks a root and times it in one loop (plain lists, one clock read per
node yielded: the executive's cost per node is a few hundred nanoseconds); ``run`` is the same
step as a py_trees visitor, for a ``BehaviourTree`` that visits.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import py_trees


class TimingVisitor(py_trees.visitors.VisitorBase):
    def __init__(self, behaviours: list[py_trees.behaviour.Behaviour]) -> None:
        super().__init__(full=False)
        self.index = {id(b): i for i, b in enumerate(behaviours)}
        n = len(behaviours)
        # the same keyed by the nodes themselves (py_trees' behaviours hash by identity): the
        # tick's lookup is then a subscript, with no id() call; a node it does not know (none
        # of the tree's) gets -1, the spare slot at the end of the lists, which no report reads
        # (the tick log drops a -1 noted). A node class with a hash of its own is looked up by id.
        if all(type(b).__hash__ is object.__hash__ for b in behaviours):
            self._nodes: _Index | _ById = _Index({b: i for i, b in enumerate(behaviours)})
        else:
            self._nodes = _ById(self.index)
        self._n = n
        self._total = [0.0] * (n + 1)
        self._count = [0] * (n + 1)
        self._worst = [0.0] * (n + 1)
        self._unseen = [_UNSEEN] * (n + 1)  # "last logged" entries no node's status or text is
        self._last = 0.0

    # seconds, ticks and the longest self time per node (arrays made when asked for)
    @property
    def total(self) -> np.ndarray:
        return np.array(self._total[:self._n])

    @property
    def count(self) -> np.ndarray:
        return np.array(self._count[:self._n], dtype=np.int64)

    @property
    def worst(self) -> np.ndarray:
        return np.array(self._worst[:self._n])

    def initialise(self) -> None:
        self._last = time.perf_counter()

    def run(self, behaviour: py_trees.behaviour.Behaviour) -> None:
        now = time.perf_counter()
        i = self.index.get(id(behaviour))
        if i is not None:
            spent = now - self._last
            self._total[i] += spent
            self._count[i] += 1
            if spent > self._worst[i]:
                self._worst[i] = spent
        self._last = now

    def tick(self, root: py_trees.behaviour.Behaviour, ticked: list[int] | None = None,
             start: float | None = None, seen: tuple[list[Any], list[str]] | None = None) -> float:
        """Tick ``root`` once, timing every node it ticks (``initialise`` + ``run`` inlined).

        One clock reading (``time.perf_counter``) per node boundary, shared by the node before and
        the node after: ``start``, when given, is the caller's reading just before the tick, and
        the last reading (the end of the tick) is returned. The ids of the nodes ticked are
        appended to ``ticked`` when given; with ``seen`` (each node's status and feedback as the
        tick log last logged them, by id) only those of the nodes that differ from it when
        py_trees yields them (their part of the tick done).
        """
        nodes, total, count, worst = self._nodes, self._total, self._count, self._worst
        clock = time.perf_counter
        last = clock() if start is None else start
        if ticked is not None and seen is not None:
            note = ticked.append
            statuses, messages = seen
        else:  # every node ticked is noted: statuses no node has (one loop, no test of the mode per node)
            note = ticked.append if ticked is not None else _ignore
            statuses, messages = self._unseen, self._unseen
        for node in root.tick():
            now = clock()
            i = nodes[node]  # (-1, the spare slot, for a node not of the tree: no test here)
            spent = now - last
            total[i] += spent
            count[i] += 1
            if spent > worst[i]:
                worst[i] = spent
            if node.status is not statuses[i] or node.feedback_message != messages[i]:
                note(i)
            last = now
        self._last = last
        return last

    def report_us(self) -> dict[int, dict[str, float]]:
        """Node id -> mean and max self time (µs) over the ticks in which it was ticked."""
        out = {}
        for i, n in enumerate(self._count[:self._n]):
            if n:
                out[i] = {
                    "mean": round(float(self._total[i] / n * 1e6), 2),
                    "max": round(float(self._worst[i] * 1e6), 2),
                    "ticks": int(n),
                }
        return out


_UNSEEN = object()


def _ignore(i: int) -> None:
    pass


class _Index(dict):
    """Node -> id, and -1 (the spare slot) for a node it does not hold."""

    def __missing__(self, node: Any) -> int:
        return -1


class _ById:
    """``[node]`` by ``id(node)`` (-1 if unknown): the lookup for nodes hashed by value."""

    def __init__(self, index: dict[int, int]) -> None:
        self.index = index

    def __getitem__(self, node: py_trees.behaviour.Behaviour) -> int:
        return self.index.get(id(node), -1)
