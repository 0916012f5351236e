"""Mission loading: units, subtrees, includes (and cycles), the writer check and --set."""

from __future__ import annotations

import math

import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.language.errors import MissionError
from tests.conftest import TEST_REGISTRY, write_mission
from tests.tests_support import names


def load(path, *overrides):
    return load_mission(path, list(overrides), registry=TEST_REGISTRY)


def test_quantities_in_parameters_are_converted_to_si(tmp_path):
    path = write_mission(
        tmp_path,
        """
        sequence:
          - wait: 350 ms
          - timeout: {duration: 2 min, child: {wait: 1.5}}
          - rate_limit: {hz: 1 kHz, child: {succeed: {}}}
          - set: {key: /a, value: 350 mm}
          - set: {key: /b, value: 1.5 deg}
          - set: {key: /c, value: 2 rpm}
          - set: {key: /d, value: 5 N}
        """,
        extra="rate_hz: 0.25 kHz\n",
    )
    mission = load(path)
    assert mission.model.rate_hz == 250.0
    specs = mission.nodes()
    assert specs[1].params.duration == pytest.approx(0.35)
    assert specs[2].params.duration == pytest.approx(120.0)
    assert specs[3].params.duration == pytest.approx(1.5)
    assert specs[4].params.hz == pytest.approx(1000.0)
    values = [s.params.value for s in specs if s.kind == "set"]
    assert values == pytest.approx([0.35, math.radians(1.5), 2 * 2 * math.pi / 60, 5.0])


def test_subtree_is_expanded_with_its_name_and_can_be_used_twice(tmp_path):
    path = write_mission(
        tmp_path,
        """
        sequence:
          - subtree: settle
          - subtree: {ref: settle, name: settle again}
        """,
        extra="subtrees:\n  settle:\n    sequence: [wait: 100 ms, log: settled]\n",
    )
    mission = load(path)
    assert names(mission) == ["sequence", "settle", "wait", "log", "settle again", "wait", "log"]
    assert mission.nodes()[2].where().endswith("m.yaml:5:16")  # positions point into 'subtrees'


def test_include_inlines_another_file_relative_to_the_includer(tmp_path):
    (tmp_path / "blocks").mkdir()
    (tmp_path / "blocks" / "retreat.yaml").write_text(
        "tree:\n  subtree: back\nsubtrees:\n  back:\n    sequence: [wait: 1 s, include: log.yaml]\n"
    )
    (tmp_path / "blocks" / "log.yaml").write_text("tree: {log: retreated}\n")
    path = write_mission(tmp_path, "sequence: [include: blocks/retreat.yaml, succeed: {}]")
    mission = load(path)
    assert names(mission) == ["sequence", "back", "wait", "log", "succeed"]
    assert mission.nodes()[3].where().endswith("log.yaml:1:7")


def test_include_cycle_is_reported_with_the_chain(tmp_path):
    (tmp_path / "a.yaml").write_text("tree: {include: b.yaml}\n")
    (tmp_path / "b.yaml").write_text("tree:\n  sequence: [include: a.yaml]\n")
    path = write_mission(tmp_path, "include: a.yaml")
    with pytest.raises(MissionError) as err:
        load(path)
    (diag,) = err.value.diagnostics
    assert diag.file.endswith("b.yaml") and (diag.line, diag.col) == (2, 23)
    assert "include cycle: m.yaml -> a.yaml -> b.yaml -> a.yaml" in diag.message


def test_subtree_cycle_is_reported(tmp_path):
    path = write_mission(
        tmp_path,
        "subtree: a",
        extra="subtrees:\n  a: {sequence: [subtree: b]}\n  b: {subtree: a}\n",
    )
    with pytest.raises(MissionError) as err:
        load(path)
    (diag,) = err.value.diagnostics
    assert (diag.line, diag.col) == (5, 16)
    assert "subtree cycle: a -> b -> a" in diag.message


def test_writer_check_rejects_a_key_nobody_writes(tmp_path):
    path = write_mission(tmp_path, "sequence: [condition: {key: /target/visible, equals: true}]")
    with pytest.raises(MissionError) as err:
        load(path)
    (diag,) = err.value.diagnostics
    assert (diag.line, diag.col) == (4, 14)
    assert "reads /target/visible, which nothing writes" in diag.message


@pytest.mark.parametrize(
    "writer",
    [
        ("blackboard: {/target/visible: false}\n", "sequence: []"),
        ("", "sequence: [set: {key: /target/visible, value: true}]"),
    ],
    ids=["initial-value", "leaf"],
)
def test_writer_check_accepts_initial_values_and_leaves(tmp_path, writer):
    extra, seq = writer
    tree = seq.replace("[]", "[succeed: {}]").replace(
        "]", ", condition: {key: /target/visible, exists: true}]"
    )
    mission = load(write_mission(tmp_path, tree, extra=extra))
    assert "/target/visible" in mission.writers


def test_set_overrides_nested_values_parsed_as_yaml(tmp_path):
    path = write_mission(
        tmp_path,
        "sequence: [wait: {name: w, duration: 1 s}]",
        extra="blackboard: {/limits/force: 10 N}\n",
    )
    mission = load(
        path,
        "tree.sequence.0.wait.duration=250 ms",
        "blackboard./limits/force=40 N",
        "blackboard./new/key=[1, 2, 3]",
        "rate_hz=500",
    )
    assert mission.nodes()[1].params.duration == pytest.approx(0.25)
    assert mission.model.blackboard == {"/limits/force": 40.0, "/new/key": [1, 2, 3]}
    assert mission.model.rate_hz == 500


def test_set_errors_point_at_the_command_line_argument(tmp_path):
    path = write_mission(tmp_path, "wait: 1 s")
    with pytest.raises(MissionError) as err:
        load(path, "tree.wait=3 deg")
    (diag,) = err.value.diagnostics
    assert diag.file == "--set tree.wait=3 deg"
    assert "expected a time" in diag.message


def test_yaml_one_point_one_booleans_are_not_keys(tmp_path):
    # `on:` is a boolean in YAML 1.1; as a key in a mission it must stay the word "on"
    path = write_mission(tmp_path, "one_shot:\n  on: completion\n  child: {succeed: {}}")
    assert load(path).nodes()[0].params.on == "completion"


def test_several_errors_are_reported_together_in_file_order(tmp_path):
    path = write_mission(
        tmp_path,
        """
        sequence:
          - wait: 3 deg
          - retry: {attempts: 0, child: {succeed: {}}}
          - bogus: {}
        """,
    )
    with pytest.raises(MissionError) as err:
        load(path)
    lines = [d.line for d in err.value.diagnostics]
    assert lines == [5, 6, 7]
