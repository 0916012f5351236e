"""Build py_trees behaviours from checked node specifications.

Building needs no hardware: leaves only store their configuration in ``__init__``. The result
keeps, for every behaviour, its pre-order id and spec, which the recorder, the views and the
timing report use to name nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import py_trees
from py_trees.common import OneShotPolicy, Status

from orbitree.language.parser import NodeSpec
from orbitree.nodes.context import Context
from orbitree.nodes.control import ClockTimeout, RateLimit, make_guard
from orbitree.nodes.structure import phase_ids

Behaviour = py_trees.behaviour.Behaviour


@dataclass
class BuiltTree:
    root: Behaviour
    specs: list[NodeSpec]  # by node id (pre-order)
    behaviours: list[Behaviour]  # by node id
    parents: list[int | None]  # parent id by node id

    def structure(self) -> list[dict]:
        """The tree as plain data for log headers and views."""
        out = []
        for i, (spec, parent) in enumerate(zip(self.specs, self.parents, strict=True)):
            out.append(
                {
                    "id": i,
                    "name": spec.name,
                    "kind": spec.kind,
                    "parent": parent,
                    "where": spec.where(),
                    "params": _as_written(spec),
                }
            )
        return out


    def phase_ids(self, names: list[str] | None = None) -> list[int]:
        """Node ids of the mission's top-level phases: :func:`orbitree.nodes.structure.phase_ids`."""
        return phase_ids(self.structure(), names)

    def failing_path(self) -> str:
        """``a > b > leaf: message``: the failing path from the root's child down to the deepest
        node that failed (the last failed child at each level), and the deepest message given."""
        children: dict[int, list[int]] = {}
        for i, parent in enumerate(self.parents):
            if parent is not None:
                children.setdefault(parent, []).append(i)
        path, node = [0], 0
        while True:
            failed = [c for c in children.get(node, []) if self.behaviours[c].status == Status.FAILURE]
            if not failed:
                break
            node = failed[-1]
            path.append(node)
        message = next((m for i in reversed(path) if (m := self.behaviours[i].feedback_message)), "")
        names = " > ".join(self.specs[i].name for i in (path[1:] or path))
        return f"{names}: {message}" if message else names

    def culprit(self, exc: BaseException) -> str:
        """``node 'name' (kind, file:line:col) `` of the deepest node of this tree whose method is
        on ``exc``'s traceback (the leaf that raised, or the composite above it), or ``""``."""
        index = {id(b): i for i, b in enumerate(self.behaviours)}
        tb, found = exc.__traceback__, None
        while tb is not None:
            owner = tb.tb_frame.f_locals.get("self")
            if owner is not None and id(owner) in index:
                found = index[id(owner)]
            tb = tb.tb_next
        if found is None:
            return ""
        spec = self.specs[found]
        return f"node {spec.name!r} ({spec.kind}, {spec.where()}) "


def _as_written(spec: NodeSpec) -> dict:
    """The parameters that differ from their defaults, each as the author wrote it (``20 deg/s``,
    not its value in rad/s): what the log header and the views show."""
    dumped = spec.params.model_dump(mode="json", exclude={"name", "children", "child"}, exclude_defaults=True)
    return {key: spec.written.get(key, value) for key, value in dumped.items()}


def build_tree(root: NodeSpec, ctx: Context) -> BuiltTree:
    specs: list[NodeSpec] = []
    behaviours: list[Behaviour] = []
    parents: list[int | None] = []

    def build(spec: NodeSpec, parent: int | None) -> Behaviour:
        my_id = len(specs)
        specs.append(spec)
        behaviours.append(None)  # type: ignore[arg-type]  # filled below, keeps pre-order ids
        parents.append(parent)
        children = [build(child, my_id) for child in spec.children]
        node = _make(spec, children, ctx)
        behaviours[my_id] = node
        return node

    top = build(root, None)
    return BuiltTree(top, specs, behaviours, parents)


def _make(spec: NodeSpec, children: list[Behaviour], ctx: Context) -> Behaviour:
    p = spec.params
    name = spec.name
    if spec.leaf is not None:
        return spec.leaf(name, p, ctx)
    kind = spec.kind
    if kind == "sequence":
        return py_trees.composites.Sequence(name, memory=not p.reactive, children=children)
    if kind == "fallback":
        return py_trees.composites.Selector(name, memory=not p.reactive, children=children)
    if kind == "parallel":
        return py_trees.composites.Parallel(
            name, policy=_parallel_policy(p, children), children=children
        )
    (child,) = children
    if kind == "retry":
        return py_trees.decorators.Retry(name, child, num_failures=p.attempts)
    if kind == "repeat":
        return py_trees.decorators.Repeat(name, child, num_success=p.count)
    if kind == "timeout":
        return ClockTimeout(name, child, p.duration, ctx)
    if kind == "inverter":
        return py_trees.decorators.Inverter(name, child)
    if kind == "one_shot":
        policy = (
            OneShotPolicy.ON_SUCCESSFUL_COMPLETION
            if p.on == "success"
            else OneShotPolicy.ON_COMPLETION
        )
        return py_trees.decorators.OneShot(name, child, policy=policy)
    if kind == "rate_limit":
        return RateLimit(name, child, p.hz, ctx)
    if kind == "guard":
        return make_guard(name, child, p.condition, ctx)
    raise AssertionError(f"no builder for node kind {kind!r}")  # the parser admits no other kinds


def _parallel_policy(p, children: list[Behaviour]):
    if p.policy == "all":
        return py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=p.synchronise)
    if p.policy == "one":
        return py_trees.common.ParallelPolicy.SuccessOnOne()
    chosen = [c for c in children if c.name in set(p.selected)]
    return py_trees.common.ParallelPolicy.SuccessOnSelected(chosen, synchronise=p.synchronise)
