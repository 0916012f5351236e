"""Fault schedules and substitutions as written: what validates, and ``file:line:col`` errors.

Positions were counted by hand on the mission below (1-based, as editors show them): each fault
is written on line 12, as ``  - {...}``, so its ``{`` is column 5.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitree.behaviours.catalogue import mission_schema
from orbitree.cli import main
from orbitree.language.fault_spec import FAULT_KINDS

BASE = """\
mission: m
rate_hz: 10
robots:
  arm: {camera: {}}
tree:
  sequence:
    name: main
    children:
      - wait: {name: settle, duration: 1 s}
      - wait: {name: second, duration: 1 s}
"""

CASES = {
    "unknown-kind": ("{at: 1 s, kind: camera_drop}",
                     [(21, "faults[0].kind: unknown fault kind 'camera_drop'; did you mean 'camera_dropout'?")]),
    "both-at-and-when": ("{at: 1 s, when: settle RUNNING, kind: camera_dropout}",
                         [(5, "faults[0]: give exactly one of 'at'", "got both")]),
    "neither-at-nor-when": ("{kind: camera_dropout, for: 1 s}", [(5, "exactly one of 'at'", "got neither")]),
    "unknown-node-in-when": ("{when: setle RUNNING, kind: camera_dropout}",
                             [(12, "faults[0] (camera_dropout): when: no node named (or of kind) 'setle'",
                               "did you mean 'settle'?")]),
    "bad-status-in-when": ("{when: settle DONE, kind: camera_dropout}",
                           [(12, "faults[0].when: expected '<node name or kind> <STATUS>'", "RUNNING")]),
    "misspelt-parameter": ("{at: 1 s, kind: marker_occlusion, marker: [1]}",
                           [(5, "faults[0]: marker_occlusion needs 'markers'"),
                            (39, "unknown key 'marker' for marker_occlusion; did you mean 'markers'?")]),
    "parameter-in-wrong-units": ("{at: 1 s, kind: command_latency, delay: 3 deg}",
                                 [(45, "faults[0].delay: '3 deg' is in units of angle, expected a time")]),
    "for-on-an-instantaneous-kind": ("{at: 1 s, kind: ft_spike, magnitude: 50 N, for: 1 s}",
                                     [(5, "ft_spike happens once: 'for' does not apply")]),
    "unknown-robot": ("{at: 1 s, kind: ft_dropout, robot: arn}",
                      [(40, "robot 'arn' is not declared in 'robots:' (declared: arm)")]),
    "robot-without-latch": ("{at: 1 s, kind: latch_failure}",
                            [(5, "faults[0] (latch_failure): robot 'arm' has no latch")]),
    "no-target-to-bump": ("{at: 1 s, kind: target_bumped, offset: [0, 0, 0.01, 0, 0, 0]}",
                          [(5, "needs a target, and the mission declares no 'targets:'")]),
    "unknown-overrun-node": ("{at: 1 s, kind: tick_overrun, node: sleep, delay: 10 ms}",
                             [(41, "node: no node named (or of kind) 'sleep'")]),
    "state-dropout-without-a-sensor": ("{at: 1 s, kind: state_sensor_dropout}",
                                       [(5, "faults[0] (state_sensor_dropout): needs a target, and the mission "
                                            "declares no 'targets:' with a state_sensor")]),
}


def validate(tmp_path, capsys, text, *args):
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["validate", str(path), *args])
    return code, capsys.readouterr().err, str(path)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_fault_is_reported_at_its_position(tmp_path, capsys, case):
    fault, expected = CASES[case]
    code, err, path = validate(tmp_path, capsys, BASE + "faults:\n  - " + fault + "\n")
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == len(expected), err
    for col, *words in expected:
        matching = [line for line in lines if line.startswith(f"{path}:12:{col}: ")]
        assert matching and all(w in matching[0] for w in words), f"want 12:{col} {words}, got:\n{err}"


def test_substitution_that_matches_no_leaf_is_an_error(tmp_path, capsys):
    code, err, path = validate(tmp_path, capsys, BASE + 'substitute:\n  - {match: "pbvs*", status: FAILURE}\n')
    assert code == 2
    assert err.startswith(f"{path}:12:13: substitute[0]: match 'pbvs*' matches no leaf "
                          "(leaves: 'settle', 'second')")
    code, err, path = validate(tmp_path, capsys, BASE + "substitute:\n  - {kind: wait, match: '*'}\n")
    assert code == 2 and f"{path}:12:5: substitute[0]: give exactly one of 'match'" in err


def test_faults_given_with_set_are_reported_against_the_argument(tmp_path, capsys):
    arg = "faults=[{at: 1 s, kind: camera_dropout, for: -1 s}]"
    code, err, _ = validate(tmp_path, capsys, BASE, "--set", arg)
    assert code == 2
    assert err.startswith(f"--set {arg}:1:1: faults[0].for: Input should be greater than 0")


def test_every_kind_validates_and_is_in_the_schema(tmp_path, capsys):
    faults = """
targets:
  sirom: {pose: [-0.6, 0.1, 0.1, 0, 0, 30]}
faults:
  - {at: 1 s, kind: camera_dropout, for: 2 s}
  - {at: 1 s, kind: marker_occlusion, markers: [0, 2], robot: arm}
  - {at: 1 s, kind: pose_noise, sigma_px: 0.5}
  - {at: 1 s, kind: camera_latency, delay: 150 ms}
  - {when: settle RUNNING, kind: ft_bias, force: [0, 0, 5 N], torque: [0.1 Nm, 0, 0]}
  - {when: second SUCCESS, kind: ft_spike, magnitude: 100 N}
  - {when: wait FAILURE, kind: ft_dropout, for: 500 ms}
  - {when: main INVALID, kind: protective_stop}
  - {at: 2 s, kind: robot_disconnect, for: 1 s}
  - {at: 2 s, kind: command_latency, delay: 40 ms, for: 1 s}
  - {at: 2 s, kind: tick_overrun, node: second, delay: 20 ms}
  - {at: 2 s, kind: target_bumped, offset: {xyz: [5 mm, 0, 0], rpy: [0, 0, 2]}, target: sirom}
  - {at: 2 s, kind: latch_failure}
substitute:
  - {match: "sec*", status: SUCCESS, after: 1 s}
"""
    text = BASE.replace("arm: {camera: {}}", "arm: {camera: {}, latch: {}}") + faults
    code, err, _ = validate(tmp_path, capsys, text)
    assert (code, err) == (0, "")
    schema = mission_schema()
    kinds = {schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]["properties"]["kind"]["const"]
             for ref in schema["properties"]["faults"]["items"]["oneOf"]}
    assert kinds == set(FAULT_KINDS) and len(kinds) == 14
    assert "substitute" in schema["properties"]


JPL = Path(__file__).resolve().parents[2] / "missions" / "jpl_grapple.yaml"


def test_state_sensor_dropout_validates_on_a_satellite_with_a_state_sensor(capsys):
    fault = "faults=[{when: despin RUNNING, kind: state_sensor_dropout, for: 2 s}]"
    assert main(["validate", str(JPL), "--set", fault]) == 0
    capsys.readouterr()
    named = "faults=[{at: 1 s, kind: state_sensor_dropout, target: mockup}]"
    assert main(["validate", str(JPL), "--set", named]) == 0


def test_state_sensor_dropout_of_a_target_without_a_state_sensor_is_reported_at_its_target(tmp_path, capsys):
    text = BASE + """targets:
  sirom: {pose: [-0.6, 0.1, 0.1, 0, 0, 30]}
faults:
  - {at: 1 s, kind: state_sensor_dropout, target: sirom}
"""
    code, err, _ = validate(tmp_path, capsys, text)
    assert code == 2
    assert err.startswith(f"{tmp_path / 'm.yaml'}:14:51: faults[0] (state_sensor_dropout): target 'sirom' is not "
                          "declared in 'targets:' with a state_sensor (declared: none)")
