"""admittance_dock, tick by tick on a fake arm: the twist within its limits, seated, timeout, halt.

Period 0.1 s; the TCP starts on its docked pose unless a test moves it off.
"""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.behaviours.admittance_dock import AdmittanceDock
from orbitree.nodes.messages import StampedPose
from orbitree.skills.capture import SIROM_TCP2TARGET_DOCKED
from tests.behaviours.bench import FakeRobot, make_bench, pose

TARGET = pose((-0.65, 0.1, 0.1), (0.0, 0.0, np.radians(30)))
DOCKED = TARGET @ SIROM_TCP2TARGET_DOCKED
OFF = DOCKED @ pose((0.005, 0.0, 0.0))  # 5 mm off: never seated


def dock(tcp2base=DOCKED, wrench=(0.0,) * 6, preempt=None, **params):
    params = {"name": "dock", "robot": "arm", "target": "sirom", **params}
    robot = FakeRobot(tcp2base)
    robot.wrench = np.array(wrench, dtype=float)
    bench = make_bench(AdmittanceDock, params, robot=robot, preempt=preempt)
    bench.set("/target/sirom/pose_base", StampedPose(TARGET, "base", 0.0, 0.3, (0, 1, 2)))
    return bench


def twists(bench) -> np.ndarray:
    return np.array([call[1] for call in bench.robot.calls if call[0] == "speed_l"])


def test_dock_seated_for_the_hold_succeeds_and_stops_the_twist_it_commanded():
    bench = dock(seated={"hold": "300 ms"})
    calm = "|F| = 0.0 N, z = 0.00 mm"
    bench.run([
        # statuses   commands sent      feedback
        ("dock=R", ["arm.speed_l"], calm),  # t=0.0 calm and placed: the hold starts
        ("dock=R", ["arm.speed_l"], calm),  # t=0.1
        ("dock=R", ["arm.speed_l"], calm),  # t=0.2
        ("dock=S", ["arm.stop"], "seated"),  # t=0.3 held 300 ms: stop the twist
    ])
    np.testing.assert_allclose(twists(bench), np.zeros((3, 6)))
    assert bench.ctx.summary["dock_peak_force_n"] == 0.0


def test_dock_seated_on_its_first_tick_stops_nothing():
    bench = dock(seated={"hold": 0})
    bench.run([("dock=S", [], "seated")])  # no twist was commanded, so no stop is sent
    assert bench.robot.calls == []


def test_dock_not_seated_by_the_timeout_fails_and_stops_the_arm():
    bench = dock(OFF, timeout="300 ms")
    off = "|F| = 0.0 N, z = 0.00 mm"
    bench.run([
        ("dock=R", ["arm.speed_l"], off),  # t=0.0 5 mm off in x: not placed
        ("dock=R", ["arm.speed_l"], off),
        ("dock=R", ["arm.speed_l"], off),
        ("dock=F", ["arm.stop"], "not seated after 0.3 s"),  # t=0.3
    ])
    np.testing.assert_allclose(bench.get("/dock/error")[:3] * 1e3, [5.0, 0.0, 0.0], atol=1e-9)  # mm


def test_dock_twist_is_held_to_max_speed():
    bench = dock(OFF, wrench=(50.0, 0, 0, 0, 0, 0), max_speed="20 mm/s")  # 47 N past the dead band
    assert [bench.tick() for _ in range(3)] == ["dock=R"] * 3
    linear = np.linalg.norm(twists(bench)[:, :3], axis=1)
    np.testing.assert_allclose(linear, 0.02)  # unlimited it would be 0.42 m/s after one tick
    assert bench.ctx.summary["dock_peak_force_n"] == 50.0


@pytest.mark.parametrize(("params", "limit"), [
    ({"max_speed": "100 mm/s"}, 0.2),  # the default angular limit, whatever max_speed is
    ({"max_speed": "100 mm/s", "max_angular_speed": "5 deg/s"}, np.radians(5)),
], ids=["default", "5 deg/s"])
def test_dock_rotation_rate_is_held_to_max_angular_speed_not_to_ten_times_max_speed(params, limit):
    # 5 Nm about the tool axis: 0.96 rad/s after one tick unlimited; the old limit was
    # 10 x max_speed taken as rad/s, 1.0 rad/s here
    bench = dock(OFF, wrench=(0, 0, 0, 0, 0, 5.0), **params)
    assert [bench.tick() for _ in range(3)] == ["dock=R"] * 3
    angular = np.linalg.norm(twists(bench)[:, 3:], axis=1)
    np.testing.assert_allclose(angular, limit)


def test_halting_dock_stops_the_arm():
    bench = dock(OFF, preempt="F")
    bench.run([
        ("guarded=R preempt?=F dock=R", ["arm.speed_l"], "|F| = 0.0 N, z = 0.00 mm"),  # t=0.0
        ("guarded=S preempt?=S dock=-", ["arm.stop"], "halted: arm stopped"),           # t=0.1
    ])


def test_dock_seated_when_the_mean_reading_over_the_hold_is_calm_though_each_reading_is_not():
    # ±8 N on alternate readings: every reading is over the 5 N limit, their mean is zero (the
    # UR10e's sensor scatters by ±5 N per reading)
    bench = dock(seated={"hold": "300 ms"}, filter=0)
    feedback = []
    for k in range(4):
        bench.robot.wrench = np.array([0.0, 0.0, 8.0 if k % 2 == 0 else -8.0, 0.0, 0.0, 0.0])
        feedback.append((bench.tick(), bench.leaf.feedback_message))
    assert [f[0] for f in feedback] == ["dock=R", "dock=R", "dock=R", "dock=S"]
    assert feedback[-1][1] == "seated"


def test_dock_with_a_steady_push_over_the_seated_force_is_not_seated():
    bench = dock(wrench=(0.0, 0.0, 6.0, 0.0, 0.0, 0.0), seated={"hold": "300 ms"}, timeout="1 s", filter=0)
    assert [bench.tick() for _ in range(10)] == ["dock=R"] * 10


def test_dock_over_its_force_limit_stops_the_arm_and_fails_saying_why():
    bench = dock(OFF, filter=0)
    bench.run([("dock=R", ["arm.speed_l"], "|F| = 0.0 N, z = 0.00 mm")])
    bench.robot.wrench = np.array([0.0, 0.0, 120.0, 0.0, 0.0, 0.0])
    bench.run([("dock=R", ["arm.speed_l"], "|F| = 120.0 N, z = 0.00 mm")])  # one reading may be a spike
    bench.run([("dock=F", ["arm.stop"], "contact force 120 N over 80 N: the admittance loop does not hold this "
                                        "contact (too little damping for its stiffness and delay?); stopped")])
    assert [e["kind"] for e in bench.events] == ["dock_stopped"]


def test_dock_that_makes_no_progress_stops_the_arm_and_fails_as_jammed():
    bench = dock(OFF, wrench=(0.0, 0.0, 2.0, 0.0, 0.0, 0.0), progress={"distance": "0.2 mm", "within": "300 ms"})
    held = "|F| = 2.0 N, z = 0.00 mm"
    bench.run([
        ("dock=R", ["arm.speed_l"], held),  # t=0.0 5.0 mm off: the best so far
        ("dock=R", ["arm.speed_l"], held),  # the fake arm does not move: no closer
        ("dock=R", ["arm.speed_l"], held),
        ("dock=F", ["arm.stop"], "no progress: 5.0 mm from the docked pose for 0.3 s with |F| = 2 N "
                                 "(jammed or wedged); stopped"),  # t=0.3
    ])
