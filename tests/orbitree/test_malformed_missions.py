"""Malformed missions through the command line: ``file:line:col: message``, exit 2, no traceback.

Each case is a small broken mission written to ``tmp_path``. The expected positions were counted
by hand from the YAML text (1-based, as editors show them), and each expected message names the
offending key path or value and what was expected, as a mission author needs to fix the file.

Most cases call ``orbitree.cli.main`` in this process (a subprocess costs over a second of
imports); the cases marked ``real`` go through ``python -m orbitree.cli`` in a subprocess, and the
``run`` ones among them also check that nothing was started: exit 2 and no log or summary written.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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

CASES: list[Case] = [
    # ---- YAML syntax ---------------------------------------------------------------------
    Case(
        "yaml-unclosed-bracket",
        "mission: m\n"
        "tree:\n"
        "  sequence: [{wait: 1 s}, {log: hi}\n"
        "rate_hz: 10\n",
        (at(4, 1, "YAML syntax", "expected ',' or ']'", "3:13"),),
    ),
    Case(
        "yaml-bad-indentation",
        "mission: m\n"
        "tree:\n"
        "  sequence:\n"
        "    - wait: 1 s\n"
        "   - log: hi\n",
        (at(5, 4, "YAML syntax", "expected <block end>"),),
    ),
    Case(
        "yaml-tab-indentation",
        "mission: m\ntree:\n\twait: 1 s\n",
        (at(3, 1, "YAML syntax", "found character '\\t'", "cannot start any token"),),
        real=True,
    ),
    Case(
        "yaml-tab-inside-flow-mapping",
        "mission: m\ntree: {wait:\t1 s, name:\tx}\n",
        (at(2, 13, "YAML syntax", "'\\t'"),),
    ),
    Case(
        "empty-file",
        "",
        (at(1, 1, "empty", "expected a mission mapping"),),
        real=True,
    ),
    Case(
        "comment-only-file",
        "# a mission still to be written\n# (nothing here yet)\n",
        (at(1, 1, "empty", "expected a mission mapping"),),
    ),
    Case(
        "several-documents",
        "mission: a\ntree: {wait: 1 s}\n---\nmission: b\ntree: {wait: 1 s}\n",
        (at(4, 1, "one YAML document", "several"),),
    ),
    Case(
        "top-level-list",
        "- mission: m\n- tree: {wait: 1 s}\n",
        (at(1, 1, "a mission is a mapping", "got list"),),
    ),
    Case(
        "non-utf8-file",
        b"mission: m\ndescription: caf\xe9 stop\ntree: {wait: 1 s}\n",
        (at(2, 17, "not UTF-8"),),
    ),
    # ---- unsafe and unknown tags, duplicate keys ------------------------------------------
    Case(
        "python-object-tag",
        'mission: m\ntree:\n  wait: !!python/object/apply:os.system ["touch pwned"]\n',
        (at(3, 9, "python/object/apply:os.system", "not allowed"),),
        real=True,
        absent_files=("pwned",),
    ),
    Case(
        "python-object-tag-on-mission-name",
        "mission: !!python/object/apply:os.system ['touch pwned']\ntree: {wait: 1 s}\n",
        (at(1, 10, "python/object/apply:os.system", "not allowed"),),
    ),
    Case(
        "custom-tag",
        "mission: m\ntree:\n  wait: !seconds 3\n",
        (at(3, 9, "'!seconds'", "not allowed"),),
    ),
    Case(
        "duplicate-top-level-key",
        "mission: m\nrate_hz: 10\ntree: {wait: 1 s}\nrate_hz: 20\n",
        (at(4, 1, "duplicate key 'rate_hz'", "line 2"),),
    ),
    Case(
        "duplicate-node-parameter",
        "mission: m\ntree:\n  wait:\n    duration: 1 s\n    duration: 2 s\n",
        (at(5, 5, "duplicate key 'duration'", "line 4"),),
    ),
    # ---- the top level -------------------------------------------------------------------
    Case(
        "missing-mission",
        "rate_hz: 10\ntree: {wait: 1 s}\n",
        (at(1, 1, "missing required key 'mission'"),),
    ),
    Case(
        "missing-tree",
        "mission: m\nrate_hz: 10\n",
        (at(1, 1, "missing required key 'tree'"),),
    ),
    Case(
        "unknown-top-level-key",
        "mission: m\nrobts: {}\ntree: {wait: 1 s}\n",
        (at(2, 1, "unknown key 'robts'", "rate_hz", "blackboard", "subtrees"),),
    ),
    Case(
        "tree-is-empty",
        "mission: m\ntree:\n",
        (at(2, 6, "expected a tree node", "got nothing"),),
    ),
    Case(
        "rate-hz-is-a-word",
        "mission: m\nrate_hz: fast\ntree: {wait: 1 s}\n",
        (at(2, 10, "rate_hz", "cannot read 'fast'", "frequency", "Hz"),),
    ),
    Case(
        "rate-hz-negative",
        "mission: m\nrate_hz: -5 Hz\ntree: {wait: 1 s}\n",
        (at(2, 10, "rate_hz", "greater than 0", "-5"),),
    ),
    Case(
        "rate-hz-boolean",
        "mission: m\nrate_hz: yes\ntree: {wait: 1 s}\n",
        (at(2, 10, "rate_hz", "expected a frequency", "got a boolean"),),
        absent=("got a boolean, got",),
    ),
    Case(
        "seed-is-a-float-string",
        "mission: m\nseed: '1.5'\ntree: {wait: 1 s}\n",
        (at(2, 7, "seed", "valid integer", "'1.5'"),),
    ),
    Case(
        "max-duration-zero",
        "mission: m\nmax_duration: 0 s\ntree: {wait: 1 s}\n",
        (at(2, 15, "max_duration", "greater than 0"),),
    ),
    Case(
        "rate-beyond-ten-kilohertz",
        "mission: m\nrate_hz: 50 kHz\ntree: {wait: 1 s}\n",
        (at(2, 10, "rate_hz", "less than or equal to 10000"),),
    ),
    Case(
        "max-duration-beyond-a-week",
        "mission: m\nmax_duration: 1e9 s\ntree: {wait: 1 s}\n",
        (at(2, 15, "max_duration", "less than or equal to 604800"),),
    ),
    # ---- node shapes ---------------------------------------------------------------------
    Case(
        "unknown-node-kind",
        "mission: m\ntree:\n  sequence:\n    - wiat: 1 s\n",
        (at(4, 7, "sequence", "unknown node kind 'wiat'", "did you mean 'wait'"),),
    ),
    Case(
        "node-with-two-kinds",
        "mission: m\ntree:\n  sequence:\n    - wait: 1 s\n      log: hi\n",
        (at(4, 7, "expected a tree node", "2 keys", "wait, log"),),
    ),
    Case(
        "node-is-a-bare-string",
        "mission: m\ntree:\n  sequence:\n    - succeed\n",
        (at(4, 7, "expected a tree node", "'succeed'"),),
    ),
    Case(
        "decorator-without-child",
        "mission: m\ntree:\n  retry:\n    attempts: 3\n",
        (at(4, 5, "retry", "missing required key 'child'"),),
    ),
    Case(
        "decorator-child-is-empty",
        "mission: m\ntree:\n  inverter:\n    child:\n",
        (at(4, 11, "inverter", "expected a tree node", "got nothing"),),
    ),
    Case(
        "empty-children-list",
        "mission: m\ntree:\n  sequence:\n    children: []\n",
        (at(4, 15, "sequence", "children", "at least 1 item"),),
    ),
    Case(
        "unknown-node-parameter",
        "mission: m\ntree:\n  wait: {duration: 1 s, timeout: 2 s}\n",
        (at(3, 25, "wait", "unknown key 'timeout'"),),
    ),
    Case(
        "retry-attempts-zero",
        "mission: m\ntree:\n  retry:\n    attempts: 0\n    child: {succeed: {}}\n",
        (at(4, 15, "retry", "attempts", "greater than or equal to 1", "0"),),
    ),
    Case(
        "repeat-count-zero",
        "mission: m\ntree:\n  repeat:\n    count: 0\n    child: {succeed: {}}\n",
        (at(4, 12, "repeat", "count", "-1 (forever) or at least 1", "got 0"),),
    ),
    Case(
        "parallel-policy-typo",
        "mission: m\ntree:\n  parallel:\n    policy: al\n    children: [{succeed: {}}]\n",
        (at(4, 13, "parallel", "policy", "'all', 'one' or 'selected'", "'al'"),),
    ),
    Case(
        "parallel-selected-names-no-child",
        "mission: m\n"
        "tree:\n"
        "  parallel:\n"
        "    policy: selected\n"
        "    selected: [nope]\n"
        "    children: [{succeed: {}}]\n",
        (at(5, 16, "parallel", "selected", "'nope'"),),
    ),
    # ---- units and blackboard keys -------------------------------------------------------
    Case(
        "duration-in-degrees",
        "mission: m\ntree:\n  wait: {duration: 3 deg}\n",
        (at(3, 20, "wait", "duration", "'3 deg'", "angle", "expected a time"),),
        command="run",
    ),
    Case(
        "duration-in-parsecs",
        "mission: m\ntree:\n  wait: 5 parsecs\n",
        (at(3, 9, "wait", "duration", "unknown unit 'parsecs'", "expected a time"),),
    ),
    Case(
        "wait-fast",
        "mission: m\ntree:\n  sequence:\n    - wait: fast\n",
        (at(4, 13, "sequence/wait", "duration", "cannot read 'fast'", "time"),),
    ),
    Case(
        "timeout-in-metres",
        "mission: m\ntree:\n  timeout:\n    duration: 2 m\n    child: {succeed: {}}\n",
        (at(4, 15, "timeout", "duration", "'2 m'", "length", "expected a time"),),
    ),
    Case(
        "set-key-without-slash",
        "mission: m\ntree:\n  set: {key: no_slash, value: 1}\n",
        (at(3, 14, "set", "key", "'no_slash'", "not a blackboard key", "/robot/arm/tcp_pose"),),
    ),
    Case(
        "blackboard-key-without-slash",
        "mission: m\nblackboard:\n  target_pose: 1\ntree: {succeed: {}}\n",
        (at(3, 3, "blackboard", "'target_pose' is not a blackboard key"),),
    ),
    Case(
        "blackboard-value-unknown-unit",
        "mission: m\nblackboard:\n  /a/a: 1 m\n  /a/b: 5 parsecs\ntree: {succeed: {}}\n",
        (at(4, 9, "/a/b", "unknown unit 'parsecs'"),),
    ),
    Case(
        "condition-without-test",
        "mission: m\nblackboard:\n  /a/b: 1\ntree:\n  condition: {key: /a/b}\n",
        (at(5, 14, "condition", "give at least one test", "equals", "below"),),
    ),
    Case(
        "condition-bound-is-a-word",
        "mission: m\nblackboard: {/a/b: 1}\ntree:\n  condition: {key: /a/b, below: fast}\n",
        (at(4, 33, "condition", "below", "valid number", "'fast'"),),
    ),
    Case(
        "log-placeholder-not-in-keys",
        "mission: m\n"
        "blackboard:\n"
        "  /a/b: 1\n"
        "tree:\n"
        "  log:\n"
        "    message: \"value {/a/b}\"\n",
        (at(6, 5, "log", "message uses /a/b", "'keys'"),),
    ),
    # ---- the writer check ----------------------------------------------------------------
    Case(
        "read-key-nobody-writes",
        "mission: m\n"
        "tree:\n"
        "  sequence:\n"
        "    - set: {key: /a/b, value: 1}\n"
        "    - condition: {key: /a/c, equals: 1}\n",
        (at(5, 7, "condition", "reads /a/c", "nothing writes"),),
        command="run",
    ),
    Case(
        "guard-reads-key-nobody-writes",
        "mission: m\n"
        "tree:\n"
        "  guard:\n"
        "    condition: {key: /x/y, equals: true}\n"
        "    child: {succeed: {}}\n",
        (at(3, 3, "guard", "reads /x/y", "nothing writes"),),
    ),
    # ---- subtrees and includes -----------------------------------------------------------
    Case(
        "unknown-subtree",
        "mission: m\ntree:\n  subtree: repot\nsubtrees:\n  report: {succeed: {}}\n",
        (at(3, 12, "no subtree named 'repot'", "defined: report"),),
    ),
    Case(
        "subtree-cycle",
        "mission: m\n"
        "tree:\n"
        "  subtree: a\n"
        "subtrees:\n"
        "  a:\n"
        "    sequence:\n"
        "      - subtree: b\n"
        "  b:\n"
        "    sequence:\n"
        "      - subtree: a\n",
        (at(10, 18, "subtree cycle", "a -> b -> a"),),
    ),
    Case(
        "error-in-unused-subtree",
        "mission: m\ntree: {succeed: {}}\nsubtrees:\n  spare:\n    wait: 3 deg\n",
        (at(5, 11, "wait", "duration", "'3 deg'", "expected a time"),),
    ),
    Case(
        "include-missing-file",
        "mission: m\ntree:\n  sequence:\n    - include: blocks/nope.yaml\n",
        (at(4, 16, "cannot include 'blocks/nope.yaml'", "no such file"),),
        absent=("nope.yaml:1:1",),
    ),
    Case(
        "include-cycle",
        "mission: m\ntree:\n  include: a.yaml\n",
        (at(2, 12, "include cycle", "a.yaml -> b.yaml -> a.yaml", file="b.yaml"),),
        files=(("a.yaml", "tree:\n  include: b.yaml\n"), ("b.yaml", "tree:\n  include: a.yaml\n")),
        command="run",
    ),
    Case(
        "included-file-unknown-key",
        "mission: m\ntree:\n  include: block.yaml\n",
        (
            at(
                2, 1, "unknown key 'blackboard'", "included file", "tree, subtrees, description",
                file="block.yaml",
            ),
        ),
        files=(("block.yaml", "tree: {succeed: {}}\nblackboard: {}\n"),),
    ),
    Case(
        "included-file-bad-yaml",
        "mission: m\ntree:\n  include: block.yaml\n",
        (
            at(3, 12, "cannot include 'block.yaml'"),
            at(2, 1, "YAML syntax", file="block.yaml"),
        ),
        files=(("block.yaml", "tree: [\n"),),
        exact=True,
    ),
    # ---- --set ---------------------------------------------------------------------------
    Case(
        "set-without-equals",
        GOOD,
        (at(1, 1, "expected KEY=VALUE", file="--set rate_hz"),),
        args=("--set", "rate_hz"),
        command="run",
    ),
    Case(
        "set-invalid-yaml-value",
        GOOD,
        # the column counts in 'rate_hz=[1, 2': the value ends after column 13
        (at(1, 14, "value is not valid YAML", "expected ',' or ']'", file="--set rate_hz=[1, 2"),),
        args=("--set", "rate_hz=[1, 2"),
        command="run",
    ),
    Case(
        "set-value-of-wrong-kind",
        GOOD,
        (at(1, 1, "rate_hz", "cannot read 'fast'", "frequency", file="--set rate_hz=fast"),),
        args=("--set", "rate_hz=fast"),
    ),
    # ---- several errors at once ----------------------------------------------------------
    Case(
        "three-independent-errors",
        "mission: m\n"
        "rate_hz: fast\n"
        "tree:\n"
        "  sequence:\n"
        "    - wait: 3 deg\n"
        "    - wiat: 1 s\n",
        (
            at(2, 10, "rate_hz", "cannot read 'fast'", "frequency"),
            at(5, 13, "sequence/wait", "duration", "'3 deg'", "expected a time"),
            at(6, 7, "unknown node kind 'wiat'", "did you mean 'wait'"),
        ),
        real=True,
        exact=True,
    ),
]


def _params() -> list:
    return [pytest.param(case, id=case.id) for case in CASES]


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


@pytest.mark.parametrize("case", _params())
def test_malformed_mission_is_reported_with_its_position(case: Case, tmp_path: Path, capsys):
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


def test_every_case_has_a_unique_readable_id():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)) >= 30
    assert all(i.replace("-", "").isalnum() and i.islower() for i in ids)
