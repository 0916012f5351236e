"""Mission errors: ``file:line:col: message``, several reported together, exit code 2."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in a mission file; line and column are 1-based as editors show them."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"


class MissionError(Exception):
    """Bad input: one or more diagnostics. Nothing has been built or moved."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        # Files in the order they were first reported (an include site before the included
        # file's own problems), each file's diagnostics by position; duplicates dropped.
        unique = list(dict.fromkeys(diagnostics))
        first = {d.file: i for i, d in reversed(list(enumerate(unique)))}
        self.diagnostics = sorted(unique, key=lambda d: (first[d.file], d.line, d.col, d.message))
        super().__init__("\n".join(str(d) for d in self.diagnostics))


def format_path(path: tuple[str | int, ...]) -> str:
    """``('tree', 'sequence', 'children', 0)`` -> ``tree.sequence.children[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<document>"
