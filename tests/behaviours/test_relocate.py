"""relocate, tick by tick on a fake arm: each move from where the target was lost, by its offset.

Moves end two ticks after they are sent (period 0.1 s); ``dwell: 100 ms`` is one more tick.
"""

from __future__ import annotations

import numpy as np

from orbitree.behaviours.relocate import Relocate
from tests.behaviours.bench import FakeRobot, make_bench, pose

LOST_AT = pose((-0.6, 0.1, 0.4), (np.pi, 0.0, 0.0))  # tool pointing down
VISIBLE = "/target/sirom/visible"


def relocate(spec=None, **params):
    params = {"robot": "arm", "target": "sirom", "moves": ["x+100 mm", "z-50 mm"], "dwell": "100 ms", **params}
    preempt = params.pop("preempt", None)
    return make_bench(Relocate, params, robot=FakeRobot(LOST_AT), spec=spec, preempt=preempt)


def test_relocate_makes_each_move_from_where_the_target_was_lost_then_fails():
    bench = relocate()
    bench.run([
        # statuses       commands sent     feedback
        ("relocate=R", ["arm.move_l"], "move x+100 mm"),  # t=0.0 first move
        ("relocate=R", [], "move x+100 mm"),              # t=0.1 moving
        ("relocate=R", [], "move x+100 mm"),              # t=0.2 there: dwell until 0.3
        ("relocate=R", ["arm.move_l"], "move z-50 mm"),   # t=0.3 second move, from the origin
        ("relocate=R", [], "move z-50 mm"),
        ("relocate=R", [], "move z-50 mm"),               # t=0.5 there: dwell until 0.6
        ("relocate=F", [], "target not seen from any relocation pose"),  # t=0.6: no stop
    ])
    (_, first, speed, acceleration), (_, second, *_) = bench.robot.calls
    assert (speed, acceleration) == (0.1, 0.5)
    np.testing.assert_allclose((first[:3, 3] - LOST_AT[:3, 3]) * 1e3, [100.0, 0.0, 0.0], atol=1e-9)  # mm
    np.testing.assert_allclose((second[:3, 3] - LOST_AT[:3, 3]) * 1e3, [0.0, 0.0, -50.0], atol=1e-9)
    for goal in (first, second):
        np.testing.assert_allclose(goal[:3, :3], LOST_AT[:3, :3], atol=1e-12)  # translated only


def test_relocate_in_the_camera_frame_moves_the_camera_along_its_own_axes():
    mount = {"xyz": [0, -0.09, -0.16], "rpy": [-29.4, 0, 0]}
    bench = relocate(spec={"camera": {"mount": mount}}, moves=["z+100 mm"], frame="camera")
    bench.run([("relocate=R", ["arm.move_l"], "move z+100 mm")])
    cam2tcp = bench.device.cam2tcp
    before, after = LOST_AT @ cam2tcp, bench.robot.calls[0][1] @ cam2tcp
    np.testing.assert_allclose((after[:3, 3] - before[:3, 3]) * 1e3, 100.0 * before[:3, 2], atol=1e-9)
    np.testing.assert_allclose(after[:3, :3], before[:3, :3], atol=1e-12)


def test_relocate_succeeds_when_the_target_is_seen_again_and_stops_the_arm():
    bench = relocate()
    bench.run([
        ("relocate=R", ["arm.move_l"], "move x+100 mm"),  # t=0.0 first move
        ("relocate=R", [], "move x+100 mm"),              # t=0.1 moving
    ])
    bench.set(VISIBLE, True)
    bench.run([("relocate=S", ["arm.stop"], "target seen again during x+100 mm")])  # t=0.2 (arrives after)


def test_a_sighting_after_a_move_ended_stops_nothing():
    bench = relocate()
    bench.run([
        ("relocate=R", ["arm.move_l"], "move x+100 mm"),
        ("relocate=R", [], "move x+100 mm"),
        ("relocate=R", [], "move x+100 mm"),  # t=0.2 there, dwelling
    ])
    bench.set(VISIBLE, True)
    bench.run([("relocate=S", [], "target seen again during x+100 mm")])


def test_halting_relocate_mid_move_stops_the_arm():
    bench = relocate(preempt="F")
    bench.run([
        ("guarded=R preempt?=F relocate=R", ["arm.move_l"], "move x+100 mm"),   # t=0.0 first move
        ("guarded=S preempt?=S relocate=-", ["arm.stop"], "halted: arm stopped"),  # t=0.1 halted
    ])
