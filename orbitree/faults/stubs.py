"""Node substitution: leaves of a mission swapped for stubs (``substitute:``), for fault tests
that need a leaf to succeed, fail or hang without its hardware.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from py_trees.common import Status

from orbitree.faults.schedule import EPS
from orbitree.language.fault_spec import SubstituteSpec
from orbitree.language.parser import NodeSpec
from orbitree.nodes.context import Context
from orbitree.nodes.leaf import Leaf


class StubLeaf(Leaf):
    """Stands in for a substituted leaf: RUNNING for ``after`` of mission time, then ``status``."""

    kind = "stub"
    substitute: ClassVar[SubstituteSpec] = SubstituteSpec(match="*")  # reads and writes nothing

    def initialise(self) -> None:
        self.until = self.ctx.now + self.substitute.after

    def update(self) -> Status:
        status = self.substitute.status
        left = self.until - self.ctx.now
        if left > EPS:
            self.feedback_message = f"stub: {status} in {left:.2f} s"
            return Status.RUNNING
        self.feedback_message = f"stub: {status}"
        return Status[status]


def substitute_leaves(
    root: NodeSpec, substitutes: Sequence[SubstituteSpec], ctx: Context | None = None
) -> NodeSpec:
    """A copy of the tree whose matching leaves build as stubs (the first matching entry wins).

    Node ids and names are unchanged; each substitution is a ``substituted`` event on ``ctx``.
    """
    if not substitutes:
        return root
    stubs: dict[int, type[StubLeaf]] = {}
    next_id = 0

    def copy(spec: NodeSpec) -> NodeSpec:
        nonlocal next_id
        node_id, next_id = next_id, next_id + 1
        children = [copy(child) for child in spec.children]
        for k, sub in enumerate(substitutes):
            if sub.matches(spec):
                if k not in stubs:
                    stubs[k] = type(f"Stub{k}", (StubLeaf,), {"substitute": sub, "__module__": __name__})
                if ctx is not None:
                    ctx.event("substituted", node=node_id, name=spec.name, leaf=spec.kind,
                              status=sub.status, after=sub.after)
                return dataclasses.replace(spec, children=children, leaf=stubs[k])
        return dataclasses.replace(spec, children=children)

    return copy(root)
