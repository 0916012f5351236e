"""search, tick by tick on a fake arm: the sweep in order, dwell, sighting, resume, halt.

Moves end two ticks after they are sent (period 0.1 s); ``dwell: 200 ms`` is two more ticks.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from orbitree.behaviours.search import RESUME_KEY, Search
from orbitree.skills import kinematics as kin
from tests.behaviours.bench import FakeRobot, make_bench

HOME_DEG = [0, -90, 90, -90, -90, 0]
SWEEP_DEG = [[0, -90, 90, -90, -90, 0], [20, -90, 90, -90, -90, 0], [40, -90, 90, -90, -90, 0]]
SWEEP = [np.radians(q) for q in SWEEP_DEG]
VISIBLE = "/target/sirom/visible"


def search(**params):
    params = {"name": "sweep", "robot": "arm", "target": "sirom", "sweep": SWEEP_DEG, "dwell": "200 ms",
              **params}
    preempt = params.pop("preempt", None)
    robot = FakeRobot(q=np.radians([10, -90, 90, -90, -90, 0]))
    return make_bench(Search, params, robot=robot, preempt=preempt)


def test_search_visits_the_configurations_in_order_then_fails_without_stopping_an_arm_at_rest():
    bench = search()
    bench.run([
        # statuses    commands sent     feedback
        ("sweep=R", ["arm.move_j"], "configuration 1/3"),  # t=0.0 to q1
        ("sweep=R", [], "configuration 1/3"),              # t=0.1 moving
        ("sweep=R", [], "configuration 1/3"),              # t=0.2 there: dwell until 0.4
        ("sweep=R", [], "configuration 1/3"),              # t=0.3 dwelling
        ("sweep=R", ["arm.move_j"], "configuration 2/3"),  # t=0.4 to q2
        ("sweep=R", [], "configuration 2/3"),
        ("sweep=R", [], "configuration 2/3"),
        ("sweep=R", [], "configuration 2/3"),
        ("sweep=R", ["arm.move_j"], "configuration 3/3"),  # t=0.8 to q3
        ("sweep=R", [], "configuration 3/3"),
        ("sweep=R", [], "configuration 3/3"),
        ("sweep=R", [], "configuration 3/3"),
        ("sweep=F", [], "swept the whole area without seeing the target"),  # t=1.2: no stop
    ])
    moves = [call for call in bench.robot.calls if call[0] == "move_j"]
    assert [call[0] for call in bench.robot.calls] == ["move_j"] * 3
    for (_, q, speed, acceleration), expected in zip(moves, SWEEP, strict=True):
        np.testing.assert_allclose(q, expected)
        assert (speed, acceleration) == (1.0, 2.0)
    assert bench.get(RESUME_KEY) is None  # the next search starts over


def test_search_succeeds_when_the_target_comes_into_view_mid_move_and_stops_the_arm():
    bench = search()
    bench.run([("sweep=R", ["arm.move_j"], "configuration 1/3")])  # t=0.0 to q1
    bench.set(VISIBLE, True)
    bench.run([("sweep=S", ["arm.stop"], "target seen at configuration 1")])  # t=0.1 seen: stop
    np.testing.assert_allclose(bench.get(RESUME_KEY), np.radians([10, -90, 90, -90, -90, 0]))
    assert [call[0] for call in bench.robot.calls] == ["move_j", "stop"]


def test_a_sighting_while_dwelling_succeeds_without_a_stop():
    bench = search()
    bench.run([
        ("sweep=R", ["arm.move_j"], "configuration 1/3"),  # t=0.0 to q1
        ("sweep=R", [], "configuration 1/3"),              # t=0.1 moving
        ("sweep=R", [], "configuration 1/3"),              # t=0.2 there, dwelling
    ])
    bench.set(VISIBLE, True)
    bench.run([("sweep=S", [], "target seen at configuration 1")])  # t=0.3: the arm is at rest
    np.testing.assert_allclose(bench.get(RESUME_KEY), SWEEP[0])


@pytest.mark.parametrize(("resume", "first"), [(True, 2), (False, 1)])
def test_search_resumes_from_the_configuration_nearest_the_last_sighting(resume, first):
    bench = search(resume=resume)
    bench.set(RESUME_KEY, np.radians([19, -90, 90, -90, -90, 0]))  # nearest q2
    bench.run([("sweep=R", ["arm.move_j"], f"configuration {first}/3")])
    np.testing.assert_allclose(bench.robot.calls[0][1], SWEEP[first - 1])


def test_halting_search_mid_move_stops_the_arm():
    bench = search(preempt="FF")
    bench.run([
        ("guarded=R preempt?=F sweep=R", ["arm.move_j"], "configuration 1/3"),  # t=0.0 to q1
        ("guarded=R preempt?=F sweep=R", [], "configuration 1/3"),              # t=0.1 moving
        ("guarded=S preempt?=S sweep=-", ["arm.stop"], "halted: arm stopped"),  # t=0.2 halted
    ])


def test_halting_search_while_it_dwells_sends_nothing():
    bench = search(preempt="FFF")
    bench.run([
        ("guarded=R preempt?=F sweep=R", ["arm.move_j"], "configuration 1/3"),
        ("guarded=R preempt?=F sweep=R", [], "configuration 1/3"),
        ("guarded=R preempt?=F sweep=R", [], "configuration 1/3"),  # t=0.2 there, dwelling
        ("guarded=S preempt?=S sweep=-", [], "configuration 1/3"),  # t=0.3 halted: nothing moving
    ])


def test_search_visits_the_table_sweep_camera_positions_in_serpentine_order():
    spec = {"tool": {"xyz": [0, 0, 0.2]},
            "camera": {"mount": {"xyz": [0, -0.09, -0.16], "rpy": [-29.4, 0, 0]}}}
    sweep = {"center": [-0.65, 0.0], "size": [0.2, 0.2], "height": "550 mm", "spacing": "200 mm"}
    params = {"name": "sweep", "robot": "arm", "target": "sirom", "sweep": sweep, "dwell": 0}
    bench = make_bench(Search, params, robot=FakeRobot(q=np.radians(HOME_DEG), move_ticks=1), spec=spec)
    trace = [bench.tick() for _ in range(5)]
    assert trace == ["sweep=R"] * 4 + ["sweep=F"]  # one tick per configuration (dwell 0)
    tool, cam2tcp = bench.device.spec.tool.matrix(), bench.device.cam2tcp
    cameras = [(kin.forward_kinematics(kin.UR10E, q, tool) @ cam2tcp)[:3, 3] for _, q, *_ in bench.robot.calls]
    expected = [(-0.75, -0.1, 0.55), (-0.55, -0.1, 0.55), (-0.55, 0.1, 0.55), (-0.75, 0.1, 0.55)]
    np.testing.assert_allclose(cameras, expected, atol=1e-6)


def test_with_a_wall_clock_tick_the_table_sweep_is_planned_beside_it_and_visits_the_same_positions():
    """Planning a table sweep takes 60-200 ms: paced by the wall clock, the first tick hands it to
    a worker thread and returns RUNNING with the arm left still; the moves are those planned in line."""
    spec = {"tool": {"xyz": [0, 0, 0.2]},
            "camera": {"mount": {"xyz": [0, -0.09, -0.16], "rpy": [-29.4, 0, 0]}}}
    sweep = {"center": [-0.65, 0.0], "size": [0.2, 0.2], "height": "550 mm", "spacing": "200 mm"}
    moves = {}
    for concurrent in (False, True):
        params = {"name": "sweep", "robot": "arm", "target": "sirom", "sweep": sweep, "dwell": 0}
        robot = FakeRobot(q=np.radians(HOME_DEG), move_ticks=1)
        bench = make_bench(Search, params, robot=robot, spec=spec)
        bench.ctx.concurrent = concurrent
        bench.leaf.setup()  # the planner is chosen at setup, from the context
        if concurrent:  # as the executive runs it: the worker takes the job once the tick is done
            bench.leaf.planner.hold = True
        first = bench.tick()
        if concurrent:
            assert first == "sweep=R" and bench.robot.calls == []
            assert bench.leaf.feedback_message == "planning the sweep"
            bench.leaf.planner.release()  # the tick's end
            deadline = time.monotonic() + 10.0
            while bench.leaf.planning and time.monotonic() < deadline:
                time.sleep(0.01)
                bench.tick()
        while bench.tick() == "sweep=R":
            pass
        moves[concurrent] = [q for _, q, *_ in bench.robot.calls]
        if bench.leaf.planner is not None:
            bench.leaf.planner.close()
    assert len(moves[True]) == len(moves[False]) == 4
    np.testing.assert_array_equal(np.array(moves[True]), np.array(moves[False]))
