"""The motion base owns the lifecycle: start, running, halted; it stops what was started, once.

A probe leaf journals its hooks as events; it moves the arm and closes "hooks" in ``start``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
from py_trees.common import Status

from orbitree.nodes.motion import MotionLeaf, MotionParams
from tests.behaviours.bench import make_bench

STATUS = {"R": Status.RUNNING, "S": Status.SUCCESS, "F": Status.FAILURE}


class ProbeParams(MotionParams):
    first: Literal["R", "S", "F"] = "R"  # what start() returns
    then: Literal["R", "S", "F"] = "R"  # what running() returns


class Probe(MotionLeaf):
    kind = "probe"
    Params = ProbeParams
    params: ProbeParams

    def start(self) -> Status:
        self.ctx.event("start")
        self.move_l(np.eye(4), 0.1, 0.5)
        self.commanded("hooks", lambda: self.ctx.event("reopen"), "reopened")
        return STATUS[self.params.first]

    def running(self) -> Status:
        self.ctx.event("running")
        return STATUS[self.params.then]

    def halted(self) -> None:
        self.ctx.event("halted")


def probe(preempt=None, **params):
    return make_bench(Probe, {"robot": "arm", **params}, preempt=preempt)


def kinds(bench) -> list[str]:
    return [e["kind"] for e in bench.events]


def test_start_and_running_share_the_first_tick():
    bench = probe()
    assert bench.tick() == "probe=R" and kinds(bench) == ["start", "running"]
    assert bench.tick() == "probe=R" and kinds(bench) == ["running"]


def test_a_start_that_ends_the_leaf_skips_running_and_stops_what_it_started():
    bench = probe(first="F")
    assert bench.tick() == "probe=F"
    assert kinds(bench) == ["start", "reopen"] and bench.sent == ["arm.move_l", "arm.stop"]
    assert bench.leaf.feedback_message == ""  # not halted: the failure's own words stay


def test_halt_runs_halted_then_stops_in_reverse_order_once():
    bench = probe(preempt="F")
    assert bench.tick() == "guarded=R preempt?=F probe=R"
    assert bench.tick() == "guarded=S preempt?=S probe=-"
    assert kinds(bench) == ["halted", "reopen"] and bench.sent == ["arm.stop"]
    assert bench.leaf.feedback_message == "halted: hooks reopened, arm stopped"
    bench.root.stop(Status.INVALID)  # halted again by a parent: nothing is left to stop
    assert bench.ctx.take_tick_records()[1:] == ([], [])


def test_success_stops_what_is_still_going_without_calling_halted():
    bench = probe(then="S")
    assert bench.tick() == "probe=S"
    assert kinds(bench) == ["start", "running", "reopen"] and bench.sent == ["arm.move_l", "arm.stop"]


@pytest.mark.parametrize("hook", ["initialise", "update", "terminate", "tick", "stop"])
def test_a_motion_leaf_that_overrides_the_lifecycle_is_refused(hook):
    with pytest.raises(TypeError, match=f"Bad overrides {hook}: fill in start/running/halted"):
        type("Bad", (MotionLeaf,), {hook: lambda self, *args: None})
