"""Small helpers shared by test modules (kept out of conftest so they can be imported)."""

from __future__ import annotations


def names(mission) -> list[str]:
    return [spec.name for spec in mission.nodes()]
