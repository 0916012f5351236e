"""Every fault kind injected into the docking mission ends in success or a safe stop.

Each test runs missions/sirom_dock.yaml from a short misalignment (the target in view, 120 mm
out) with one fault, and checks the outcome the mission is built for, that ground truth never
crossed a safety limit (contact force on the tool, TCP speed, workspace), that the arm was left
stopped, and that the fault is in the log and the summary.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"
START = "robots.arm.start={target: sirom, offset: {xyz: [10 mm, -15 mm, 120 mm], rpy: [3, -2, 5]}}"
MOTION = ("speed_l", "servo_l", "move_l", "move_j")

KNOCK = "{at: 6.83 s, kind: target_bumped, offset: {xyz: [24 mm, -26 mm, 0], rpy: [0, 0, -6]}%s}"

# kind -> (fault, outcomes the mission is built to reach)
FAULTS = {
    # survived: perception faults are bridged by relocation and the board's redundancy
    "camera_dropout": ("{when: final approach RUNNING, kind: camera_dropout, for: 1 s}", {"SUCCESS"}),
    "marker_occlusion": ("{at: 0 s, kind: marker_occlusion, markers: [0]}", {"SUCCESS"}),
    "pose_noise": ("{at: 0 s, kind: pose_noise, sigma_px: 0.5}", {"SUCCESS"}),
    "camera_latency": ("{at: 0 s, kind: camera_latency, delay: 100 ms}", {"SUCCESS"}),
    "ft_bias": ("{when: dock RUNNING, kind: ft_bias, force: [0, 0, 8 N], torque: [0, 0, 0]}", {"SUCCESS"}),
    "ft_spike": ("{when: dock RUNNING, kind: ft_spike, magnitude: 400 N}", {"SUCCESS"}),
    "command_latency": ("{at: 0 s, kind: command_latency, delay: 40 ms}", {"SUCCESS"}),
    "tick_overrun": ("{when: final approach RUNNING, kind: tick_overrun, node: final approach, delay: 200 ms}",
                     {"SUCCESS"}),
    # knocked in the last second of the final approach, the petals at the receptacle's mouth
    "target_bumped": (KNOCK % "", {"SUCCESS"}),
    # safe stops: the monitor stops the arm and the recovery releases the hooks
    "ft_dropout": ("{when: dock RUNNING, kind: ft_dropout}", {"ABORTED"}),
    "protective_stop": ("{when: final approach RUNNING, kind: protective_stop}", {"ABORTED"}),
    "robot_disconnect": ("{when: final approach RUNNING, kind: robot_disconnect, for: 2 s}", {"ABORTED"}),
    # the hooks jam: capture fails, the mission abandons (stays put: the hooks' state is unknown)
    "latch_failure": ("{at: 0 s, kind: latch_failure}", {"FAILURE"}),
}


_RUNS: dict[str, tuple] = {}  # a kind's run, shared by the tests that look at it


def _run(kind: str, tmp_path_factory):
    if kind not in _RUNS:
        fault, _ = FAULTS[kind]
        mission = load_mission(MISSION, [START, f"faults=[{fault}]", "max_duration=60 s"])
        log = tmp_path_factory.mktemp(kind) / f"{kind}.jsonl"
        executive = Executive(mission, log_path=str(log))
        result = executive.run()
        _RUNS[kind] = result, read_log(log), mission, executive
    return _RUNS[kind]


@pytest.mark.parametrize("kind", list(FAULTS))
def test_fault_kind_ends_in_success_or_safe_stop(kind, tmp_path_factory):
    result, log, mission, executive = _run(kind, tmp_path_factory)
    summary = result.summary
    assert result.status in FAULTS[kind][1], f"{result.status}: {result.reason}"
    assert result.error is None  # no unhandled exception
    # ground truth stayed inside every limit of the mission's safety section
    limits = mission.model.safety
    assert summary["true_max_contact_force_n"] < limits.max_force
    assert summary["true_max_tcp_speed_mps"] < limits.max_tcp_speed
    assert summary["true_workspace_exit_m"] <= 0.0
    motion_violations = [v for v in summary["safety_violations"]
                         if v["check"] in ("tcp_speed", "workspace")]
    assert not motion_violations
    # the fault is in the log and in the summary
    starts = [e for t in log.ticks for e in t.get("events", [])
              if e["kind"] == "fault" and e["fault"] == kind and e["phase"] == "start"]
    assert starts, f"no {kind} fault event in the log"
    assert [f["kind"] for f in summary["faults"]] == [kind]
    # the arm was left stopped: whatever it was last told, the halt stopped it
    commands = [c["cmd"] for t in log.ticks for c in t.get("cmd", []) if c.get("device") == "arm"]
    assert commands[-1] == "stop"
    arm = executive.ctx.world.robots["arm"]
    arm.step(0.5)  # a stopped arm decelerates to rest; one still commanded would keep moving
    assert float(np.linalg.norm(arm.read_truth()[0])) < 1e-6
    if result.status == "SUCCESS":
        assert summary["in_capture_envelope_true"] is True
    if result.status == "ABORTED":
        assert result.reason.startswith("safety:") and "recovery 'safe retreat'" in result.reason


def test_every_skill_replaced_by_stubs_runs_the_mission_tree_to_success(tmp_path):
    stubs = ("substitute=[{kind: perceive, status: SUCCESS, after: 0 s}, "
             "{kind: search, status: SUCCESS, after: 1 s}, {kind: approach, status: SUCCESS, after: 2 s}, "
             "{kind: relocate, status: SUCCESS, after: 1 s}, {kind: capture, status: SUCCESS, after: 1 s}, "
             "{kind: admittance_dock, status: SUCCESS, after: 1 s}]")
    # the condition 'target in view' reads what perceive would write: start it out of sight
    mission = load_mission(MISSION, [stubs])
    result = Executive(mission, log_path=str(tmp_path / "stubs.jsonl")).run()
    assert result.status == "SUCCESS", result.reason
    log = read_log(tmp_path / "stubs.jsonl")
    substituted = [e for e in log.ticks[0].get("events", []) if e["kind"] == "substituted"]
    assert len(substituted) == 8  # vision, sweep x2, pre-dock, final approach, relocate, capture, dock
    phases = result.summary["phase_s"]
    assert phases["approach"] == pytest.approx(4.0, abs=0.05)  # two stubbed approaches of 2 s
    assert phases["capture"] == pytest.approx(1.0, abs=0.05) and phases["dock"] == pytest.approx(1.0, abs=0.05)
    assert not [c for t in log.ticks for c in t.get("cmd", []) if c["cmd"] in MOTION]


def test_target_knocked_into_the_tool_in_the_final_approach_is_backed_out_of_and_docked(tmp_path_factory):
    # 6.83 s is the last second of the final approach: the petals are at the receptacle's mouth
    result, log, mission, _ = _run("target_bumped", tmp_path_factory)
    assert result.status == "SUCCESS", result.reason
    guards = [e for t in log.ticks for e in t.get("events", []) if e["kind"] == "unexpected_contact"]
    assert [e["node"] for e in guards] == ["final approach"]
    (push,) = result.summary["target_pushes"]
    assert push["held_s"] > 0.0 and push["peak_resistance_n"] <= 50.0  # the tool was in the way
    assert result.summary["true_max_contact_force_n"] < 0.8 * mission.model.safety.max_force
    assert result.summary["safety_violations"] == []
    assert result.summary["in_capture_envelope_true"] is True


def test_a_hard_knock_on_the_tool_is_stopped_by_the_safety_monitor(tmp_path):
    mission = load_mission(MISSION, [START, f"faults=[{KNOCK % ', force: 1000 N'}]", "max_duration=60 s"])
    executive = Executive(mission, log_path=str(tmp_path / "hard.jsonl"))
    result = executive.run()
    assert result.status == "ABORTED" and result.reason.startswith("safety: arm: wrist force")
    first = result.summary["safety_violations"][0]
    assert first["check"] == "force" and first["value"] > 120.0
    log = read_log(tmp_path / "hard.jsonl")
    commands = [c["cmd"] for t in log.ticks for c in t.get("cmd", []) if c.get("device") == "arm"]
    assert commands[-1] == "stop"
    arm = executive.ctx.world.robots["arm"]
    arm.step(0.5)
    assert float(np.linalg.norm(arm.read_truth()[0])) < 1e-6
