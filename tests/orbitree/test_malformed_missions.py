"""Malformed missions through the command line, as files: YAML syntax, unsafe and unknown tags and
duplicate keys, the top level, node shapes; each reported as ``file:line:col: message``, exit 2,
no traceback (the harness: tests/orbitree/malformed.py). The loader's checks of a parsed mission
(units and keys, the writer check, subtrees and includes, --set, several errors at once):
tests/orbitree/test_malformed_mission_checks.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.orbitree.malformed import Case, at, check_reported
from tests.orbitree.test_malformed_mission_checks import CASES as CHECK_CASES

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
]


def _params() -> list:
    return [pytest.param(case, id=case.id) for case in CASES]


@pytest.mark.parametrize("case", _params())
def test_malformed_mission_is_reported_with_its_position(case: Case, tmp_path: Path, capsys):
    check_reported(case, tmp_path, capsys)


def test_every_case_has_a_unique_readable_id():
    ids = [case.id for case in (*CASES, *CHECK_CASES)]  # both files' cases
    assert len(ids) == len(set(ids)) >= 30
    assert all(i.replace("-", "").isalnum() and i.islower() for i in ids)
