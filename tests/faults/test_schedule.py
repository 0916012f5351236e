"""Fault schedules played by the executive: when faults start and end, what the log and the
summary say, and node substitution.

The missions are tiny: a simulated arm (no camera unless the test needs one) and generic leaves
(``wait``, ``succeed``...), 10 Hz, under a second of mission time. The safety monitor's limits
are relaxed where a test wants to watch a fault rather than the monitor's reaction to it.
"""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from tests.conftest import TEST_REGISTRY, FakeDriver, write_mission

ARM = """
robots:
  arm: {ft_sensor: ideal}
safety: {max_sensor_age: 10 s, protective_stop: false}
record: {keys: [/robot/arm/*]}
"""

TWO_WAITS = """
sequence:
  name: main
  children:
    - wait: {name: first, duration: 0.5 s}
    - wait: {name: second, duration: 0.5 s}
"""


def run(tmp_path, tree, extra, **kwargs):
    mission = load_mission(write_mission(tmp_path, tree, extra), registry=TEST_REGISTRY)
    log = tmp_path / "run.jsonl"
    executive = Executive(mission, log_path=str(log), **kwargs)
    result = executive.run()
    return result, read_log(log), executive


def fault_events(log) -> list[tuple[int, str, str]]:
    """(tick, fault kind, phase) of every fault event, in order."""
    return [(t["n"], e["fault"], e["phase"])
            for t in log.ticks for e in t.get("events", []) if e["kind"] == "fault"]


def wrench_by_tick(log) -> dict[int, list[float]]:
    return {t["n"]: t["bb"]["/robot/arm/wrench"] for t in log.ticks if "/robot/arm/wrench" in t.get("bb", {})}


def test_a_fault_at_a_time_is_active_from_that_tick_for_its_duration(tmp_path):
    faults = "faults:\n  - {at: 0.2 s, kind: ft_bias, force: [1, 2, 3 N], torque: [0, 0, 500 mNm], for: 0.3 s}\n"
    result, log, _ = run(tmp_path, TWO_WAITS, ARM + faults)
    assert result.status == "SUCCESS"
    wrench = wrench_by_tick(log)
    biased = [1.0, 2.0, 3.0, 0.0, 0.0, 0.5]
    assert [n for n, w in wrench.items() if np.allclose(w, biased)] == [2, 3, 4]  # t = 0.2, 0.3, 0.4
    assert all(np.allclose(w, 0.0) for n, w in wrench.items() if n not in (2, 3, 4))
    assert fault_events(log) == [(2, "ft_bias", "start"), (5, "ft_bias", "end")]
    start = next(e for t in log.ticks for e in t.get("events", []) if e["kind"] == "fault")
    assert start == {"kind": "fault", "t": pytest.approx(0.2), "fault": "ft_bias", "phase": "start", "id": 0,
                     "robot": "arm", "force": [1.0, 2.0, 3.0], "torque": [0.0, 0.0, 0.5]}
    expected = [{"id": 0, "kind": "ft_bias", "start": 0.2, "end": 0.5, "trigger": "at 0.2 s",
                 "params": {"robot": "arm", "force": [1.0, 2.0, 3.0], "torque": [0.0, 0.0, 0.5]}}]
    assert result.summary["faults"] == expected
    assert log.footer["summary"]["faults"] == expected


def test_a_fault_on_an_event_starts_the_tick_after_it_and_only_once(tmp_path):
    # 'second RUNNING' happens at t = 0.5 (tick 5); 'wait SUCCESS' matches by kind: 'first'
    # succeeds at 0.5 (then 'second' at 1.0, which must not start it again)
    faults = """
faults:
  - {when: second RUNNING, kind: ft_bias, force: [0, 0, 1], for: 200 ms}
  - {when: wait SUCCESS, kind: ft_bias, force: [0, 0, 10]}
"""
    result, log, _ = run(tmp_path, TWO_WAITS, ARM + faults)
    assert result.status == "SUCCESS"
    z = {n: w[2] for n, w in wrench_by_tick(log).items()}
    assert z == pytest.approx({0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 11, 7: 11, 8: 10, 9: 10, 10: 10})
    assert fault_events(log) == [
        (6, "ft_bias", "start"), (6, "ft_bias", "start"), (8, "ft_bias", "end"), (10, "ft_bias", "end"),
    ]
    summary = {f["id"]: (f["start"], f["end"], f["trigger"]) for f in result.summary["faults"]}
    # without 'for' a fault lasts to the end of the run (ended with it, at t = 1.0)
    assert summary == {0: (0.6, 0.8, "when second RUNNING"), 1: (0.6, 1.0, "when wait SUCCESS")}


def test_ft_dropout_leaves_the_wrench_key_unwritten_so_it_goes_stale(tmp_path):
    faults = "faults:\n  - {at: 0.3 s, kind: ft_dropout, for: 0.3 s}\n"
    result, log, _ = run(tmp_path, TWO_WAITS, ARM + faults)
    assert result.status == "SUCCESS"
    assert sorted(wrench_by_tick(log)) == [0, 1, 2, 6, 7, 8, 9, 10]  # nothing new at 0.3 .. 0.5
    assert all("/robot/arm/q" in t.get("bb", {}) for t in log.ticks[:10])  # the arm's state is fresh


def test_robot_disconnect_skips_the_readings_then_reconnects(tmp_path):
    faults = "faults:\n  - {at: 0.3 s, kind: robot_disconnect, for: 0.4 s}\n"
    result, log, executive = run(tmp_path, TWO_WAITS, ARM + faults)
    assert result.status == "SUCCESS", result.reason
    read = [t["n"] for t in log.ticks if "/robot/arm/q" in t.get("bb", {})]
    assert read == [0, 1, 2, 7, 8, 9, 10]
    events = [(t["n"], e["kind"]) for t in log.ticks for e in t.get("events", [])
              if e["kind"] in ("fault", "driver_disconnected", "driver_reconnected")]
    assert events == [(3, "fault"), (3, "driver_disconnected"), (7, "fault"), (7, "driver_reconnected")]
    # the fault acts below the command recorder, on the world's own arm
    device = executive.ctx.drivers["arm"]
    assert device.robot.inner is device.driver and device.driver.inner is executive.ctx.world.robots["arm"]


def test_command_latency_is_below_the_command_recorder(tmp_path):
    faults = "faults:\n  - {at: 0 s, kind: command_latency, delay: 300 ms}\n"
    mission = load_mission(write_mission(tmp_path, TWO_WAITS, ARM + faults), registry=TEST_REGISTRY)
    executive = Executive(mission)
    device, world, ctx = executive.ctx.drivers["arm"], executive.ctx.world, executive.ctx
    speeds = []
    for k in range(6):
        ctx.now = round(0.1 * k, 6)
        executive.injector.before_tick(ctx.now)
        if k == 0:
            device.robot.speed_l(np.array([0.05, 0, 0, 0, 0, 0]), 2.0)
            assert [c["cmd"] for c in ctx.commands] == ["speed_l"]  # journalled when sent
        world.step(0.1)
        speeds.append(round(float(np.linalg.norm(world.robots["arm"].read().tcp_twist[:3])), 4))
    assert speeds[:3] == [0.0, 0.0, 0.0] and speeds[3] > 0.0  # it reached the arm at t = 0.3


def test_tick_overrun_advances_the_sim_world_while_the_tree_waits(tmp_path):
    # 'second' is ticked at 0.5 .. 1.0; overruns of 40 ms at 0.6 and 0.7 (for: 0.2 s), one
    # more at 0.9 (no 'for': that tick only)
    faults = """
faults:
  - {at: 0.6 s, kind: tick_overrun, node: second, delay: 40 ms, for: 0.2 s}
  - {at: 0.9 s, kind: tick_overrun, node: second, delay: 40 ms}
"""
    plain, _, nominal = run(tmp_path, TWO_WAITS, ARM)
    result, _, faulty = run(tmp_path, TWO_WAITS, ARM + faults)
    assert result.status == plain.status == "SUCCESS"
    assert faulty.ctx.world.time - nominal.ctx.world.time == pytest.approx(3 * 0.040)
    assert [(f["start"], f["end"]) for f in result.summary["faults"]] == [(0.6, 0.8), (0.9, 1.0)]


def test_target_bumped_moves_the_target_by_the_offset_in_its_own_frame(tmp_path):
    extra = ARM + """
targets:
  sirom: {pose: {xyz: [-0.6, 0.1, 0.1], rpy: [0, 0, 30]}}
faults:
  - {at: 0.2 s, kind: target_bumped, offset: {xyz: [10 mm, 0, 0], rpy: [0, 0, 5]}}
"""
    result, log, executive = run(tmp_path, TWO_WAITS, extra)
    assert result.status == "SUCCESS"
    before = executive.mission.model.targets["sirom"].pose.matrix()
    after = executive.ctx.world.target_pose("sirom")
    np.testing.assert_allclose(np.linalg.inv(before) @ after, _pose([0.01, 0, 0], 5.0), atol=1e-12)
    np.testing.assert_allclose(after[:3, 3] - before[:3, 3],
                               0.01 * np.array([np.cos(np.radians(30)), np.sin(np.radians(30)), 0]), atol=1e-12)
    assert fault_events(log) == [(2, "target_bumped", "start"), (2, "target_bumped", "end")]
    assert result.summary["faults"][0]["start"] == result.summary["faults"][0]["end"] == 0.2


def _pose(xyz, yaw_deg):
    from scipy.spatial.transform import Rotation

    out = np.eye(4)
    out[:3, :3] = Rotation.from_euler("z", yaw_deg, degrees=True).as_matrix()
    out[:3, 3] = xyz
    return out


def test_target_bumped_without_a_simulated_world_is_reported_not_injected(tmp_path):
    extra = """
targets:
  sirom: {pose: [0.6, 0.2, 0.05, 0, 0, 30]}
faults:
  - {at: 0.1 s, kind: target_bumped, offset: [0, 0, 0.01, 0, 0, 0]}
"""
    result, log, _ = run(tmp_path, "wait: 0.3 s", extra, drivers=[FakeDriver()])
    events = [e for t in log.ticks for e in t.get("events", []) if e["kind"] == "fault_not_injected"]
    assert len(events) == 1 and "no simulated world" in events[0]["reason"]
    (entry,) = result.summary["faults"]
    assert entry["injected"] is False and entry["params"]["target"] == "sirom"


# -- node substitution -----------------------------------------------------------------------

SKILLS = """
sequence:
  name: dock
  children:
    - perceive: {name: look, robot: arm, target: sirom}
    - approach: {name: pbvs final, robot: arm, target: sirom}
    - capture: {name: grab, robot: arm, target: sirom}
    - set: {name: done, key: /mission/docked, value: true}
"""

SKILL_WORLD = """
robots:
  arm:
    camera: {width: 320, height: 240, focal_px: 220, fps: 5 Hz}
    latch: {}
targets:
  sirom: {pose: [-0.6, 0.1, 0.1, 0, 0, 30]}
substitute:
  - {match: "pbvs*", status: SUCCESS, after: 0.3 s}
  - {kind: perceive, status: success}
  - {kind: capture, after: 100 ms}
"""


def test_substituted_leaves_run_as_stubs_and_the_tree_succeeds(tmp_path):
    result, log, executive = run(tmp_path, SKILLS, SKILL_WORLD)
    assert result.status == "SUCCESS", result.reason
    substituted = [(e["node"], e["name"], e["leaf"], e["status"], e["after"])
                   for e in log.ticks[0]["events"] if e["kind"] == "substituted"]
    assert substituted == [(1, "look", "perceive", "SUCCESS", 0.0), (2, "pbvs final", "approach", "SUCCESS", 0.3),
                           (3, "grab", "capture", "SUCCESS", 0.1)]
    success_tick = {int(i): t["n"] for t in log.ticks for i, s in t.get("status", {}).items() if s == "SUCCESS"}
    assert success_tick == {1: 0, 2: 3, 3: 4, 4: 4, 0: 4}  # look at once, pbvs 0.3 s, grab 0.1 s later
    assert executive.tree.behaviours[2].feedback_message == "stub: SUCCESS"
    assert not result.summary["faults"]


def test_substitution_is_settable_from_the_command_line(tmp_path):
    path = write_mission(tmp_path, TWO_WAITS, ARM)
    mission = load_mission(path, overrides=["substitute=[{match: 's*', status: FAILURE}]"], registry=TEST_REGISTRY)
    result = Executive(mission).run()
    assert result.status == "FAILURE" and result.reason == "tree returned FAILURE: second: stub: FAILURE"
    assert result.summary["phase_s"] == {"first": pytest.approx(0.5), "second": 0.0}


def test_faults_are_settable_from_the_command_line(tmp_path):
    path = write_mission(tmp_path, TWO_WAITS, ARM)
    mission = load_mission(path, registry=TEST_REGISTRY, overrides=[
        "faults=[{at: 0.4 s, kind: ft_spike, magnitude: 80 N, axis: [0, 3, 4]}]"])
    result = Executive(mission, log_path=str(tmp_path / "run.jsonl")).run()
    log = read_log(tmp_path / "run.jsonl")
    assert wrench_by_tick(log)[4] == pytest.approx([0, 48, 64, 0, 0, 0])
    assert np.allclose(wrench_by_tick(log)[5], 0.0)
    assert result.summary["faults"][0]["params"]["axis"] == [0.0, 0.6, 0.8]


def test_the_active_faults_are_on_the_blackboard_while_they_last(tmp_path):
    faults = """
faults:
  - {at: 0.2 s, kind: ft_bias, force: [1, 2, 3 N], torque: [0, 0, 0], for: 0.3 s}
  - {at: 0.3 s, kind: command_latency, delay: 10 ms, for: 0.1 s}
  - {at: 0.3 s, kind: ft_spike, magnitude: 10 N}
"""
    extra = ARM.replace("record: {keys: [/robot/arm/*]}", "record: {keys: [/faults/active]}")
    result, log, _ = run(tmp_path, TWO_WAITS, extra + faults)
    assert result.status == "SUCCESS"
    written = {t["n"]: [f["kind"] for f in t["bb"]["/faults/active"]]
               for t in log.ticks if "/faults/active" in t.get("bb", {})}
    # an instantaneous fault (the spike) is never 'active'; the list is rewritten when it changes
    assert written == {0: [], 2: ["ft_bias"], 3: ["ft_bias", "command_latency"], 4: ["ft_bias"], 5: []}
    entry = log.ticks[3]["bb"]["/faults/active"][1]
    assert entry["start"] == 0.3 and entry["params"] == {"robot": "arm", "delay": 0.01}


def test_faults_that_never_started_are_reported_in_the_summary_and_warned_about(tmp_path, capsys):
    # the mission ends after 1 s: a fault at 20 s, and one waiting for a node that never fails
    faults = ARM + (
        "faults:\n  - {at: 20 s, kind: ft_dropout, for: 2 s}\n"
        "  - {when: second FAILURE, kind: ft_bias, force: [0, 0, 5 N]}\n  - {at: 0.2 s, kind: ft_dropout}\n"
    )
    result, _, _ = run(tmp_path, TWO_WAITS, faults)
    assert result.status == "SUCCESS"
    assert [f["kind"] for f in result.summary["faults"]] == ["ft_dropout"]
    assert result.summary["faults_not_injected"] == [
        {"id": 0, "kind": "ft_dropout", "trigger": "at 20 s", "reason": "due at 20 s; the run ended at 1 s"},
        {"id": 1, "kind": "ft_bias", "trigger": "when second FAILURE",
         "reason": "'second FAILURE' never happened before the run ended at 1 s"},
    ]
    from orbitree.cli import main

    assert main(["run", str(tmp_path / "m.yaml"), "--view", "none"]) == 0
    err = capsys.readouterr().err
    assert "warning: fault ft_dropout (at 20 s) was never injected: due at 20 s" in err


def test_an_injector_with_nothing_to_do_is_idle_and_a_fault_of_a_mission_without_arms_still_fires(tmp_path):
    """The loop skips the injector's hooks while it is idle (no fault scheduled, no arm): a
    mission without arms and without faults leaves it idle; one fault, triggered by a node's
    status, makes it busy and fires on time."""
    _, _, quiet = run(tmp_path, TWO_WAITS, "")
    assert quiet.injector.idle and quiet.injector.records == []
    faults = """
faults:
  - {when: second RUNNING, kind: tick_overrun, node: second, delay: 10 ms, for: 200 ms}
"""
    result, _, busy = run(tmp_path, TWO_WAITS, faults)
    assert not busy.injector.idle
    assert result.status == "SUCCESS"
    # 'second' starts RUNNING at 0.5 s; the fault starts on the next tick and lasts 0.2 s
    assert [(f["start"], f["end"]) for f in result.summary["faults"]] == [(0.6, 0.8)]
    _, _, armed = run(tmp_path, TWO_WAITS, ARM)
    assert not armed.injector.idle  # an arm: commands to deliver each tick
