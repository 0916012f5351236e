"""Static drawings of a mission tree (``orbitree tree``)."""

from __future__ import annotations

from typing import Any

import py_trees

from orbitree.language.parser import NodeSpec
from orbitree.nodes.build import build_tree
from orbitree.nodes.context import Context


def _describe(spec: NodeSpec) -> str:
    """``name [kind] key=value, ...``: the parameters that differ from their defaults, each as the
    author wrote it (``max_angular_speed=20 deg/s``, not its value in rad/s)."""
    params = spec.params.model_dump(
        mode="json", exclude={"name", "children", "child"}, exclude_defaults=True
    )
    if spec.kind == "guard":
        params = {"condition": spec.params.condition.model_dump(mode="json", exclude_defaults=True)}
    detail = ", ".join(f"{k}={_as_written(spec.written.get(k, v))}" for k, v in params.items())
    return f"{spec.name} [{spec.kind}]" + (f" {detail}" if detail else "")


def _as_written(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_as_written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_as_written(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def ascii_tree(root: NodeSpec) -> str:
    lines: list[str] = []

    def walk(spec: NodeSpec, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└── " if last else "├── ")
        lines.append(f"{prefix}{branch}{_describe(spec)}")
        inner = prefix + ("" if top else ("    " if last else "│   "))
        for i, child in enumerate(spec.children):
            walk(child, inner, i == len(spec.children) - 1, False)

    walk(root, "", True, True)
    return "\n".join(lines)


def dot_tree(root: NodeSpec) -> str:
    """Graphviz DOT of the built py_trees tree (py_trees' own renderer)."""
    built = build_tree(root, Context())
    return py_trees.display.dot_tree(built.root, with_blackboard_variables=False).to_string()
