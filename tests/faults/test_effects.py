"""The effect of each fault kind on the driver it wraps, with numbers (``drivers/faulty.py``).

Each test drives a wrapper the way the injector does (switch an effect on, read or command,
switch it off) around a real simulated driver or a small scripted one, and checks the exact
values the executive would then see.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.drivers.faulty import FaultyCamera, FaultyLatch, FaultyRobot, FaultyStateSensor, hide_markers
from orbitree.drivers.interfaces import DriverDisconnected, Frame, LatchState, RobotState
from orbitree.drivers.sim_camera import board_scene_camera
from orbitree.drivers.sim_latch import SimLatch
from orbitree.drivers.sim_robot import SimRobot
from orbitree.drivers.state_sensor import StateSensor
from orbitree.skills.board import estimate_board_pose, sirom_board, sirom_board_model


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


# -- cameras ---------------------------------------------------------------------------------


@dataclass
class StampCamera:
    """A camera whose every read is a new frame stamped with the clock (image = the stamp)."""

    clock: Clock
    name: str = "cam"
    reads: int = 0

    def read(self) -> Frame:
        self.reads += 1
        return Frame(np.full((4, 4), self.reads, np.uint8), self.clock.now)


def test_camera_dropout_gives_no_frames_while_active_and_does_not_grab():
    clock = Clock()
    inner = StampCamera(clock)
    camera = FaultyCamera(inner, clock)
    assert camera.read().stamp == 0.0
    camera.drop(0)
    clock.now = 0.1
    assert camera.read() is None and inner.reads == 1  # nothing grabbed (no render in sim)
    camera.remove(0)
    clock.now = 0.2
    assert camera.read().stamp == 0.2


def test_camera_latency_delivers_each_frame_delay_after_it_was_taken():
    clock = Clock()
    camera = FaultyCamera(StampCamera(clock), clock)
    delivered = {}
    for k in range(41):  # 20 Hz reads for 2 s; latency 0.3 s from t = 0.5 s to 1.5 s
        clock.now = round(0.05 * k, 6)
        if clock.now == 0.5:
            camera.delay(3, 0.3)
        if clock.now == 1.5:
            camera.remove(3)
        frame = camera.read()
        delivered[clock.now] = None if frame is None else frame.stamp
    assert delivered[0.45] == 0.45
    # the frames taken at 0.5 .. 0.75 arrive 0.3 s later; nothing new meanwhile
    assert [delivered[t] for t in (0.5, 0.55, 0.6, 0.75)] == [None, None, None, None]
    assert all(delivered[t] == pytest.approx(t - 0.3) for t in np.round(np.arange(0.8, 1.46, 0.05), 6))
    assert delivered[1.5] == 1.5  # latency over: the frames held back are dropped for the latest


def _board_frame(seed: int = 0) -> tuple[Frame, object]:
    """A rendered 1280x720 view of the SIROM board, 0.25 m away, every marker visible."""
    board2cam = np.eye(4)
    board2cam[:3, :3] = (Rotation.from_euler("y", 20, degrees=True) * Rotation.from_euler("x", 180, degrees=True)
                         * Rotation.from_euler("z", 35, degrees=True)).as_matrix()
    board2cam[:3, 3] = [0.0, 0.0, 0.25]
    cam = board_scene_camera(sirom_board_model(), seed=seed, board_name="sirom")
    cam.set_cam2world(np.linalg.inv(board2cam))
    return Frame(cam.render(), 1.0), cam.intrinsics


@dataclass
class FixedCamera:
    frame: Frame
    intrinsics: object
    name: str = "cam"

    def read(self) -> Frame:
        return self.frame


@pytest.fixture(scope="module")
def board_view():
    return _board_frame()


def _estimate(frame: Frame, intrinsics, **kwargs):
    return estimate_board_pose(frame.image, intrinsics.camera_matrix, intrinsics.dist_coeffs, sirom_board(),
                               **kwargs)


@pytest.mark.parametrize("hidden", [[1], [0, 2]])
def test_marker_occlusion_hides_exactly_the_listed_markers(board_view, hidden):
    frame, intrinsics = board_view
    camera = FaultyCamera(FixedCamera(frame, intrinsics), Clock(), boards=[sirom_board()])
    assert _estimate(camera.read(), intrinsics).marker_ids == (0, 1, 2)
    camera.occlude(5, hidden)
    seen = _estimate(camera.read(), intrinsics)
    assert seen.marker_ids == tuple(i for i in (0, 1, 2) if i not in hidden)
    camera.remove(5)
    assert camera.read() is frame


def test_marker_occlusion_works_on_any_image_without_a_board(board_view):
    frame, intrinsics = board_view
    image = hide_markers(frame.image, {0, 1, 2})  # the plain detector of the 7x7 dictionary
    assert _estimate(Frame(image, 1.0), intrinsics) is None
    assert np.array_equal(hide_markers(frame.image, {7}), frame.image)  # not in view: untouched


def test_pose_noise_perturbs_the_corners_by_sigma(board_view):
    """With N = 12 corners (24 coordinates, 6 pose parameters), noise of sigma px per coordinate
    leaves an RMS reprojection error of sigma * sqrt(18 / 12) = 1.22 sigma; and the pose moves
    in proportion to sigma (same seeds: noise vectors of 2 sigma are twice those of sigma)."""
    frame, intrinsics = board_view
    camera = FaultyCamera(FixedCamera(frame, intrinsics), Clock(), seed=3)
    clean = _estimate(camera.read(), intrinsics)
    assert clean.reprojection_error_px < 0.15
    camera.corner_noise(0, 1.0)
    seeds = [camera.read().meta["corner_noise_seed"] for _ in range(12)]
    assert len(set(seeds)) == 12 and camera.read().meta["corner_noise_px"] == 1.0
    shifts, rms = {}, {}
    for sigma in (0.5, 1.0):
        poses = [_estimate(frame, intrinsics, corner_noise_px=sigma, rng=np.random.default_rng(s)) for s in seeds]
        rms[sigma] = np.sqrt(np.mean([p.reprojection_error_px**2 for p in poses]))
        shifts[sigma] = np.mean([np.linalg.norm(p.board2cam[:3, 3] - clean.board2cam[:3, 3]) for p in poses])
    assert rms[1.0] == pytest.approx(np.sqrt(1.5) * 1.0, rel=0.2)
    assert rms[0.5] == pytest.approx(np.sqrt(1.5) * 0.5, rel=0.25)
    assert shifts[1.0] / shifts[0.5] == pytest.approx(2.0, rel=0.15)
    assert shifts[1.0] > 1e-4  # metres: the estimate really moved


# -- the arm and its wrist sensor ------------------------------------------------------------

EXTERNAL = np.array([1.0, 0.0, 3.0, 0.0, 0.1, 0.0])


def _sim_arm() -> SimRobot:
    arm = SimRobot("arm", period=0.002)
    arm.set_external_wrench(EXTERNAL)
    return arm


def test_ft_bias_adds_exactly_the_vector_and_overlapping_biases_add_up():
    robot = FaultyRobot(_sim_arm(), Clock())
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL)
    robot.bias(0, [0.5, -2.0, 8.0, 0.0, 0.0, 0.25])
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL + np.array([0.5, -2.0, 8.0, 0.0, 0.0, 0.25]))
    robot.bias(1, [1.0, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL + np.array([1.5, -2.0, 8.0, 0.0, 0.0, 0.25]))
    robot.remove(0)
    robot.remove(1)
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL)


def test_ft_spike_is_on_one_reading_only():
    robot = FaultyRobot(_sim_arm(), Clock())
    robot.spike(np.array([0.0, 0.0, 200.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL + np.array([0, 0, 200, 0, 0, 0]))
    np.testing.assert_allclose(robot.read().wrench, EXTERNAL)


def test_ft_dropout_freezes_the_wrench_and_its_stamp_then_recovers():
    arm = _sim_arm()
    robot = FaultyRobot(arm, Clock())
    arm.step(0.1)
    before = robot.read()
    assert before.wrench_stamp == before.stamp == pytest.approx(0.1)
    robot.freeze_wrench(2)
    arm.set_external_wrench(np.array([0.0, 0.0, 50.0, 0.0, 0.0, 0.0]))
    for _ in range(3):
        arm.step(0.1)
        stale = robot.read()
        assert stale.stamp > before.stamp  # the arm's own state is fresh
        assert stale.wrench_stamp == before.wrench_stamp
        np.testing.assert_array_equal(stale.wrench, before.wrench)
    robot.remove(2)
    fresh = robot.read()
    assert fresh.wrench_stamp == fresh.stamp == pytest.approx(0.4)
    np.testing.assert_allclose(fresh.wrench, [0, 0, 50, 0, 0, 0])


def test_robot_state_wrench_stamp_defaults_to_stamp():
    z = np.zeros(6)
    state = RobotState(1.5, z, z, np.eye(4), z, z)
    assert state.wrench_stamp == 1.5
    assert RobotState(1.5, z, z, np.eye(4), z, z, wrench_stamp=1.0).wrench_stamp == 1.0


def test_protective_stop_stops_a_sim_robot_and_is_unlocked_when_the_fault_ends():
    arm = SimRobot("arm", period=0.002)
    robot = FaultyRobot(arm, Clock())
    for _ in range(50):
        robot.speed_l(np.array([0.1, 0, 0, 0, 0, 0]), 1.0)
        arm.step(0.008)
    assert np.linalg.norm(robot.read().tcp_twist[:3]) == pytest.approx(0.1, rel=1e-3)
    robot.protective_stop(4)
    assert arm.protective_stop and arm.protective_stop_reason == "fault injection"
    for _ in range(50):
        robot.speed_l(np.array([0.1, 0, 0, 0, 0, 0]), 1.0)  # ignored
        arm.step(0.008)
    state = robot.read()
    assert state.protective_stop and np.linalg.norm(state.tcp_twist) < 1e-9
    robot.remove(4)
    assert not arm.protective_stop and not robot.read().protective_stop


@dataclass
class SpyRobot:
    """A non-simulated arm: journals the commands it receives, at the clock's time."""

    clock: Clock
    name: str = "arm"
    calls: list[tuple[float, str]] = field(default_factory=list)
    done: bool = True

    def read(self) -> RobotState:
        z = np.zeros(6)
        return RobotState(self.clock.now, z, z, np.eye(4), z, z)

    def motion_done(self) -> bool:
        return self.done

    def __getattr__(self, name: str):
        if name not in ("speed_l", "servo_l", "move_l", "move_j", "stop", "zero_ft"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.append((self.clock.now, name))


def test_protective_stop_on_other_robots_is_reported_and_ignores_motion():
    clock = Clock()
    spy = SpyRobot(clock)
    robot = FaultyRobot(spy, clock)
    robot.protective_stop(0)
    assert robot.read().protective_stop is True
    robot.speed_l(np.zeros(6))
    robot.move_l(np.eye(4))
    robot.stop()
    assert [name for _, name in spy.calls] == ["stop"]
    robot.remove(0)
    robot.speed_l(np.zeros(6))
    assert robot.read().protective_stop is False and spy.calls[-1][1] == "speed_l"


def test_robot_disconnect_stops_the_arm_raises_and_reconnects():
    clock = Clock()
    spy = SpyRobot(clock)
    robot = FaultyRobot(spy, clock)
    robot.disconnect(1)
    assert [name for _, name in spy.calls] == ["stop"]  # the RTDE watchdog's stop
    for call in (robot.read, robot.stop, robot.motion_done, lambda: robot.speed_l(np.zeros(6))):
        with pytest.raises(DriverDisconnected, match="connection lost"):
            call()
    assert issubclass(DriverDisconnected, ConnectionError)
    robot.remove(1)
    robot.speed_l(np.zeros(6))
    assert robot.read().stamp == 0.0 and spy.calls[-1][1] == "speed_l"


def test_command_latency_forwards_each_command_delay_later():
    clock = Clock()
    spy = SpyRobot(clock)
    robot = FaultyRobot(spy, clock)
    robot.delay_commands(0, 0.3)
    for k in range(6):  # a tick every 0.1 s: flush at its start, then the leaf commands
        clock.now = round(0.1 * k, 6)
        robot.flush(clock.now)
        if k == 0:
            robot.move_l(np.eye(4))
            assert robot.motion_done() is False and robot.read().moving  # in flight
        if k == 1:
            robot.stop()
    assert spy.calls == [(0.3, "move_l"), (0.4, "stop")]
    robot.speed_l(np.zeros(6))
    robot.remove(0)  # the latency ends: what is in flight arrives at once
    robot.speed_l(np.zeros(6))
    assert spy.calls[2:] == [(0.5, "speed_l"), (0.5, "speed_l")]


def test_latch_failure_leaves_a_sim_latch_open_and_reports_fault_after_its_travel_time():
    clock = Clock()
    latch = SimLatch("latch", travel_time=0.5)
    faulty = FaultyLatch(latch, clock)
    faulty.jam(0)
    faulty.close()
    states = []
    for _ in range(8):
        latch.step(0.1)
        clock.now = round(clock.now + 0.1, 6)
        states.append(faulty.state())
    assert states[:4] == [LatchState.CLOSING] * 4
    assert states[4:] == [LatchState.FAULT] * 4
    assert latch.closure == 0.0 and latch.jammed and latch.state() == LatchState.FAULT
    faulty.remove(0)
    assert not latch.jammed and faulty.state() == LatchState.OPEN
    faulty.close()
    latch.step(0.5)
    assert faulty.state() == LatchState.CLOSED


def test_a_wall_clock_tick_overrun_sleeps_for_its_delay(tmp_path):
    from orbitree.behaviours.catalogue import load_mission
    from orbitree.faults.injector import FaultInjector
    from orbitree.language.fault_spec import TickOverrunFault
    from orbitree.nodes.build import build_tree
    from orbitree.nodes.context import Context
    from tests.conftest import TEST_REGISTRY, write_mission

    mission = load_mission(write_mission(tmp_path, "sequence: [wait: 1 s, succeed: {name: quick}]"),
                           registry=TEST_REGISTRY)
    ctx = Context(period=0.1)
    tree = build_tree(mission.root, ctx)
    injector = FaultInjector([TickOverrunFault(at=0.0, kind="tick_overrun", node="wait", delay=0.05)])
    injector.install(ctx, [], tree, simulated=False)
    injector.before_tick(0.0)
    started = time.perf_counter()
    tree.root.tick_once()
    assert time.perf_counter() - started >= 0.05
    injector.before_tick(0.1)  # one tick only (no 'for')
    started = time.perf_counter()
    tree.root.tick_once()
    assert time.perf_counter() - started < 0.04
    assert [r["end"] for r in injector.records] == [0.1]


def test_state_sensor_dropout_withholds_every_message_while_active_and_the_sensor_keeps_its_schedule():
    truth = (np.eye(4), np.zeros(3), np.array([0.0, 0.0, 0.2]))
    sensor = StateSensor(lambda: truth, rate=2.0, latency=0.1, covariance=np.zeros((12, 12)),
                         rng=np.random.default_rng(0))
    faulty = FaultyStateSensor(sensor, clock=lambda: 0.0)
    ticks = np.round(np.arange(0.0, 3.0, 0.02), 6)
    got = {}
    for t in ticks:
        if t == 1.0:
            faulty.drop(4)
        if t == 2.0:
            faulty.remove(4)
        got.update({m.stamp: t for m in faulty.poll(float(t))})
    # measured every 0.5 s, delivered 0.1 s later; those arriving in [1, 2) s are lost
    assert sorted(got) == [0.0, 0.5, 2.0, 2.5]
    assert got[2.0] == pytest.approx(2.1)
    assert faulty.lost == 2  # the messages of 1.0 and 1.5 s
    assert faulty.period == 0.5  # everything else is the sensor's
