"""retract, tick by tick on a fake arm: a straight move back along the tool axis, by the distance.

Moves end two ticks after they are sent (period 0.1 s).
"""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.behaviours.retract import Retract
from tests.behaviours.bench import FakeRobot, make_bench, pose

DOCKED = pose((-0.6, 0.1, 0.3), (2.8, 0.4, -0.3))  # the tool axis tilted from the vertical


def retract(robot=None, preempt=None):
    params = {"robot": "arm", "distance": "40 mm", "speed": "50 mm/s"}
    return make_bench(Retract, params, robot=robot or FakeRobot(DOCKED), preempt=preempt)


def test_retract_backs_off_the_distance_along_the_tool_axis_and_stops_nothing_at_the_end():
    bench = retract()
    bench.run([
        # statuses      commands sent     feedback
        ("retract=R", ["arm.move_l"], "retracting 40 mm"),  # t=0.0 move sent
        ("retract=R", [], "retracting 40 mm"),              # t=0.1 moving
        ("retract=S", [], "retracted"),                     # t=0.2 there: the arm is at rest
    ])
    ((name, goal, speed, acceleration),) = bench.robot.calls
    assert (name, speed, acceleration) == ("move_l", 0.05, 0.5)
    back = (goal[:3, 3] - DOCKED[:3, 3]) * 1e3  # mm
    np.testing.assert_allclose(back, -40.0 * DOCKED[:3, 2], atol=1e-9)  # 40 mm along the tool's -z
    assert np.linalg.norm(back) == pytest.approx(40.0)
    np.testing.assert_allclose(goal[:3, :3], DOCKED[:3, :3], atol=1e-12)


def test_retract_in_a_protective_stop_fails_without_moving():
    robot = FakeRobot(DOCKED)
    robot.protective_stop = True
    bench = retract(robot)
    bench.run([("retract=F", [], "protective stop: not retracting")])
    assert robot.calls == []


def test_a_protective_stop_mid_retract_fails_and_stops_the_arm():
    bench = retract()
    bench.run([("retract=R", ["arm.move_l"], "retracting 40 mm")])
    bench.robot.protective_stop = True
    bench.run([("retract=F", ["arm.stop"], "protective stop: not retracting")])


def test_a_move_that_ends_short_of_its_goal_fails():
    bench = retract(FakeRobot(DOCKED, reach=0.875))  # 35 of 40 mm
    bench.run([
        ("retract=R", ["arm.move_l"], "retracting 40 mm"),
        ("retract=R", [], "retracting 40 mm"),
        ("retract=F", [], "stopped 5.0 mm short"),
    ])


def test_a_move_lost_on_a_dropped_link_fails_once_the_link_is_back():
    bench = retract()
    bench.robot.connected = False
    bench.run([
        ("retract=R", ["arm.move_l"], "retracting 40 mm"),  # t=0.0 journalled, then lost
    ])
    lost = [(e["kind"], e["call"]) for e in bench.events]
    assert lost == [("command_lost", "move_l"), ("command_lost", "motion_done")]
    bench.run([("retract=R", [], "retracting 40 mm")])  # t=0.1 link down: arrival unknown
    bench.robot.connected = True
    bench.run([("retract=F", [], "stopped 40.0 mm short")])  # t=0.2 the arm never moved
    assert bench.robot.calls == []


def test_halting_retract_mid_move_stops_the_arm():
    bench = retract(preempt="F")
    bench.run([
        ("guarded=R preempt?=F retract=R", ["arm.move_l"], "retracting 40 mm"),   # t=0.0 move sent
        ("guarded=S preempt?=S retract=-", ["arm.stop"], "halted: arm stopped"),  # t=0.1 halted
    ])
