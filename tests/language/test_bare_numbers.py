"""A bare number where a quantity is expected is accepted in the field's documented unit, with a
warning at its line naming that unit (``wait: 500`` silently meant 500 s)."""

from __future__ import annotations

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main

MISSION = """\
mission: w
max_duration: 60
robots:
  arm: {tcp_speed_limit: 0.25}
tree:
  sequence:
    children:
      - wait: 500
      - wait: {duration: 2, name: two}
      - wait: 0
      - wait: 300 ms
      - condition: {key: /robot/arm/q, max_age: 1}
"""


def test_bare_numbers_for_quantities_warn_with_the_unit_assumed_at_their_line(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(MISSION)
    mission = load_mission(path)
    assert [(w.line, w.col) for w in mission.warnings] == [(2, 15), (4, 26), (8, 15), (9, 26), (12, 49)]
    messages = [w.message for w in mission.warnings]
    assert messages[0] == "warning: max_duration: bare number 60 read as 60 s (time); write the unit, e.g. '60 s'"
    assert messages[1].startswith("warning: tcp_speed_limit: bare number 0.25 read as 0.25 m/s (speed)")
    assert messages[2] == ("warning: sequence/wait: duration: bare number 500 read as 500 s (time); "
                           "write the unit, e.g. '500 s'")
    assert "max_age: bare number 1 read as 1 s" in messages[4]
    assert mission.root.children[0].params.duration == 500.0  # accepted as written
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "ok (6 nodes), 5 warnings" in out and f"{path}:8:15: warning: sequence/wait: duration" in err


def test_shipped_missions_have_no_bare_number_warnings():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shipped = [*sorted((root / "missions").glob("*.yaml")), *sorted((root / "tests" / "missions").glob("*.yaml"))]
    for path in shipped:
        assert load_mission(path).warnings == [], path.name


def test_values_only_lax_coercion_would_take_are_refused_at_their_line(tmp_path):
    import pytest

    from orbitree.language.errors import MissionError

    path = tmp_path / "lax.yaml"
    path.write_text("""\
mission: lax
robots:
  arm: {}
tree:
  sequence:
    reactive: 0
    children:
      - retract: {robot: arm, acceleration: true}
      - repeat: {count: "3", child: {wait: 1 s}}
""")
    with pytest.raises(MissionError) as error:
        load_mission(path)
    assert [str(d).split(f"{path}:")[1] for d in error.value.diagnostics] == [
        "6:15: sequence: reactive: expected true or false, got 0",
        "8:45: sequence/retract: acceleration: expected a number, got True",
        "9:25: sequence/repeat: count: expected an integer, got '3'",
    ]
