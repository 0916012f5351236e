"""Malformed missions through the command line, the loader's checks of a parsed mission: units and
blackboard keys, the writer check, subtrees and includes, --set, several errors at once; each
reported as ``file:line:col: message``, exit 2, no traceback (the harness:
tests/orbitree/malformed.py; the file-level cases: tests/orbitree/test_malformed_missions.py,
whose id check covers these too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.orbitree.malformed import GOOD, Case, at, check_reported

CASES: list[Case] = [
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


@pytest.mark.parametrize("case", _params())
def test_malformed_mission_is_reported_with_its_position(case: Case, tmp_path: Path, capsys):
    check_reported(case, tmp_path, capsys)
