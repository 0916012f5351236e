"""Which leaf kinds a mission may use.

Built-in leaves are listed here; other packages add theirs through the ``orbitree.leaves``
entry-point group (each entry point names a ``Leaf`` subclass), so a lab can ship its own skills
without forking orbitree.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata

from orbitree.behaviours.admittance_dock import AdmittanceDock
from orbitree.behaviours.approach import Approach
from orbitree.behaviours.capture import Capture
from orbitree.behaviours.condition import Condition
from orbitree.behaviours.latch import Latch
from orbitree.behaviours.log_message import LogMessage
from orbitree.behaviours.outcome import Fail, Succeed
from orbitree.behaviours.perceive import Perceive
from orbitree.behaviours.relocate import Relocate
from orbitree.behaviours.retract import Retract
from orbitree.behaviours.search import Search
from orbitree.behaviours.set_value import SetValue
from orbitree.behaviours.wait import Wait
from orbitree.control import CONTROL_PARAMS
from orbitree.leaf import Leaf

BUILTIN_LEAVES: tuple[type[Leaf], ...] = (
    Wait,
    SetValue,
    LogMessage,
    Succeed,
    Fail,
    Condition,
    Perceive,
    Search,
    Relocate,
    Approach,
    Capture,
    AdmittanceDock,
    Latch,
    Retract,
)


@dataclass(frozen=True)
class Registry:
    leaves: Mapping[str, type[Leaf]]

    def kinds(self) -> list[str]:
        """Every node kind a mission may use: control nodes first, then leaves."""
        return [*CONTROL_PARAMS, *sorted(self.leaves)]


def make_registry(extra: tuple[type[Leaf], ...] = ()) -> Registry:
    leaves: dict[str, type[Leaf]] = {}
    for cls in (*BUILTIN_LEAVES, *extra):
        if cls.kind in CONTROL_PARAMS or cls.kind in leaves:
            raise ValueError(f"leaf kind {cls.kind!r} of {cls.__name__} is already taken")
        leaves[cls.kind] = cls
    return Registry(leaves)


@functools.cache
def default_registry() -> Registry:
    """Built-in leaves plus those installed through the ``orbitree.leaves`` entry points."""
    plugins = tuple(ep.load() for ep in metadata.entry_points(group="orbitree.leaves"))
    return make_registry(plugins)
