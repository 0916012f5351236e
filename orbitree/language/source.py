"""Safe YAML loading that remembers where every value came from.

``load_source`` returns plain Python data (dicts, lists, scalars) and a ``Source`` that maps
each key path to its line and column, so that any later check (pydantic, the writer check, a
``--set`` override) can point at ``file:line:col``. Only YAML's safe tags are accepted; object
tags such as ``!!python/object`` are errors, as are duplicate keys (PyYAML would silently keep
the last one).

Hostile text is refused at its position, in bounded time and memory (the bounds are
:mod:`orbitree.drivers.bounded_yaml`'s: file size, nodes after alias expansion, nesting depth,
characters YAML forbids), and so are numbers no mission means: NaN, infinities (``.inf``, or
``1e400``, which reads as one) and integers beyond 64 bits. A UTF-8 byte-order mark (which some
Windows editors write) is accepted and ignored; a UTF-16 file is refused with a hint.
"""

from __future__ import annotations

import codecs
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from orbitree.drivers.bounded_yaml import TextTooLarge, YAMLInputError, compose_all, read_limited
from orbitree.language.errors import Diagnostic, MissionError

PathKey = tuple[str | int, ...]

# Integers a mission may hold: those of a signed 64-bit integer, what numpy, the drivers and the
# log's readers take without loss. Seeds, counts and sizes are all far smaller; a 400-digit
# integer is a typo or an attack (and a quantity of 10**400 has no float).
INT_LIMIT = 2**63


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


_TAG = "tag:yaml.org,2002:"
_TEXT_KEY_TAGS = {f"{_TAG}{t}" for t in ("str", "bool", "int", "float", "timestamp")}
_MERGE, _VALUE = f"{_TAG}merge", f"{_TAG}value"


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _shown(text: str, limit: int = 24) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def number_problem(value: Any, text: str) -> str | None:
    """Why a scalar that YAML read as ``value`` (written ``text``) is no number a mission means,
    or None: NaN, an infinity, a float literal too large (``1e400`` reads as infinity), an
    integer beyond 64 bits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            what = "is not a number (NaN)"
        elif "inf" in text.lower():
            what = "is infinite"
        else:
            what = "is too large for a number (it reads as infinity)"
        return f"{_shown(text)} {what}: mission values must be finite numbers"
    if isinstance(value, int) and not -INT_LIMIT <= value < INT_LIMIT:
        return f"{_shown(text)} does not fit in 64 bits: integers must lie within +-2**63"
    return None


class _Builder:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.constructor = SafeConstructor()
        self.errors: list[Diagnostic] = []
        self._flat: dict[Node, tuple[list[tuple[Node, Node]], list[tuple[Node, Node]]]] = {}

    def build(self, node: Node, path: PathKey) -> Any:
        self.source.marks[path] = _mark(node)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            if node.tag not in (f"{_TAG}seq",):
                return self._bad_tag(node)
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        value = self._construct(node)
        if value is _FAILED:
            return None
        problem = number_problem(value, node.value)
        if problem is not None:
            return self._error(node, problem)
        return value

    def _construct(self, node: ScalarNode) -> Any:
        try:
            return self.constructor.construct_object(node, deep=True)
        except ConstructorError:
            self._bad_tag(node)
        except (ValueError, OverflowError) as exc:  # 5,000 digits; the date 2024-13-45
            if node.tag == f"{_TAG}int":
                self._error(node, f"{_shown(node.value)} does not fit in 64 bits: integers must lie within "
                                  "+-2**63")
            else:
                self._error(node, f"cannot read {_shown(node.value)}: {exc}")
        self.constructor.recursive_objects.pop(node, None)  # so that an alias of it fails alike
        return _FAILED

    def _entries(self, node: MappingNode) -> tuple[list[tuple[Node, Node]], list[tuple[Node, Node]]]:
        """(merged entries, explicit entries) of a mapping, merged ones in the order PyYAML's
        ``flatten_mapping`` gives them, without changing the node graph (a mapping reached again
        through an alias reads the same); a bad ``<<:`` value is reported once."""
        if not any(key.tag in (_MERGE, _VALUE) for key, _ in node.value):
            return [], node.value
        found = self._flat.get(node)
        if found is not None:
            return found
        merged: list[tuple[Node, Node]] = []
        explicit: list[tuple[Node, Node]] = []
        self._flat[node] = (merged, explicit)  # a merge that reaches back here adds nothing
        for key, value in node.value:
            if key.tag != _MERGE:
                if key.tag == _VALUE:  # the '=' key, as PyYAML reads it
                    key.tag = f"{_TAG}str"
                explicit.append((key, value))
                continue
            if isinstance(value, MappingNode):
                parts = [value]
            elif isinstance(value, SequenceNode) and all(isinstance(v, MappingNode) for v in value.value):
                parts = list(reversed(value.value))
            else:
                self._error(value, "'<<' merges a mapping or a list of mappings into this one, "
                                   f"got {_kind(value)}")
                continue
            for part in parts:
                inner_merged, inner_explicit = self._entries(part)
                merged.extend(inner_merged)
                merged.extend(inner_explicit)
        return merged, explicit

    def _mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any] | None:
        if node.tag not in (f"{_TAG}map",):
            return self._bad_tag(node)
        merged, explicit = self._entries(node)
        keys = [self.build_key(k) if isinstance(k, ScalarNode) else None for k, _ in explicit]
        written = set(keys)
        out: dict[str, Any] = {}
        for key_node, value_node in merged:  # placed first; explicit keys win, then the first merged
            key = self.build_key(key_node) if isinstance(key_node, ScalarNode) else None
            if key is None or key in out or key in written:
                continue
            self.source.key_marks[(*path, key)] = _mark(key_node)
            out[key] = self.build(value_node, (*path, key))
        for (key_node, value_node), key in zip(explicit, keys, strict=True):
            if not isinstance(key_node, ScalarNode):
                self._error(key_node, "mapping keys must be plain scalars")
                continue
            if key is None:
                continue
            child = (*path, key)
            if key in out:  # merged keys that are also written were skipped: this one is written twice
                first = self.source.key_marks[child]
                self._error(key_node, f"duplicate key {key!r} (first defined at line {first[0]})")
                continue
            self.source.key_marks[child] = _mark(key_node)
            out[key] = self.build(value_node, child)
        return out

    def build_key(self, node: ScalarNode) -> str | None:
        # A plain key is its text: YAML 1.1 would read `on:`, `yes:` or `no:` as booleans.
        if node.tag in _TEXT_KEY_TAGS:
            return node.value
        key = self._construct(node)
        if key is _FAILED:
            return None
        return str(key) if not isinstance(key, str) else key

    def _error(self, node: Node, message: str) -> None:
        line, col = _mark(node)
        self.errors.append(Diagnostic(self.source.file, line, col, message))

    def _bad_tag(self, node: Node) -> None:
        self._error(node, f"tag {node.tag!r} is not allowed: missions use plain YAML data only")
        return None


_FAILED = object()


def _kind(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return f"the scalar {_shown(node.value)}"
    return "a list holding more than mappings" if isinstance(node, SequenceNode) else "something else"


def _compose(text: str, file: str, column: int = 0) -> list[Node]:
    """The documents of ``text``; every problem a ``MissionError`` at ``file:line:col`` (``column``
    is added to columns on the first line: where a ``--set`` value starts in its argument)."""

    def at(mark: Any, message: str) -> MissionError:
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return MissionError([Diagnostic(file, line, col + (column if line == 1 else 0), message)])

    try:
        return compose_all(text)
    except TextTooLarge as exc:
        raise MissionError([Diagnostic(file, 1, 1, str(exc))]) from None
    except YAMLInputError as exc:
        raise at(exc.problem_mark, exc.problem or str(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        context = ""
        if exc.context:
            opened = exc.context_mark
            shift = column if opened and opened.line == 0 else 0
            began = f" that began at {opened.line + 1}:{opened.column + 1 + shift}" if opened else ""
            context = f" ({exc.context}{began})"
        raise at(mark, f"YAML syntax: {problem}{context}") from None
    except yaml.YAMLError as exc:
        raise MissionError([Diagnostic(file, 1, 1, f"YAML: {exc}")]) from None


def load_source(text: str, file: str) -> tuple[Any, Source]:
    """Parse one YAML document safely; raise ``MissionError`` with positions on any problem."""
    source = Source(file)
    nodes = _compose(text, file)
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


def load_value(text: str, label: str, column: int) -> Any:
    """A ``--set KEY=VALUE``'s VALUE, read as YAML under the rules and bounds of a file.

    ``label`` is where diagnostics point (``--set KEY=VALUE``) and ``column`` the 1-based column
    at which VALUE starts in it. An empty value is None.
    """
    try:
        nodes = _compose(text, label, column - 1)
    except MissionError as exc:
        raise MissionError([_value_diagnostic(d) for d in exc.diagnostics]) from None
    if not nodes:
        return None
    if len(nodes) > 1:
        line, col = _mark(nodes[1])
        raise MissionError([Diagnostic(label, 1, column + col - 1 if line == 1 else 1,
                                       "value is not valid YAML: it holds several documents")])
    builder = _Builder(Source(label))
    data = builder.build(nodes[0], ())
    if builder.errors:
        raise MissionError([Diagnostic(label, 1, column + d.col - 1 if d.line == 1 else 1, f"value: {d.message}")
                            for d in builder.errors])
    return data


def _value_diagnostic(d: Diagnostic) -> Diagnostic:
    message = d.message.removeprefix("YAML syntax: ")
    prefix = "value is not valid YAML" if message != d.message else "value"
    return Diagnostic(d.file, 1, d.col if d.line == 1 else 1, f"{prefix}: {message}")


def load_file(path: Path) -> tuple[Any, Source]:
    """Read and parse ``path``; unreadable files are diagnostics too."""
    try:
        raw = read_limited(path)
    except FileNotFoundError:
        raise MissionError([Diagnostic(str(path), 1, 1, "no such file")]) from None
    except TextTooLarge as exc:
        raise MissionError([Diagnostic(str(path), 1, 1, str(exc))]) from None
    except OSError as exc:
        raise MissionError([Diagnostic(str(path), 1, 1, f"cannot read: {exc.strerror or exc}")]) from None
    return load_source(decode(raw, str(path)), str(path))


def decode(raw: bytes, file: str) -> str:
    """UTF-8 text (a leading byte-order mark dropped), or a ``MissionError`` at the first byte that
    is not UTF-8."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise MissionError([Diagnostic(file, 1, 1, "not UTF-8 text: the file is UTF-16 (it starts with a "
                                       "UTF-16 byte-order mark); save it as UTF-8")])
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        col = len(raw[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        message = f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded ({exc.reason})"
        raise MissionError([Diagnostic(file, line, col, message)]) from None
