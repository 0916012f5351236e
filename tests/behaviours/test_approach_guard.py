"""approach's contact guard: a sustained wrist force stops the servo; one spike does not."""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log

MISSION = """
mission: guard-test
rate_hz: 125
max_duration: 20 s
robots:
  arm:
    q0: [0, -90, 90, -90, -90, 0]
    tool: {{xyz: [0, 0, 200 mm]}}
    camera: {{mount: {{xyz: [0, -120 mm, -20 mm], rpy: [0, 40, 90]}}, fps: 15 Hz, width: 1280, height: 720}}
    start: {{target: sirom, offset: {{xyz: [4 mm, -3 mm, 40 mm]}}}}
    ft_sensor: ideal   # the guard's logic, reading by reading
targets:
  sirom: {{pose: {{xyz: [-0.65, 0.1, 0.1], rpy: [0, 0, 30]}}}}
faults: [{fault}]
tree:
  parallel:
    policy: selected
    selected: [final approach]
    children:
      - perceive: {{name: vision, robot: arm, target: sirom, continuous: true}}
      - approach:
          name: final approach
          robot: arm
          target: sirom
          max_speed: 50 mm/s
          tolerance: 0.002
          blind_within: 25 mm   # the tool hides the board in the last ~14 mm
          contact_guard: {{force: 25 N, torque: 3 Nm, readings: 3}}
"""


def run(tmp_path, fault):
    path = tmp_path / "guard.yaml"
    path.write_text(MISSION.format(fault=fault))
    executive = Executive(load_mission(path), log_path=str(tmp_path / "guard.jsonl"))
    result = executive.run()
    return result, read_log(tmp_path / "guard.jsonl"), executive


def test_a_sustained_wrist_force_stops_the_approach_after_three_readings(tmp_path):
    result, log, executive = run(tmp_path, "{at: 0.4 s, kind: ft_bias, force: [0, 30 N, 0], torque: [0, 0, 0]}")
    assert result.status == "FAILURE", result.reason
    (event,) = [e for t in log.ticks for e in t.get("events", []) if e["kind"] == "unexpected_contact"]
    assert event["node"] == "final approach" and event["force_n"] > 25.0
    assert event["t"] == pytest.approx(0.4 + 2 / 125)  # the third biased reading (0.400, 0.408, 0.416)
    commands = [c["cmd"] for t in log.ticks for c in t.get("cmd", []) if c["device"] == "arm"]
    assert commands[-1] == "stop"
    arm = executive.ctx.world.robots["arm"]
    arm.step(0.5)
    assert float(np.linalg.norm(arm.read_truth()[0])) < 1e-6


def test_a_single_wrist_spike_does_not_stop_the_approach(tmp_path):
    result, log, _ = run(tmp_path, "{at: 0.4 s, kind: ft_spike, magnitude: 400 N}")
    assert result.status == "SUCCESS", result.reason
    assert not [e for t in log.ticks for e in t.get("events", []) if e["kind"] == "unexpected_contact"]
    assert result.summary["faults"][0]["kind"] == "ft_spike"
