"""Safe YAML loading that remembers where every value came from.

``load_source`` returns plain Python data (dicts, lists, scalars) and a ``Source`` that maps
each key path to its line and column, so that any later check (pydantic, the writer check, a
``--set`` override) can point at ``file:line:col``. Only YAML's safe tags are accepted; object
tags such as ``!!python/object`` are errors, as are duplicate keys (PyYAML would silently keep
the last one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from orbitree.language.errors import Diagnostic, MissionError

PathKey = tuple[str | int, ...]


@dataclass
class Source:
    """Where the values of one YAML document live: file name and key path -> (line, col)."""

    file: str
    marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    overrides: dict[PathKey, str] = field(default_factory=dict)  # path -> "--set KEY=VALUE"

    def at(self, path: PathKey, message: str, *, key: bool = False) -> Diagnostic:
        """A diagnostic at ``path``, or at its nearest ancestor that has a position.

        Values replaced by ``--set`` are reported against the command-line argument.
        """
        for prefix, label in self.overrides.items():
            if tuple(path[: len(prefix)]) == prefix:
                return Diagnostic(label, 1, 1, message)
        table = self.key_marks if key else self.marks
        probe = tuple(path)
        while probe not in table and probe not in self.marks and probe:
            probe = probe[:-1]
        line, col = table.get(probe) or self.marks.get(probe, (1, 1))
        return Diagnostic(self.file, line, col, message)


_TEXT_KEY_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "bool", "int", "float", "timestamp")}


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.constructor = SafeConstructor()
        self.errors: list[Diagnostic] = []

    def build(self, node: Node, path: PathKey) -> Any:
        self.source.marks[path] = _mark(node)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            if node.tag not in ("tag:yaml.org,2002:seq",):
                return self._bad_tag(node)
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        try:
            return self.constructor.construct_object(node, deep=True)
        except ConstructorError:
            return self._bad_tag(node)

    def _mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any] | None:
        if node.tag not in ("tag:yaml.org,2002:map",):
            return self._bad_tag(node)
        explicit = sum(1 for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge")
        self.constructor.flatten_mapping(node)
        merged = len(node.value) - explicit  # `<<:` entries, placed first; explicit keys win
        out: dict[str, Any] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            if index < merged:
                key = self.build_key(key_node) if isinstance(key_node, ScalarNode) else None
                later = {self.build_key(k) for k, _ in node.value[merged:] if isinstance(k, ScalarNode)}
                if key is None or key in out or key in later:
                    continue
                self.source.key_marks[(*path, key)] = _mark(key_node)
                out[key] = self.build(value_node, (*path, key))
                continue
            if not isinstance(key_node, ScalarNode):
                line, col = _mark(key_node)
                self.errors.append(
                    Diagnostic(self.source.file, line, col, "mapping keys must be plain scalars")
                )
                continue
            key = self.build_key(key_node)
            if key is None:
                continue
            child = (*path, key)
            if key in out:
                line, col = _mark(key_node)
                first = self.source.key_marks[child]
                self.errors.append(
                    Diagnostic(
                        self.source.file,
                        line,
                        col,
                        f"duplicate key {key!r} (first defined at line {first[0]})",
                    )
                )
                continue
            self.source.key_marks[child] = _mark(key_node)
            out[key] = self.build(value_node, child)
        return out

    def build_key(self, node: ScalarNode) -> str | None:
        # A plain key is its text: YAML 1.1 would read `on:`, `yes:` or `no:` as booleans.
        if node.tag in _TEXT_KEY_TAGS:
            return node.value
        try:
            key = self.constructor.construct_object(node, deep=True)
        except ConstructorError:
            self._bad_tag(node)
            return None
        return str(key) if not isinstance(key, str) else key

    def _bad_tag(self, node: Node) -> None:
        line, col = _mark(node)
        self.errors.append(
            Diagnostic(
                self.source.file,
                line,
                col,
                f"tag {node.tag!r} is not allowed: missions use plain YAML data only",
            )
        )
        return None


def load_source(text: str, file: str) -> tuple[Any, Source]:
    """Parse one YAML document safely; raise ``MissionError`` with positions on any problem."""
    source = Source(file)
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or str(exc)
        context = ""
        if exc.context:
            opened = exc.context_mark
            began = f" that began at {opened.line + 1}:{opened.column + 1}" if opened else ""
            context = f" ({exc.context}{began})"
        raise MissionError(
            [Diagnostic(file, line, col, f"YAML syntax: {problem}{context}")]
        ) from None
    except yaml.YAMLError as exc:  # e.g. reader errors on control characters
        raise MissionError([Diagnostic(file, 1, 1, f"YAML: {exc}")]) from None
    if not nodes or nodes[0] is None:
        raise MissionError(
            [Diagnostic(file, 1, 1, "the file is empty: expected a mission mapping")]
        )
    if len(nodes) > 1:
        line, col = _mark(nodes[1])
        raise MissionError(
            [Diagnostic(file, line, col, "expected one YAML document, found several")]
        )
    builder = _Builder(source)
    data = builder.build(nodes[0], ())
    if builder.errors:
        raise MissionError(builder.errors)
    return data, source


def load_file(path: Path) -> tuple[Any, Source]:
    """Read and parse ``path``; unreadable files are diagnostics too."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MissionError([Diagnostic(str(path), 1, 1, "no such file")]) from None
    except OSError as exc:
        raise MissionError([Diagnostic(str(path), 1, 1, f"cannot read: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        col = len(raw[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        message = f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded ({exc.reason})"
        raise MissionError([Diagnostic(str(path), line, col, message)]) from None
    return load_source(text, str(path))
