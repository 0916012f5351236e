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


def check_reported(case: Case, tmp_path: Path, capsys) -> None:
    """Run ``case`` and check what both test files check of every case: exit 2, no traceback, each
    expected diagnostic at its ``file:line:col``, nothing absent present, and for a ``run`` no log
    or summary written (nothing started)."""
    directory = tmp_path.resolve()
    mission = _write(case, directory)
    log, summary = directory / "run.jsonl", directory / "run.json"
    if case.command == "run":
        argv = ["run", str(mission), "--view", "none", "--log", str(log), "--summary", str(summary)]
    else:
        argv = ["validate", str(mission)]

    code, stderr = _invoke(case, [*argv, *case.args], directory, capsys)

    assert code == 2, f"exit code {code}, stderr:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    found = []
    for want in case.expect:
        file = want.file if want.file.startswith("--set") else str(directory / want.file)
        prefix = f"{file}:{want.line}:{want.col}: "
        matching = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        assert matching, f"no diagnostic at {prefix!r} in:\n{stderr}"
        hits = [i for i in matching if all(word in lines[i] for word in want.words)]
        assert hits, f"diagnostic at {prefix!r} lacks one of {want.words} in:\n{stderr}"
        found.append(hits[0])
    for text in case.absent:
        assert text not in stderr, stderr
    if case.exact:
        assert found == list(range(len(case.expect))) == list(range(len(lines))), stderr
    for name in case.absent_files:
        assert not (directory / name).exists(), f"{name} was created: an object tag ran"
    if case.command == "run":
        assert not log.exists(), "bad input must not start a run (a log was written)"
        assert not summary.exists(), "bad input must not start a run (a summary was written)"
