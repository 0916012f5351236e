"""capture, tick by tick on a fake arm and hooks: close only inside the envelope, comply while
the hooks close, reopen on failure.

The hooks reach CLOSED two ticks after ``close`` (period 0.1 s). Latch commands are journalled
through the device's recording latch (``arm_latch.close``), as they are in the mission log.
"""

from __future__ import annotations

import numpy as np
import pytest
from py_trees.common import Status

from orbitree.behaviours.capture import Capture
from orbitree.nodes.messages import StampedPose
from orbitree.skills.capture import SIROM_ENVELOPE, aim_tcp2target
from tests.behaviours.bench import FakeLatch, FakeRobot, make_bench, pose

TARGET = pose((-0.65, 0.1, 0.1), (0.0, 0.0, np.radians(30)))
AIMED = TARGET @ aim_tcp2target(SIROM_ENVELOPE)  # docked, 1.5 mm standoff: inside the envelope


def capture(tcp2base=AIMED, latch=None, preempt=None, robot=None, **params):
    params = {"robot": "arm", "target": "sirom", **params}
    latch = latch or FakeLatch()
    bench = make_bench(Capture, params, robot=robot or FakeRobot(tcp2base), latch=latch, preempt=preempt)
    bench.set("/target/sirom/pose_base", StampedPose(TARGET, "base", 0.0, 0.3, (0, 1, 2)))
    return bench


def test_capture_inside_the_envelope_zeroes_the_sensor_closes_the_hooks_complies_and_succeeds_when_closed():
    bench = capture()
    calm = "hooks closing, |F| = 0.0 N"
    bench.run([
        # statuses      commands sent                                     feedback
        ("capture=R", ["arm.zero_ft", "arm_latch.close", "arm.speed_l"], calm),  # t=0.0 inside: close
        ("capture=R", ["arm.speed_l"], calm),                                    # t=0.1 complying
        ("capture=S", ["arm.stop"], "hooks closed"),  # t=0.2 closed: the arm stops, nothing reopened
    ])
    assert bench.latch.calls == ["close"]
    assert [call[0] for call in bench.robot.calls] == ["zero_ft", "speed_l", "speed_l", "stop"]
    assert bench.get("/capture/inside") is True
    assert bench.get("/capture/error")["z_mm"] == pytest.approx(1.5)  # the standoff
    assert bench.ctx.summary["in_capture_envelope"] is True
    bench.root.stop(Status.INVALID)  # the parent halted after the success: nothing to undo
    assert bench.latch.calls == ["close"] and bench.ctx.commands == []


def test_capture_held_still_sends_no_twist():
    bench = capture(comply=None, zero_ft=False)
    bench.run([
        ("capture=R", ["arm_latch.close"], "hooks closing"),
        ("capture=R", [], "hooks closing"),
        ("capture=S", [], "hooks closed"),
    ])
    assert bench.robot.calls == []


def test_capture_yields_to_the_hooks_pull_at_force_over_damping():
    robot = FakeRobot(AIMED)
    robot.wrench = np.array([0.0, 0.0, 43.0, 0.0, 0.0, 0.0])  # the hooks pull the tool along its +z
    bench = capture(latch=FakeLatch(travel_ticks=10), comply={"damping": [4000] * 3 + [80] * 3, "filter": 0},
                    robot=robot)
    for _ in range(4):
        assert bench.tick() == "capture=R"
    twists = np.array([call[1] for call in bench.robot.calls if call[0] == "speed_l"])
    direction = AIMED[:3, 2]  # the tool's z in the base frame
    # M v' + D v = F: v → 43 N / 4000 N·s/m = 10.75 mm/s along the pull (M/D = 2.8 ms: settled)
    np.testing.assert_allclose(twists[-1][:3] / np.linalg.norm(twists[-1][:3]), direction, atol=1e-9)
    assert np.linalg.norm(twists[-1][:3]) == pytest.approx(43.0 / 4000.0, rel=1e-6)
    assert bench.ctx.summary["capture_peak_force_n"] == pytest.approx(43.0)


def test_capture_over_its_force_limit_stops_the_arm_reopens_the_hooks_and_fails():
    robot = FakeRobot(AIMED)
    bench = capture(latch=FakeLatch(travel_ticks=10), robot=robot, comply={"filter": 0})
    bench.run([("capture=R", ["arm.zero_ft", "arm_latch.close", "arm.speed_l"], "hooks closing, |F| = 0.0 N")])
    robot.wrench = np.array([0.0, 95.0, 0.0, 0.0, 0.0, 0.0])
    bench.run([("capture=R", ["arm.speed_l"], "hooks closing, |F| = 95.0 N")])  # one reading may be a spike
    bench.run([("capture=F", ["arm.stop", "arm_latch.open"],
                "contact force 95 N over 80 N while the hooks closed: the compliance does not hold this "
                "contact; stopped")])
    assert [e["kind"] for e in bench.events] == ["contact_force_limit"]


def test_capture_outside_the_envelope_fails_at_once_without_touching_the_hooks():
    bench = capture(AIMED @ pose((0.008, 0.0, 0.0)))  # 8 mm off in x (limit ±5 mm)
    bench.run([("capture=F", [], "outside the capture envelope on x_mm")])
    assert bench.latch.calls == []
    assert bench.get("/capture/inside") is False
    assert bench.get("/capture/error")["x_mm"] == pytest.approx(8.0)
    assert bench.ctx.summary["in_capture_envelope"] is False


def test_jammed_hooks_fail_the_capture_and_are_reopened():
    latch = FakeLatch()
    latch.jammed = True
    bench = capture(latch=latch)
    bench.run([("capture=F", ["arm.zero_ft", "arm_latch.close", "arm_latch.open"], "hooks did not close (fault)")])


def test_a_latch_that_says_why_it_faulted_is_quoted():
    latch = FakeLatch()
    latch.jammed = True
    latch.fault = "jammed: the hooks stalled at 93% of their stroke pulling 60 N"
    bench = capture(latch=latch, comply=None, zero_ft=False)
    bench.run([("capture=F", ["arm_latch.close", "arm_latch.open"],
                "hooks did not close (jammed: the hooks stalled at 93% of their stroke pulling 60 N)")])


def test_hooks_not_closed_by_the_timeout_are_reopened():
    bench = capture(latch=FakeLatch(travel_ticks=10), timeout="300 ms", comply=None, zero_ft=False)
    bench.run([
        ("capture=R", ["arm_latch.close"], "hooks closing"),  # t=0.0 close; deadline 0.3
        ("capture=R", [], "hooks closing"),
        ("capture=R", [], "hooks closing"),
        ("capture=F", ["arm_latch.open"], "hooks did not close (closing)"),  # t=0.3
    ])


def test_halting_capture_while_the_hooks_close_reopens_them_and_stops_the_arm():
    bench = capture(preempt="F")
    bench.run([
        ("guarded=R preempt?=F capture=R", ["arm.zero_ft", "arm_latch.close", "arm.speed_l"],
         "hooks closing, |F| = 0.0 N"),                                                    # t=0.0 close
        ("guarded=S preempt?=S capture=-", ["arm.stop", "arm_latch.open"],
         "halted: arm stopped, hooks reopened"),                                          # t=0.1
    ])


def test_capture_without_a_latch_is_refused_at_setup():
    params = {"robot": "arm", "target": "sirom"}
    with pytest.raises(RuntimeError, match="capture: robot 'arm' has no latch"):
        make_bench(Capture, params)
