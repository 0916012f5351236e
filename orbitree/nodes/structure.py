"""A tree as plain data — the log header's ``nodes`` — and the rules read from it alone.

Each node is ``{"id", "name", "kind", "parent", "where", "params"}`` with pre-order ids (see
``BuiltTree.structure``). The executive, the views and the reports all find a mission's phases
here, so the summary's ``phase_s`` and a view's timeline cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def phase_ids(nodes: Sequence[dict[str, Any]], names: Sequence[str] | None = None) -> list[int]:
    """Node ids of the mission's top-level phases (the summary's ``phase_s``).

    The first node of each name in ``names`` (the mission's ``phases:``) when given; else the
    children of the root; when the root is a ``parallel`` with policy ``selected`` naming one
    composite (a mission running a perception leaf beside its main sequence), that composite's
    children instead, and so on down.
    """
    if not nodes:
        return []
    if names:
        first: dict[str, int] = {}
        for node in nodes:
            first.setdefault(node["name"], node["id"])
        return [first[n] for n in names if n in first]
    children: dict[int, list[int]] = {}
    for node in nodes:
        if node["parent"] is not None:
            children.setdefault(node["parent"], []).append(node["id"])
    at = nodes[0]["id"]
    while nodes[at]["kind"] == "parallel":
        params = nodes[at].get("params") or {}
        selected = set(params.get("selected") or ())
        chosen = [i for i in children.get(at, []) if nodes[i]["name"] in selected]
        if params.get("policy") != "selected" or len(chosen) != 1 or not children.get(chosen[0]):
            break
        at = chosen[0]
    return children.get(at, [])
