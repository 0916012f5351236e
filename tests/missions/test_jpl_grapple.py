"""The JPL dual-arm grappling mission on the simulated world: the seed's case (2 rpm, state at 2 Hz,
control at 28 ms) docks with every pad force under the documented 60 N, and faults end in success
or in a safe abort (the pads let go, both arms backed off) with no limit crossed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.runtime.executive import Executive
from orbitree.skills.satellite import gimbal_spin_down

MISSION = Path(__file__).resolve().parents[2] / "missions" / "jpl_grapple.yaml"
PAD_FORCE_LIMIT_N = 60.0  # the leaves' abort force, documented in the README (the Velcro tears at 100 N)
SAFETY_FORCE_N = 80.0


def _run(tmp_path: Path, seed: int, *sets: str) -> dict:
    out = tmp_path / f"run{seed}.json"
    args = ["run", str(MISSION), "--view", "none", "--seed", str(seed), "--summary", str(out)]
    for value in sets:
        args += ["--set", value]
    main(args)
    return json.loads(out.read_text())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seed_case_grapples_despins_and_docks_with_pad_forces_under_the_limit(tmp_path, seed):
    summary = _run(tmp_path, seed)
    grapple = summary["grapple"]
    assert summary["status"] == "SUCCESS", summary["reason"]
    assert grapple["docked"] is True
    assert grapple["revolutions_missed"] == 0
    # the 2 rpm spin run down by the bearing's friction until contact (the closed form), as the
    # state estimate measured it (σ 0.1 deg/s = 0.017 rpm on the rate: within 3σ)
    rpm = 60.0 / (2.0 * math.pi)
    free = float(gimbal_spin_down(2.0 / rpm, 28.6, 0.02, 0.01, grapple["contact_time_s"])) * rpm
    assert grapple["spin_at_contact_rpm"] == pytest.approx(free, abs=0.05)
    assert grapple["final_spin_rpm"] < 0.1
    assert set(grapple["peak_force_n"]) == {"left", "right"}
    assert max(grapple["peak_force_n"].values()) < PAD_FORCE_LIMIT_N
    assert summary["true_max_contact_force_n"] < PAD_FORCE_LIMIT_N
    assert grapple["dock_error_true"]["angle_deg"] < 2.0
    assert summary["safety_violations"] == []


def test_protective_stop_of_one_arm_during_despin_ends_in_a_safe_abort_under_the_limits(tmp_path):
    fault = "faults=[{when: despin RUNNING, kind: protective_stop, robot: right}]"
    summary = _run(tmp_path, 1, fault)
    assert summary["status"] == "ABORTED"
    assert [v["check"] for v in summary["safety_violations"]] == ["protective_stop"]
    assert "safe abort" in summary["reason"]
    pads = {p["robot"]: p for p in summary["pad_contacts"]}
    assert all(not p["attached"] for p in pads.values())  # both tools let go of their pads
    assert any(e[0] == "let_go" for p in pads.values() for e in p["events"])
    assert summary["true_max_contact_force_n"] < SAFETY_FORCE_N
    assert max(summary["grapple"]["peak_force_n"].values()) < SAFETY_FORCE_N


def test_a_missed_pad_backs_off_to_the_stand_off_and_grapples_on_the_next_revolution(tmp_path):
    # the left arm's commands arrive 800 ms late while it tracks the first time: it misses its pad
    fault = "faults=[{when: track left RUNNING, kind: command_latency, robot: left, delay: 800 ms, for: 5.5 s}]"
    summary = _run(tmp_path, 2, fault, "max_duration=70 s")
    grapple = summary["grapple"]
    assert grapple["revolutions_missed"] >= 1
    assert summary["status"] in ("SUCCESS", "FAILURE")
    if summary["status"] == "SUCCESS":
        assert grapple["docked"] is True and grapple["final_spin_rpm"] < 0.1
    else:  # a safe abort: the tree's own, not a safety stop
        assert "safe abort" in summary["reason"]
    assert summary["true_max_contact_force_n"] < SAFETY_FORCE_N
    assert summary["safety_violations"] == []


def _run_exec(seed: int, *sets: str):
    """Run the mission with the executive (its world stays inspectable); the summary and the world."""
    executive = Executive(load_mission(MISSION, list(sets)), seed=seed)
    result = executive.run()
    return result.summary, executive.ctx.world


def _clearance(world, robot: str, fixture: str) -> float:
    """How far (m) the tool's tip stands in front of its pad's face, along the pad's normal."""
    pad = world.satellites["mockup"].fixture_pose(fixture)
    return float((world.tcp_pose(robot)[:3, 3] - pad[:3, 3]) @ pad[:3, 2])


def test_state_dropout_while_tracking_backs_off_and_grapples_on_the_next_revolution(tmp_path):
    # the 2 Hz state stops 4.0 s in, for 3 s, as both arms close on their pads (contact is at 5.2 s
    # without the fault): each follows the rigid-body prediction until its state is 1.5 s old,
    # backs out to the stand-off, waits for fresh states and docks on the next revolution
    summary, _ = _run_exec(1, "faults=[{at: 4 s, kind: state_sensor_dropout, for: 3 s}]")
    grapple = summary["grapple"]
    assert summary["faults"][0]["kind"] == "state_sensor_dropout" and summary["faults"][0]["end"] > 7.0
    assert summary["status"] == "SUCCESS", summary["reason"]
    assert grapple["revolutions_missed"] == 1
    assert grapple["contact_time_s"] > 7.0  # not on the stale state: after the state came back
    assert grapple["docked"] is True and grapple["final_spin_rpm"] < 0.1
    assert max(grapple["peak_force_n"].values()) < PAD_FORCE_LIMIT_N
    assert summary["safety_violations"] == []


def test_state_lost_for_good_while_tracking_ends_in_a_safe_abort_with_the_arms_backed_off():
    summary, world = _run_exec(1, "faults=[{at: 4 s, kind: state_sensor_dropout}]")
    assert summary["status"] == "FAILURE" and "safe abort" in summary["reason"]
    assert summary["sim_time_s"] < 25.0  # bounded: one back-off, then the retries' 5 s waits for a state
    assert summary["grapple"]["contact_time_s"] is None
    assert summary["true_max_contact_force_n"] == 0.0  # never touched a pad on a stale prediction
    centre = world.satellites["mockup"].pose()[:3, 3]
    for robot in ("left", "right"):
        # backed out to the stand-off (0.6 m pads + 100 mm), then the safe abort's 150 mm: wherever
        # the pads have turned to, the tools are clear of the circle they sweep
        assert np.hypot(*(world.tcp_pose(robot)[:2, 3] - centre[:2])) > 0.75
    assert summary["safety_violations"] == []


def test_state_dropout_during_despin_is_judged_by_the_arms_kinematics_and_docks():
    summary, world = _run_exec(1, "faults=[{when: despin RUNNING, kind: state_sensor_dropout, for: 3 s}]")
    grapple = summary["grapple"]
    assert summary["status"] == "SUCCESS", summary["reason"]
    assert grapple["despun_by"] == "kinematics"  # no state measured after the plan's end
    assert grapple["final_spin_rpm"] < 0.1 and grapple["docked"] is True
    assert max(grapple["peak_force_n"].values()) < PAD_FORCE_LIMIT_N
    assert grapple["peak_internal_force_n"] < PAD_FORCE_LIMIT_N
    for robot, fixture in (("left", "pad_left"), ("right", "pad_right")):
        assert abs(_clearance(world, robot, fixture)) < 0.01  # still holding its pad at the dock
    assert summary["safety_violations"] == []
