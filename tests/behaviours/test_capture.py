"""capture, tick by tick on a fake arm and hooks: close only inside the envelope, reopen on failure.

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


def capture(tcp2base=AIMED, latch=None, preempt=None, **params):
    params = {"robot": "arm", "target": "sirom", **params}
    latch = latch or FakeLatch()
    bench = make_bench(Capture, params, robot=FakeRobot(tcp2base), latch=latch, preempt=preempt)
    bench.set("/target/sirom/pose_base", StampedPose(TARGET, "base", 0.0, 0.3, (0, 1, 2)))
    return bench


def test_capture_inside_the_envelope_closes_the_hooks_and_succeeds_when_they_are_closed():
    bench = capture()
    bench.run([
        # statuses      commands sent           feedback
        ("capture=R", ["arm_latch.close"], "hooks closing"),  # t=0.0 inside: close
        ("capture=R", [], "hooks closing"),                   # t=0.1
        ("capture=S", [], "hooks closed"),                    # t=0.2 closed: nothing reopened
    ])
    assert bench.latch.calls == ["close"] and bench.robot.calls == []
    assert bench.get("/capture/inside") is True
    assert bench.get("/capture/error")["z_mm"] == pytest.approx(1.5)  # the standoff
    assert bench.ctx.summary["in_capture_envelope"] is True
    bench.root.stop(Status.INVALID)  # the parent halted after the success: nothing to undo
    assert bench.latch.calls == ["close"] and bench.ctx.commands == []


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
    bench.run([("capture=F", ["arm_latch.close", "arm_latch.open"], "hooks did not close (fault)")])


def test_hooks_not_closed_by_the_timeout_are_reopened():
    bench = capture(latch=FakeLatch(travel_ticks=10), timeout="300 ms")
    bench.run([
        ("capture=R", ["arm_latch.close"], "hooks closing"),  # t=0.0 close; deadline 0.3
        ("capture=R", [], "hooks closing"),
        ("capture=R", [], "hooks closing"),
        ("capture=F", ["arm_latch.open"], "hooks did not close (closing)"),  # t=0.3
    ])


def test_halting_capture_while_the_hooks_close_reopens_them():
    bench = capture(preempt="F")
    bench.run([
        ("guarded=R preempt?=F capture=R", ["arm_latch.close"], "hooks closing"),     # t=0.0 close
        ("guarded=S preempt?=S capture=-", ["arm_latch.open"], "halted: hooks reopened"),  # t=0.1
    ])
    assert bench.robot.calls == []  # the arm was never commanded, so never stopped


def test_capture_without_a_latch_is_refused_at_setup():
    params = {"robot": "arm", "target": "sirom"}
    with pytest.raises(RuntimeError, match="capture: robot 'arm' has no latch"):
        make_bench(Capture, params)
