"""The base class of every orbitree leaf, and the contract the mission loader checks.

A leaf class declares, at class level, what a mission may say about it and what it touches:

* ``kind``: the YAML key that names it (``wait``, ``approach``);
* ``Params``: a pydantic model of its parameters (the loader validates them and the mission
  JSON Schema is generated from them);
* ``reads(params)`` / ``writes(params)``: the blackboard keys it reads and writes (the loader
  checks every read key has a writer; py_trees enforces the access at run time);
* ``shorthand``: optionally, the one parameter a scalar value stands for (``wait: 2 s``).

``__init__`` only stores configuration, so a tree can be built, drawn and validated with no
hardware attached. Subclasses implement the usual py_trees hooks (``initialise``, ``update``,
``terminate``) and never override ``tick``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import py_trees

from orbitree.language.params import NodeParams
from orbitree.nodes.context import Context

_BLACKBOARD = py_trees.blackboard.Blackboard


class Leaf(py_trees.behaviour.Behaviour):
    kind: ClassVar[str] = ""
    Params: ClassVar[type[NodeParams]] = NodeParams
    shorthand: ClassVar[str | None] = None

    def __init__(self, name: str, params: NodeParams, ctx: Context) -> None:
        super().__init__(name=name)
        self.params = params
        self.ctx = ctx
        self.bb = self.attach_blackboard_client(name=name)
        writes = set(self.writes(params))
        for key in writes:
            self.bb.register_key(key=key, access=py_trees.common.Access.WRITE)
        for key in set(self.reads(params)) - writes:
            self.bb.register_key(key=key, access=py_trees.common.Access.READ)
        # declared keys read and written straight in the blackboard's storage, as the client
        # would (absolute, not remapped, no attribute path); others go through the client
        bb, remaps = self.bb, self.bb.remappings
        plain = {k for k in (*bb.read, *bb.write, *bb.exclusive) if remaps.get(k) == k and "." not in k}
        self._plain_reads = frozenset(plain)
        self._plain_writes = frozenset(plain & {*bb.write, *bb.exclusive})

    @classmethod
    def reads(cls, params: Any) -> list[str]:
        """Blackboard keys this leaf reads, given its parameters."""
        return []

    @classmethod
    def writes(cls, params: Any) -> list[str]:
        """Blackboard keys this leaf writes, given its parameters."""
        return []

    # blackboard helpers -------------------------------------------------------------------
    def read(self, key: str, default: Any = None) -> Any:
        """The value of a declared key, or ``default`` if nothing has written it yet."""
        if key in self._plain_reads and _BLACKBOARD.activity_stream is None:
            return _BLACKBOARD.storage.get(key, default)
        try:
            return self.bb.get(key)
        except KeyError:
            return default

    def write(self, key: str, value: Any) -> None:
        """Write a declared key and stamp it with the current time."""
        if key in self._plain_writes and _BLACKBOARD.activity_stream is None:
            _BLACKBOARD.storage[key] = value
        else:
            self.bb.set(key, value, overwrite=True)
        self.ctx.touched(key)
