"""From YAML data to a checked tree of node specifications (``NodeSpec``), before any py_trees.

A node is a mapping with one key naming its kind (``wait: 1 s``, ``sequence: {children: ...}``).
Parsing validates each node's parameters with its pydantic model, expands ``subtree:``
references and ``include:`` files (detecting cycles in both), and collects every problem as a
``file:line:col`` diagnostic instead of stopping at the first.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from orbitree.language.bare_numbers import bare_numbers, lax_scalars
from orbitree.language.errors import Diagnostic, MissionError, format_path
from orbitree.language.params import CONTROL_PARAMS, SHORTHAND, NodeParams
from orbitree.language.registry import Registry
from orbitree.language.source import PathKey, Source, load_file

INCLUDE_KEYS = ("tree", "subtrees", "description")

# Nodes of one mission's tree, subtree and include references expanded. The flagship mission has
# 39; a tree of 10,000 could not be ticked at a robot's rate anyway. Without a bound, subtrees
# that use each other twice over (a: [b, b], b: [c, c], ...) expand like a "billion laughs" in
# a file of a few hundred bytes.
MAX_TREE_NODES = 10_000

# Levels of tree nodes, through subtree: and include: references as well (which YAML's own
# nesting bound cannot see). Shipped trees are 6 deep; the parser recurses 1-2 Python frames a
# level, so 64 stays far below Python's recursion limit that a chain of 1,000 subtrees would pass.
MAX_TREE_DEPTH = 64


@dataclass
class NodeSpec:
    """One checked node: its kind, display name, parameters, children and where it was written."""

    kind: str
    name: str
    params: NodeParams
    children: list[NodeSpec]
    source: Source
    path: PathKey
    leaf: Any = None  # the leaf class (a LeafContract), None for control nodes
    node_path: str = ""  # names from the root, e.g. "dock/approach"
    written: dict[str, Any] = field(default_factory=dict)  # parameters as the author wrote them
    subtree: str | None = None  # the entry of 'subtrees:' this node was expanded from (its root only)

    def walk(self):
        """Pre-order traversal (the order node ids are assigned in)."""
        yield self
        for child in self.children:
            yield from child.walk()

    def where(self) -> str:
        line, col = self.source.marks.get(self.path, (1, 1))
        return f"{self.source.file}:{line}:{col}"


@dataclass
class Scope:
    """Subtrees visible from one file: its own, then those of the files that include it."""

    subtrees: dict[str, Any]
    source: Source
    file: Path
    parent: Scope | None = None

    def find(self, name: str) -> tuple[Any, Scope] | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.subtrees:
                return scope.subtrees[name], scope
            scope = scope.parent
        return None


def pydantic_diagnostics(
    exc: ValidationError,
    source: Source,
    base: PathKey,
    node_path: str,
    shorthand: str | None = None,
    model: type[BaseModel] | None = None,
) -> list[Diagnostic]:
    """Turn pydantic's errors into positioned diagnostics under the YAML path ``base``.

    ``shorthand`` names the field a scalar or list value was expanded into (``wait: 1 s`` is
    ``{duration: 1 s}``); that field is then at ``base`` itself in the file.
    """
    out = []
    prefix = f"{node_path}: " if node_path else ""
    for err in exc.errors():
        on_key = "[key]" in err["loc"]
        loc = tuple(p for p in err["loc"] if p != "[key]")
        # pydantic's union/function-wrapper locs name validator types, not YAML keys; drop them
        # (an unknown key is the user's own, whatever characters it has: it stays, last)
        keep_last = err["type"] == "extra_forbidden" and bool(loc)
        head = loc[:-1] if keep_last else loc
        loc = (*(p for p in head if not (isinstance(p, str) and ("[" in p or "(" in p))),
               *loc[len(head):])
        yaml_loc = loc[1:] if shorthand and loc[:1] == (shorthand,) else loc
        full = (*base, *yaml_loc)
        rel = format_path(loc) if loc else ""
        kind = err["type"]
        if kind == "extra_forbidden":
            message = f"{prefix}unknown key {rel!r}{_expected_keys(model, loc)}"
            out.append(source.at(full, message, key=True))
            continue
        if kind == "missing":
            message = f"{prefix}missing required key {rel!r}"
            out.append(source.at(base, message))
            continue
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        shown = "" if isinstance(got, dict | list) or got is None else f", got {got!r}"
        if shown and (repr(got) in msg or ", got " in msg):
            shown = ""
        where = f"{rel}: " if rel else ""
        out.append(source.at(full, f"{prefix}{where}{msg}{shown}", key=on_key))
    return out


def _expected_keys(model: type[BaseModel] | None, loc: tuple) -> str:
    """'; expected one of: ...' (with a close match first) for an unknown key at ``loc``."""
    if not loc:
        return ""
    for part in loc[:-1]:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return ""
        inner = model.model_fields[part].annotation
        candidates = [a for a in (inner, *get_args(inner)) if isinstance(a, type)]
        model = next((a for a in candidates if issubclass(a, BaseModel)), None)
    if model is None:
        return ""
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"; {hint}expected one of: {', '.join(known)}"


@dataclass
class Parser:
    registry: Registry
    file: Path | None = None  # the mission file itself: the bottom of the include chain
    errors: list[Diagnostic] = field(default_factory=list)
    _subtree_stack: list[tuple[int, str]] = field(default_factory=list)
    _include_stack: list[Path] = field(default_factory=list)
    expanded: set[tuple[int, str]] = field(default_factory=set)
    warnings: list[Diagnostic] = field(default_factory=list)
    _count: int = 0  # nodes parsed so far
    _depth: int = 0  # levels open now
    _refused: bool = False  # a bound was passed: nothing more is parsed
    _files: dict[Path, tuple[Any, Source] | MissionError] = field(default_factory=dict)  # included, by path

    def __post_init__(self) -> None:
        if self.file is not None:
            self._include_stack.append(self.file.resolve())

    # ---------------------------------------------------------------------------------------
    def node(
        self,
        raw: Any,
        path: PathKey,
        scope: Scope,
        parent: str,
        default_name: str = "",
        forced_name: str | None = None,
    ) -> NodeSpec | None:
        if self._refused:
            return None
        self._count += 1
        where = parent or format_path(path)
        if self._count > MAX_TREE_NODES:
            self._refuse(scope.source.at(path, f"{where}: the tree expands to more than {MAX_TREE_NODES} nodes "
                                         "(subtree: and include: references that repeat each other multiply)"))
            return None
        if self._depth >= MAX_TREE_DEPTH:
            self._refuse(scope.source.at(path, f"{where}: the tree nests more than {MAX_TREE_DEPTH} nodes deep "
                                         "(through subtree: and include: references too)"))
            return None
        self._depth += 1
        try:
            return self._node(raw, path, scope, parent, default_name, forced_name)
        finally:
            self._depth -= 1

    def _refuse(self, diagnostic: Diagnostic) -> None:
        self._refused = True
        self.errors.append(diagnostic)

    def _node(
        self, raw: Any, path: PathKey, scope: Scope, parent: str, default_name: str, forced_name: str | None
    ) -> NodeSpec | None:
        source = scope.source
        kind, value = self._split(raw, path, source, parent)
        if kind is None:
            return None
        params_cls = CONTROL_PARAMS.get(kind) or self.registry.leaves[kind].Params
        body, short = self._body(kind, value)
        node_path = f"{parent}/{kind}" if parent else kind
        lax = [source.at((*path, kind) if short is not None and where == (*path, kind, short) else where,
                         f"{node_path}: {message}")
               for where, message in lax_scalars(params_cls, body, (*path, kind))]
        self.errors.extend(lax)  # the mission fails to load; its children are still checked
        try:
            params = params_cls.model_validate(body)
        except ValidationError as exc:
            self.errors.extend(
                pydantic_diagnostics(
                    exc, source, (*path, kind), node_path, shorthand=short, model=params_cls
                )
            )
            return None
        name = forced_name or params.name or default_name or kind
        node_path = f"{parent}/{name}" if parent else name
        for where, message in bare_numbers(params_cls, body, (*path, kind)):
            if short is not None and where == (*path, kind, short):
                where = (*path, kind)  # 'wait: 500': the value is written at the kind
            self.warnings.append(source.at(where, f"warning: {node_path}: {message}"))
        if kind == "subtree":
            return self._subtree(params.ref, params.name, (*path, kind), scope, node_path, parent)
        if kind == "include":
            return self._include(params.file, params.name, (*path, kind), scope, parent)
        written = {k: v for k, v in body.items() if k not in ("children", "child")} if isinstance(body, dict) \
            else {}
        spec = NodeSpec(kind, name, params, [], source, path, self.registry.leaves.get(kind), node_path, written)
        raw_children = getattr(params, "children", None)
        if raw_children is not None:
            base = (*path, kind) if short == "children" else (*path, kind, "children")
            for i, child in enumerate(raw_children):
                built = self.node(child, (*base, i), scope, node_path)
                if built is not None:
                    spec.children.append(built)
            if len(spec.children) != len(raw_children):
                return None
            if kind == "parallel" and not self._selection_ok(spec, path):
                return None
        elif hasattr(params, "child"):
            built = self.node(params.child, (*path, kind, "child"), scope, node_path)
            if built is None:
                return None
            spec.children.append(built)
        return spec

    def _selection_ok(self, spec: NodeSpec, path: PathKey) -> bool:
        """Policy 'selected' needs 'selected' to name children of this parallel."""
        params = spec.params
        if params.policy != "selected":
            return True
        where = f"{spec.node_path}: "
        if not params.selected:
            message = f"{where}policy 'selected' needs a 'selected' list of child names"
            self.errors.append(spec.source.at((*path, "parallel"), message))
            return False
        names = [child.name for child in spec.children]
        ok = True
        for i, wanted in enumerate(params.selected):
            if wanted not in names:
                message = f"{where}selected: no child named {wanted!r} (children: {', '.join(names)})"
                self.errors.append(spec.source.at((*path, "parallel", "selected", i), message))
                ok = False
        return ok

    def _split(
        self, raw: Any, path: PathKey, source: Source, parent: str
    ) -> tuple[str | None, Any]:
        where = f"{parent or format_path(path)}: "
        example = "a mapping with one key naming its kind, e.g. 'wait: 1 s' or 'sequence: [...]'"
        if not isinstance(raw, dict) or len(raw) != 1:
            got = (
                f"a mapping with {len(raw)} keys ({', '.join(map(str, raw))})"
                if isinstance(raw, dict)
                else "nothing"
                if raw is None
                else f"{type(raw).__name__} {raw!r}"
            )
            self.errors.append(
                source.at(path, f"{where}expected a tree node ({example}), got {got}")
            )
            return None, None
        ((kind, value),) = raw.items()
        if kind not in CONTROL_PARAMS and kind not in self.registry.leaves:
            kinds = self.registry.kinds()
            close = difflib.get_close_matches(str(kind), kinds, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            self.errors.append(
                source.at(
                    (*path, kind),
                    f"{where}unknown node kind {kind!r}; {hint}known kinds: {', '.join(kinds)}",
                    key=True,
                )
            )
            return None, None
        return kind, value

    def _body(self, kind: str, value: Any) -> tuple[Any, str | None]:
        """The parameter mapping of a node, expanding the scalar or list shorthand."""
        if value is None:
            return {}, None
        if isinstance(value, dict):
            return value, None
        short = SHORTHAND.get(kind)
        if short is None and kind in self.registry.leaves:
            short = self.registry.leaves[kind].shorthand
        return ({short: value}, short) if short else (value, None)

    # ---------------------------------------------------------------------------------------
    def _subtree(
        self, ref: str, name: str | None, path: PathKey, scope: Scope, node_path: str, parent: str
    ) -> NodeSpec | None:
        found = scope.find(ref)
        if found is None:
            known = sorted({k for s in _chain(scope) for k in s.subtrees})
            self.errors.append(
                scope.source.at(
                    path,
                    f"{node_path}: no subtree named {ref!r} (defined: {', '.join(known) or 'none'})",
                )
            )
            return None
        raw, owner = found
        marker = (id(owner), ref)
        if marker in self._subtree_stack:
            cycle = " -> ".join(
                n for _, n in self._subtree_stack[self._subtree_stack.index(marker) :]
            )
            self.errors.append(scope.source.at(path, f"subtree cycle: {cycle} -> {ref}"))
            return None
        self._subtree_stack.append(marker)
        try:
            self.expanded.add(marker)
            spec = self.node(raw, ("subtrees", ref), owner, parent, default_name=ref, forced_name=name)
        finally:
            self._subtree_stack.pop()
        if spec is not None:
            spec.subtree = ref
        return spec

    def _include(
        self, file: str, name: str | None, path: PathKey, scope: Scope, parent: str
    ) -> NodeSpec | None:
        target = (scope.file.parent / file).resolve()
        if target in self._include_stack:
            chain = " -> ".join(p.name for p in [*self._include_stack, target])
            self.errors.append(scope.source.at(path, f"include cycle: {chain}"))
            return None
        if not target.is_file():
            self.errors.append(scope.source.at(path, f"cannot include {file!r}: no such file ({target})"))
            return None
        loaded = self._files.get(target)
        if loaded is None:  # each file is read once, however often it is included
            try:
                loaded = load_file(target)
            except MissionError as exc:
                loaded = exc
            self._files[target] = loaded
        if isinstance(loaded, MissionError):
            self.errors.append(scope.source.at(path, f"cannot include {file!r}: it has errors (below)"))
            self.errors.extend(loaded.diagnostics)
            return None
        data, source = loaded
        if not isinstance(data, dict) or "tree" not in data:
            self.errors.append(source.at((), "an included file needs a 'tree' key"))
            return None
        for key in data:
            if key not in INCLUDE_KEYS:
                self.errors.append(
                    source.at(
                        (key,),
                        f"unknown key {key!r} in an included file; expected {', '.join(INCLUDE_KEYS)}",
                        key=True,
                    )
                )
        subtrees = data.get("subtrees") or {}
        if not isinstance(subtrees, dict):
            self.errors.append(source.at(("subtrees",), "'subtrees' must map names to tree nodes"))
            subtrees = {}
        inner = Scope(subtrees, source, target, parent=scope)
        self._include_stack.append(target)
        try:
            return self.node(data["tree"], ("tree",), inner, parent, forced_name=name)
        finally:
            self._include_stack.pop()


def _chain(scope: Scope | None):
    while scope is not None:
        yield scope
        scope = scope.parent

