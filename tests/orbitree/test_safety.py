"""The safety monitor's checks, and the recovery it hands control to in the docking mission."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import py_trees
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from orbitree.runtime.safety import SafetyMonitor, SafetySpec

P = "/robot/arm/"


@pytest.fixture
def world():
    py_trees.blackboard.Blackboard.clear()
    ctx = Context(period=0.008)
    monitor = SafetyMonitor(
        SafetySpec(max_force=100.0, max_tcp_speed=0.3, debounce=2,
                   workspace={"min": [-1, -1, 0.05], "max": [1, 1, 1]}),
        ["arm"],
    )

    def tick(force=0.0, speed=0.0, z=0.5, wrench_new=True, pose_new=True, stop=False):
        storage = py_trees.blackboard.Blackboard.storage
        pose = np.eye(4)
        pose[2, 3] = z
        values = {"tcp_twist": np.array([speed, 0, 0, 0, 0, 0]), "protective_stop": stop}
        if pose_new:
            values["tcp_pose"] = pose
        if wrench_new:
            values["wrench"] = np.array([0, 0, force, 0, 0, 0])
        for key, value in values.items():
            storage[P + key] = value
            ctx.touched(P + key)
        found = monitor(ctx)
        ctx.now += ctx.period
        return [v["check"] for v in found]

    return tick, monitor, ctx


def test_force_must_exceed_its_limit_on_consecutive_readings(world):
    tick, _, _ = world
    assert tick(force=400) == []  # a one-sample spike
    assert tick(force=20) == []
    assert tick(force=150) == []
    assert tick(force=150) == ["force"]


def test_a_repeated_stale_reading_is_not_counted_twice(world):
    tick, _, _ = world
    assert tick(force=150) == []
    assert tick(force=150, wrench_new=False) == []  # the same reading, not a second one
    assert tick(force=150) == ["force"]


def test_speed_workspace_stale_and_protective_stop_trip_at_once(world):
    tick, _, _ = world
    assert tick(speed=0.31) == ["tcp_speed"]
    assert tick(z=0.04) == ["workspace"]
    assert tick(stop=True) == ["protective_stop"]
    for _ in range(12):  # the arm stops answering: 12 ticks of 8 ms is 96 ms, 13 is 104 ms
        assert tick(pose_new=False, wrench_new=False) == []
    assert tick(pose_new=False, wrench_new=False) == ["stale_sensor"]


def test_during_recovery_a_level_already_reached_does_not_trip_again_but_growth_does(world):
    tick, monitor, _ = world
    tick(force=150)
    found = tick(force=150)
    assert found == ["force"]
    monitor.enter_recovery([{"check": "force", "robot": "arm", "value": 150.0},
                            {"check": "workspace", "robot": "arm", "value": 0.01}])
    assert tick(force=170, z=0.04) == []  # within 20 % of 150 N, 10 mm out as before
    assert tick(force=190, z=0.04) == []  # first reading above 180 N
    assert tick(force=190, z=0.03) == ["force", "workspace"]  # 20 mm out: 5 mm beyond 10 + 5


MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"
NEAR = "robots.arm.start={target: sirom, offset: {xyz: [3 mm, -2 mm, 60 mm], rpy: [1, -1, 2]}}"


def test_force_violation_hands_over_to_the_recovery_which_releases_and_backs_off(tmp_path):
    # hooks pulling the tool in during capture exceed a deliberately low 30 N limit
    mission = load_mission(MISSION, [NEAR, "safety.max_force=30 N"])
    executive = Executive(mission, log_path=str(tmp_path / "run.jsonl"))
    result = executive.run()
    assert result.status == "ABORTED"
    assert result.reason.startswith("safety: arm: wrist force")
    assert "recovery 'safe retreat' SUCCESS" in result.reason
    log = read_log(tmp_path / "run.jsonl")
    events = [e for t in log.ticks for e in t.get("events", [])]
    violation = next(e for e in events if e["kind"] == "safety_violation")
    assert violation["check"] == "force" and violation["value"] > 30.0
    assert [e["phase"] for e in events if e["kind"] == "recovery"] == ["start", "end"]
    recorded = [t["bb"]["/safety/violations"] for t in log.ticks if "/safety/violations" in t.get("bb", {})]
    assert recorded and recorded[0][0]["check"] == "force"
    # the recovery tree is in the log as a second root, its statuses recorded like the mission's
    nodes = log.header["nodes"]
    recovery = [n for n in nodes if n.get("tree") == "recovery"]
    assert recovery[0]["name"] == "safe retreat" and recovery[0]["parent"] is None
    ids = {n["name"]: n["id"] for n in recovery}
    trace = [(nodes[i]["name"], status) for _, i, status in log.status_trace() if i in ids.values()]
    assert trace[0] == ("safe retreat", "RUNNING") and ("safe retreat", "SUCCESS") in trace
    assert ("release", "SUCCESS") in trace
    # the hooks were opened and the tool backed off 100 mm along its axis, away from the target
    world = executive.ctx.world
    assert world.latches["arm"].closure == 0.0
    tcp = world.robots["arm"].tcp2base()
    board = world.target_pose("sirom")
    # 100 mm back from where the hooks were pulling it in (inside the envelope's 0-10 mm)
    assert 0.1 <= np.linalg.solve(board, tcp)[2, 3] <= 0.11


def test_time_running_out_during_recovery_still_ends_aborted(tmp_path):
    # the hooks' pull trips the 30 N limit at ~6.5 s; the recovery takes ~3 s more
    mission = load_mission(MISSION, [NEAR, "safety.max_force=30 N", "max_duration=7.5 s"])
    result = Executive(mission).run()
    assert result.status == "ABORTED"
    assert "recovery 'safe retreat' did not finish" in result.reason
