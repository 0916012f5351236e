"""A condition's threshold measures what its key holds: checked at load, not a silent FAILURE at
run time; the JSON Schema accepts the thresholds the loader accepts."""

from __future__ import annotations

import jsonschema
import pytest

from orbitree.behaviours.catalogue import load_mission, mission_schema
from orbitree.language.errors import MissionError

MISSION = """\
mission: c
robots:
  arm: {{}}
tree:
  sequence:
    children:
      - condition: {{key: /robot/arm/wrench, norm: true, at_most: {force}}}
      - guard:
          condition: {{key: /robot/arm/q, norm: true, below: {angle}}}
          child: {{wait: 1 s}}
      - condition: {{key: /servo/gain, below: {gain}, name: gain}}
      - set: {{key: /servo/gain, value: 0.5}}
"""


def _write(tmp_path, **values):
    path = tmp_path / "c.yaml"
    path.write_text(MISSION.format(**{"force": "30 N", "angle": "180 deg", "gain": 1, **values}))
    return path


def test_thresholds_in_the_keys_dimension_load(tmp_path):
    mission = load_mission(_write(tmp_path))
    assert mission.root.children[0].params.at_most == 30.0


@pytest.mark.parametrize(("values", "where", "message"), [
    ({"force": "30 mm"}, "7:66", "sequence/condition: at_most: '30 mm' is a length, but /robot/arm/wrench "
                                 "holds a force"),
    ({"angle": "2 s"}, "9:61", "sequence/guard: below: '2 s' is a time, but /robot/arm/q holds an angle"),
    ({"gain": "1 N"}, "11:46", "sequence/gain: below: '1 N' is a force, but /servo/gain holds a plain number "
                               "(no unit)"),
])
def test_a_threshold_in_another_dimension_is_refused_at_its_line(tmp_path, values, where, message):
    path = _write(tmp_path, **values)
    with pytest.raises(MissionError) as error:
        load_mission(path)
    assert str(error.value) == f"{path}:{where}: {message}"


def test_the_schema_accepts_a_threshold_with_a_unit_as_the_loader_does(tmp_path):
    import yaml

    document = yaml.safe_load(_write(tmp_path).read_text())
    jsonschema.validate(document, mission_schema())
    document["tree"]["sequence"]["children"][0]["condition"]["at_most"] = "thirty"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, mission_schema())


def test_an_unknown_capture_envelope_is_refused_at_load_with_a_suggestion(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text("""\
mission: e
robots:
  arm: {camera: {}, latch: {}}
targets:
  sirom: {pose: [0.6, 0.2, 0, 0, 0, 0]}
tree:
  capture: {robot: arm, target: sirom, envelope: sirm}
""")
    with pytest.raises(MissionError) as error:
        load_mission(path)
    assert str(error.value) == (f"{path}:7:50: capture: envelope: unknown capture envelope 'sirm'; "
                                "did you mean 'sirom'? known: sirom")
    assert mission_schema()["$defs"]["capture_node"]["properties"]["envelope"]["enum"] == ["sirom"]
