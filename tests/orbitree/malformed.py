"""The harness of the malformed-mission tests (tests/orbitree/test_malformed_missions.py and
test_malformed_mission_checks.py): a case is a small broken mission written to ``tmp_path`` with
the diagnostics expected of it (``file:line:col: message``, exit 2, no traceback).

The expected positions were counted by hand from the YAML text (1-based, as editors show them),
and each expected message names the offending key path or value and what was expected, as a
mission author needs to fix the file. Most cases call ``orbitree.cli.main`` in this process (a
subprocess costs over a second of imports); the cases marked ``real`` go through ``python -m
orbitree.cli`` in a subprocess, and the ``run`` ones among them also check that nothing was
started: exit 2 and no log or summary written.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from orbitree.cli import main


@dataclass(frozen=True)
class At:
    """One expected diagnostic: a line starting ``file:line:col: `` that contains every word."""

    line: int
    col: int
    words: tuple[str, ...]
    file: str = "m.yaml"  # relative to the case directory, or a literal "--set ..." label


def at(line: int, col: int, *words: str, file: str = "m.yaml") -> At:
    return At(line, col, words, file)


@dataclass(frozen=True)
class Case:
    id: str
    text: str | bytes  # the mission, written to m.yaml
    expect: tuple[At, ...]
    files: tuple[tuple[str, str], ...] = ()  # other files next to m.yaml (includes)
    args: tuple[str, ...] = ()  # extra command-line arguments (--set ...)
    command: str = "validate"  # "run" cases always go through a subprocess
    real: bool = False  # through a subprocess instead of in-process
    absent: tuple[str, ...] = ()  # text that must not appear in stderr
    absent_files: tuple[str, ...] = ()  # files that must not exist afterwards
    exact: bool = False  # stderr holds exactly the expected diagnostics, in this order


GOOD = "mission: m\nrate_hz: 10\ntree:\n  wait: 1 s\n"


def _write(case: Case, directory: Path) -> Path:
    for name, text in case.files:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")
    path = directory / "m.yaml"
    if isinstance(case.text, bytes):
        path.write_bytes(case.text)
    else:
        path.write_text(case.text, encoding="utf-8")
    return path


def _invoke(case: Case, argv: list[str], cwd: Path, capsys) -> tuple[int, str]:
    if case.real or case.command == "run":
        done = subprocess.run(
            [sys.executable, "-m", "orbitree.cli", *argv],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=60,
        )
        return done.returncode, done.stderr
    code = main(argv)
    return code, capsys.readouterr().err
