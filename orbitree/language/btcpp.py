"""Mission trees as BehaviorTree.CPP v4 XML (for Groot2 and BT.CPP users), and back.

Export (``orbitree tree MISSION --format btcpp``): ``<root BTCPP_format="4">`` with one
``<BehaviorTree>`` per subtree of the mission (referenced by ``<SubTree ID=...>``), the safety
recovery tree as its own ``<BehaviorTree>``, and a ``<TreeNodesModel>`` declaring every leaf kind
(and every control node BT.CPP lacks) with its parameters as input ports. Parameter values are
written as the author wrote them (``20 deg/s``); mappings and lists in YAML flow style.

Control nodes with a BT.CPP equivalent map onto it (:data:`BUILTIN`); the rest are written as
custom nodes declared in the model (:data:`CUSTOM`), so Groot2 draws them and a BT.CPP
executable would need them registered. Import (``orbitree import-btcpp``) reverses both and
refuses, with the XML line, any node it cannot map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat
from xml.sax.saxutils import quoteattr

import yaml

from orbitree.language.errors import Diagnostic, MissionError
from orbitree.language.params import CONTROL_PARAMS
from orbitree.language.parser import NodeSpec
from orbitree.language.registry import Registry

# BT.CPP v4 built-in nodes this exporter writes, with the ports each takes.
BUILTIN_PORTS: dict[str, tuple[str, ...]] = {
    "Sequence": (), "ReactiveSequence": (), "Fallback": (), "ReactiveFallback": (),
    "Parallel": ("success_count", "failure_count"), "RetryUntilSuccessful": ("num_attempts",),
    "Repeat": ("num_cycles",), "Timeout": ("msec",), "Inverter": (), "RunOnce": ("then_skip",),
    "SubTree": ("ID",),
}
# orbitree control nodes written as custom BT.CPP nodes: (BT.CPP node type, ports)
CUSTOM: dict[str, tuple[str, tuple[str, ...]]] = {
    "parallel": ("Control", ("policy", "synchronise", "selected")),  # a policy BT.CPP's Parallel lacks
    "one_shot": ("Decorator", ("on",)),  # latching on success only
    "rate_limit": ("Decorator", ("hz",)),
    "guard": ("Decorator", ("condition",)),  # an eternal guard: the condition re-checked every tick
}


def _flow(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def _leaf_ports(spec: NodeSpec) -> dict[str, str]:
    dumped = spec.params.model_dump(mode="json", exclude={"name"}, exclude_defaults=True)
    return {key: _flow(spec.written.get(key, value)) for key, value in dumped.items()}


def _control(spec: NodeSpec) -> tuple[str, dict[str, str]]:
    """(XML tag, attributes) of a control node."""
    p, kind = spec.params, spec.kind
    if kind in ("sequence", "fallback"):
        base = "Sequence" if kind == "sequence" else "Fallback"
        return ("Reactive" + base if p.reactive else base), {}
    if kind == "parallel" and p.policy in ("all", "one") and p.synchronise:
        return "Parallel", {"success_count": "-1" if p.policy == "all" else "1", "failure_count": "1"}
    if kind == "retry":
        return "RetryUntilSuccessful", {"num_attempts": str(p.attempts)}
    if kind == "repeat":
        return "Repeat", {"num_cycles": str(p.count)}
    if kind == "timeout":
        return "Timeout", {"msec": f"{p.duration * 1e3:g}"}
    if kind == "inverter":
        return "Inverter", {}
    if kind == "one_shot" and p.on == "completion":
        return "RunOnce", {"then_skip": "false"}
    ports = CUSTOM[kind][1]
    values = p.model_dump(mode="json", exclude={"name", "children", "child"})
    return _custom_id(kind), {k: _flow(spec.written.get(k, values[k])) for k in ports if k in values}


CUSTOM_IDS = {"parallel": "ParallelPolicy", "one_shot": "OneShot", "rate_limit": "RateLimit", "guard": "Guard"}


def _custom_id(kind: str) -> str:
    return CUSTOM_IDS[kind]


@dataclass
class _Writer:
    trees: dict[str, list[str]] = field(default_factory=dict)  # BehaviorTree ID -> lines
    used_custom: set[str] = field(default_factory=set)

    def node(self, spec: NodeSpec, depth: int, top: bool = False) -> list[str]:
        pad = "  " * depth
        if spec.subtree is not None and not top:
            if spec.subtree not in self.trees:
                self.trees[spec.subtree] = []
                self.trees[spec.subtree] = self.node(spec, 2, top=True)
            return [f"{pad}<SubTree ID={quoteattr(spec.subtree)} name={quoteattr(spec.name)}/>"]
        if spec.leaf is not None:
            tag, attrs = spec.kind, _leaf_ports(spec)
        else:
            tag, attrs = _control(spec)
            if tag not in BUILTIN_PORTS:
                self.used_custom.add(spec.kind)
        text = f"{pad}<{tag} name={quoteattr(spec.name)}" + "".join(
            f" {k}={quoteattr(v)}" for k, v in attrs.items())
        if not spec.children:
            return [text + "/>"]
        lines = [text + ">"]
        for child in spec.children:
            lines += self.node(child, depth + 1)
        return [*lines, f"{pad}</{tag}>"]


def to_btcpp(root: NodeSpec, registry: Registry, name: str = "mission", recovery: NodeSpec | None = None) -> str:
    """The tree (and the recovery tree) as BehaviorTree.CPP v4 XML."""
    writer = _Writer()
    main = writer.node(root, 2)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<root BTCPP_format="4" main_tree_to_execute={quoteattr(name)}>',
           f"  <BehaviorTree ID={quoteattr(name)}>", *main, "  </BehaviorTree>"]
    if recovery is not None:  # safety.recovery: a subtree, referenced from a tree of its own
        rec = writer.node(recovery, 2)
        out += [f"  <BehaviorTree ID={quoteattr(name + ' recovery')}>", *rec, "  </BehaviorTree>"]
    for tree_id, lines in writer.trees.items():
        out += [f"  <BehaviorTree ID={quoteattr(tree_id)}>", *lines, "  </BehaviorTree>"]
    out.append("  <TreeNodesModel>")
    for kind in sorted(registry.leaves):
        leaf = registry.leaves[kind]
        node_type = "Condition" if kind == "condition" else "Action"
        out.append(f"    <{node_type} ID={quoteattr(kind)}>")
        for port, info in leaf.Params.model_fields.items():
            if port == "name":
                continue
            default = "" if info.is_required() else _default(info.get_default(call_default_factory=True))
            out.append(f"      <input_port name={quoteattr(info.alias or port)}"
                       + (f" default={quoteattr(default)}" if default else "")
                       + f">{_escape(info.description or '')}</input_port>")
        out.append(f"    </{node_type}>")
    for kind in sorted(writer.used_custom):
        node_type, ports = CUSTOM[kind]
        out.append(f"    <{node_type} ID={quoteattr(_custom_id(kind))}>")
        out += [f"      <input_port name={quoteattr(p)}/>" for p in ports]
        out.append(f"    </{node_type}>")
    out += ["  </TreeNodesModel>", "</root>", ""]
    return "\n".join(out)


def _default(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return _flow(_plain(value))


def _plain(value: Any) -> Any:
    """Tuples as lists and numpy scalars as Python numbers (a default such as ``np.radians(15)``),
    which YAML's safe dumper can write."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.item() if hasattr(value, "item") and hasattr(value, "dtype") else value


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ------------------------------------------------------------------------------ import


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    line: int
    col: int
    children: list[_Element] = field(default_factory=list)


def _parse(text: str, file: str) -> _Element:
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    top: list[_Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = _Element(tag, attrs, parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        (stack[-1].children if stack else top).append(element)
        stack.append(element)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda _tag: stack.pop()
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        raise MissionError([Diagnostic(file, error.lineno, error.offset + 1,
                                       f"not well-formed XML: {expat.ErrorString(error.code)}")]) from None
    return top[0]


_FROM_BUILTIN = {"Sequence": ("sequence", False), "ReactiveSequence": ("sequence", True),
                 "Fallback": ("fallback", False), "ReactiveFallback": ("fallback", True)}


def from_btcpp(text: str, file: str, registry: Registry) -> dict[str, Any]:
    """``{"tree": ..., "subtrees": {...}}`` (mission YAML data) from BehaviorTree.CPP v4 XML; a
    node that cannot be mapped, or a reference to a missing tree, raises MissionError at its line."""
    root = _parse(text, file)
    errors: list[Diagnostic] = []

    def fail(element: _Element, message: str) -> None:
        errors.append(Diagnostic(file, element.line, element.col, message))

    if root.tag != "root" or root.attrs.get("BTCPP_format") != "4":
        fail(root, 'expected <root BTCPP_format="4">')
        raise MissionError(errors)
    trees = {e.attrs.get("ID", ""): e for e in root.children if e.tag == "BehaviorTree"}
    custom = {_custom_id(kind): kind for kind in CUSTOM}

    def ports(element: _Element) -> dict[str, Any]:
        return {k: yaml.safe_load(v) if v.strip() else v for k, v in element.attrs.items() if k != "name"}

    def convert(element: _Element) -> Any:
        tag, name = element.tag, element.attrs.get("name")
        kids = [convert(child) for child in element.children]
        body: dict[str, Any] = {"name": name} if name else {}
        if tag == "SubTree":
            ref = element.attrs.get("ID", "")
            if ref not in trees:
                fail(element, f"<SubTree ID={ref!r}>: no <BehaviorTree> with that ID")
            return {"subtree": {"ref": ref, **body}}
        if tag in _FROM_BUILTIN:
            kind, reactive = _FROM_BUILTIN[tag]
            return {kind: {**body, **({"reactive": True} if reactive else {}), "children": kids}}
        if tag == "Parallel":
            success = int(element.attrs.get("success_count", "-1"))
            return {"parallel": {**body, "policy": "all" if success == -1 else "one", "children": kids}}
        one = kids[0] if len(kids) == 1 else None
        if tag in ("RetryUntilSuccessful", "Repeat", "Timeout", "Inverter", "RunOnce") and one is None:
            fail(element, f"<{tag}> needs exactly one child, has {len(kids)}")
            return None
        if tag == "RetryUntilSuccessful":
            return {"retry": {**body, "attempts": int(element.attrs["num_attempts"]), "child": one}}
        if tag == "Repeat":
            return {"repeat": {**body, "count": int(element.attrs["num_cycles"]), "child": one}}
        if tag == "Timeout":
            return {"timeout": {**body, "duration": f"{float(element.attrs['msec']):g} ms", "child": one}}
        if tag == "Inverter":
            return {"inverter": {**body, "child": one}}
        if tag == "RunOnce":
            return {"one_shot": {**body, "on": "completion", "child": one}}
        if tag in custom:
            kind = custom[tag]
            fields = ports(element)
            children = {"children": kids} if "children" in CONTROL_PARAMS[kind].model_fields else {"child": one}
            return {kind: {**body, **fields, **children}}
        if tag in registry.leaves:
            return {tag: {**body, **ports(element)}}
        known = ", ".join(sorted(registry.leaves))
        fail(element, f"<{tag}>: no orbitree node kind maps to it (leaf kinds: {known})")
        return None

    main_id = root.attrs.get("main_tree_to_execute") or next(iter(trees), "")
    if main_id not in trees:
        fail(root, f"main tree {main_id!r} is not one of the <BehaviorTree> IDs ({', '.join(trees) or 'none'})")
        raise MissionError(errors)
    out: dict[str, Any] = {}
    subtrees = {}
    for tree_id, element in trees.items():
        if len(element.children) != 1:
            count = len(element.children)
            fail(element, f"<BehaviorTree ID={tree_id!r}> needs exactly one root node, has {count}")
            continue
        converted = convert(element.children[0])
        if tree_id == main_id:
            out["tree"] = converted
        elif not tree_id.endswith(" recovery"):
            subtrees[tree_id] = converted
    if errors:
        raise MissionError(errors)
    if subtrees:
        out["subtrees"] = subtrees
    return out


def read_btcpp(path: str | Path, registry: Registry) -> dict[str, Any]:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise MissionError([Diagnostic(str(file), 1, 1, f"cannot read the file: {reason}")]) from None
    return from_btcpp(text, str(file), registry)
