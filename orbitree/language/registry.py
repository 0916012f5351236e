"""What the loader needs to know of the node kinds a mission may use.

The language only sees each leaf class's contract (``kind``, ``Params``, ``shorthand``,
``reads``/``writes``); which leaves exist is decided above it, by the catalogue in
:mod:`orbitree.behaviours.catalogue`, and handed to the loader as a :class:`Registry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from orbitree.language.params import CONTROL_PARAMS, NodeParams


class LeafContract(Protocol):
    """The class-level contract of a leaf kind (``orbitree.nodes.leaf.Leaf`` implements it)."""

    kind: ClassVar[str]
    Params: ClassVar[type[NodeParams]]
    shorthand: ClassVar[str | None]

    @classmethod
    def reads(cls, params: Any) -> list[str]: ...

    @classmethod
    def writes(cls, params: Any) -> list[str]: ...


@dataclass(frozen=True)
class Registry:
    leaves: Mapping[str, Any]  # kind -> leaf class (a LeafContract)

    def kinds(self) -> list[str]:
        """Every node kind a mission may use: control nodes first, then leaves."""
        return [*CONTROL_PARAMS, *sorted(self.leaves)]

    @classmethod
    def of(cls, leaves: tuple[Any, ...]) -> Registry:
        """A registry of these leaf classes; a kind taken twice (or by a control node) is refused."""
        found: dict[str, Any] = {}
        for leaf in leaves:
            if leaf.kind in CONTROL_PARAMS or leaf.kind in found:
                raise ValueError(f"leaf kind {leaf.kind!r} of {leaf.__name__} is already taken")
            found[leaf.kind] = leaf
        return cls(found)
