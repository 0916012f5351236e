"""YAML text read within bounds: its size, its nesting and the nodes its aliases expand to.

A YAML document of a few hundred bytes can stand for billions of nodes (anchors and aliases that
repeat aliases: the "billion laughs"), can nest deeper than Python's recursion limit, and can
hold characters or numbers that no later check expects. Every YAML text orbitree reads from a
user passes through here first — mission files and the files they include, campaign files,
``--set`` values and camera calibration files — so that hostile or broken text is refused with
its line and column, in bounded time and memory, before anything walks the data:

* the text may hold at most ``MAX_TEXT_BYTES`` (``read_limited`` reads no more than that);
* its nodes, counted as if every alias were expanded, may number at most ``MAX_NODES`` (an
  alias is refused at its own position when it would pass the limit, and an alias inside the
  node it names — a recursive structure — is refused too);
* they may nest at most ``MAX_DEPTH`` levels, aliases expanded;
* characters that YAML forbids (control characters, unpaired surrogates) are reported at their
  line and column.

The parser is PyYAML's pure-Python one (``SafeLoader``'s reader, scanner and parser), so the
accepted syntax and the syntax-error messages are exactly those of ``yaml.safe_load``; only the
composer counts. Counting happens while composing: no node is built past a limit.

This module sits among the drivers because the camera calibration reader needs it and the
drivers lie below the mission language in the layering (``tests/test_layers.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.error import Mark
from yaml.events import AliasEvent
from yaml.nodes import Node
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.resolver import Resolver
from yaml.scanner import Scanner

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_TEXT_BYTES", "TextTooLarge", "YAMLInputError", "compose_all",
           "read_limited", "safe_load"]

# The largest shipped YAML file is 10.7 kB (missions/campaigns/sirom_iso9283.yaml); 512 KiB is 50
# times that. The bound is also what keeps the pure-Python parser fast on any text: its slowest
# text (a folded multi-line scalar) takes ~0.55 s for 512 KiB on the reference machine, so a
# hostile file is refused within the 2 s that `orbitree validate` may spend on it, start-up included.
MAX_TEXT_BYTES = 512 * 1024

# Nodes (every key, value and list item, aliases counted as expanded). The largest shipped file
# has 1,638; a mission that needed 30 times that would be unreadable. PyYAML composes 50,000
# nodes in ~0.9 s here, which bounds the time of a hostile file; a "billion laughs" of 300 bytes
# is refused at its first alias past the limit, in milliseconds.
MAX_NODES = 50_000

# Nesting levels (a mapping inside a list inside a mapping: 3). Shipped missions nest at most 19
# levels (a tree node's children are two levels: 'sequence:' then 'children:'). PyYAML's composer
# and the loaders recurse a few Python frames per level, so 64 stays far below Python's
# recursion limit of 1,000 frames, which unbounded nesting (`[[[[...`) would pass with a traceback.
MAX_DEPTH = 64


class YAMLInputError(yaml.MarkedYAMLError):
    """Text refused before it could cost unbounded time or memory, or a character YAML forbids;
    ``problem`` says what, ``problem_mark`` where (0-based line and column)."""

    def __init__(self, problem: str, mark: Mark) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class TextTooLarge(ValueError):
    """A file or value larger than ``MAX_TEXT_BYTES``."""

    def __init__(self, size: int | None, limit: int = MAX_TEXT_BYTES) -> None:
        self.size, self.limit = size, limit
        held = f"holds {size} bytes" if size is not None else "holds more"
        super().__init__(f"the text {held}: more than {_kib(limit)} is refused (no mission, campaign or "
                         "calibration file comes near that)")


def _kib(n: int) -> str:
    return f"{n // 1024} KiB"


def read_limited(path: Path, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of ``path``, reading at most ``limit + 1`` of them (so a huge file or a device
    such as /dev/zero costs no more); raises ``TextTooLarge`` past ``limit``, ``OSError`` as
    ``open`` does."""
    with Path(path).open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        try:
            size: int | None = Path(path).stat().st_size or None
        except OSError:
            size = None
        raise TextTooLarge(size if size and size > limit else None, limit)
    return data


class _BoundedComposer(Composer):
    """PyYAML's composer, counting the nodes each node expands to and how deep they nest."""

    def __init__(self) -> None:
        super().__init__()
        self._shape: dict[Node, tuple[int, int]] = {}  # finished node -> (nodes expanded, height)
        self._open: list[int] = []  # one entry per node being composed: its tallest child so far
        self._total = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:  # an undefined alias is left to PyYAML's own error
                self._count_alias(event.anchor, target, event.start_mark)
            return super().compose_node(parent, index)
        if len(self._open) >= MAX_DEPTH:
            raise YAMLInputError(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
        start = self._total
        self._grow(1, event.start_mark, "")
        self._open.append(0)
        node = super().compose_node(parent, index)
        height = self._open.pop() + 1
        if self._open:
            self._open[-1] = max(self._open[-1], height)
        self._shape[node] = (self._total - start, height)
        return node

    def _count_alias(self, anchor: str, target: Node, mark: Mark) -> None:
        shape = self._shape.get(target)
        if shape is None:
            raise YAMLInputError(f"alias *{anchor} is inside the node &{anchor} it names: a recursive "
                                 "structure, which has no end", mark)
        size, height = shape
        if len(self._open) + height > MAX_DEPTH:
            raise YAMLInputError(f"alias *{anchor} nests the document more than {MAX_DEPTH} levels deep", mark)
        self._grow(size, mark, f"alias *{anchor} ({size} nodes) ")
        if self._open:
            self._open[-1] = max(self._open[-1], height)

    def _grow(self, count: int, mark: Mark, what: str) -> None:
        self._total += count
        if self._total > MAX_NODES:
            reason = ("expands the document" if what else "the document has") + f" to more than {MAX_NODES} nodes"
            hint = " (aliases of aliases multiply: a 'billion laughs')" if what else ""
            raise YAMLInputError(f"{what}{reason}{hint}; no mission comes near that", mark)


class _Loader(Reader, Scanner, Parser, _BoundedComposer, SafeConstructor, Resolver):
    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def compose_all(text: str) -> list[Node]:
    """The node graph of every document of ``text``, within the bounds above.

    Raises ``TextTooLarge`` past ``MAX_TEXT_BYTES``, ``YAMLInputError`` past the other bounds or
    on a character YAML forbids, and PyYAML's ``MarkedYAMLError``s on syntax errors.
    """
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise TextTooLarge(len(text.encode("utf-8", "surrogatepass")) if len(text) <= 2 * MAX_TEXT_BYTES
                           else None)
    try:
        loader = _Loader(text)
    except ReaderError as exc:  # raised by the reader's check of the whole text, before parsing
        raise _forbidden_character(text, exc) from None
    try:
        nodes = []
        while loader.check_node():
            nodes.append(loader.get_node())
        return nodes
    finally:
        loader.dispose()


_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")  # what PyYAML's reader counts as a line break


def _forbidden_character(text: str, exc: ReaderError) -> YAMLInputError:
    index = int(exc.position)
    line, start = 0, 0
    for match in _BREAK.finditer(text, 0, index):
        line, start = line + 1, match.end()
    code = int(exc.character) if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    if 0xD800 <= code <= 0xDFFF:
        what = "a byte that is not UTF-8"
    elif code < 0x20 or 0x7F <= code < 0xA0:
        what = "a control character"
    else:
        what = "a character YAML does not allow"
    column = index - start - text.count("\ufeff", start, index)
    return YAMLInputError(f"character U+{code:04X} is not allowed here: {what}",
                          Mark("<text>", index, line, column, None, None))


class _Constructor(SafeConstructor):
    """``SafeConstructor`` whose value errors (an integer of 5,000 digits, the date 2024-13-45)
    are ``ConstructorError``s at the value's position, not bare ``ValueError``s."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(None, None, f"cannot read {node.value!r}: {exc}", node.start_mark) from None


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` within the bounds above (raises ``TextTooLarge`` or a ``yaml.YAMLError``).

    Aliases still share one Python object, but the bounds hold for any walk of the result.
    """
    nodes = compose_all(text)
    if not nodes:
        return None
    if len(nodes) > 1:
        raise YAMLInputError("expected one YAML document, found several", nodes[1].start_mark)
    return _Constructor().construct_document(nodes[0])
