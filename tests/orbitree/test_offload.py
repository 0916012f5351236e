"""Offload: work beside the tick, modelled on the simulated clock, threaded on the wall clock."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from orbitree.nodes.offload import Offload


def test_modelled_results_appear_latency_after_hand_over_in_order():
    calls = []
    work = Offload(lambda x: calls.append(x) or 10 * x, threaded=False, latency=0.02)
    work.submit(0.000, stamp=-0.05, job=1)
    assert calls == [1]  # computed at once (deterministic), but not visible yet
    assert work.ready(0.008) == [] and work.ready(0.016) == [] and work.pending
    done = work.ready(0.024)
    assert [(d.stamp, d.result) for d in done] == [(-0.05, 10)] and not work.pending
    # a job handed over while the modelled worker is busy starts when it is free
    work.submit(0.100, stamp=0.05, job=2)
    work.submit(0.110, stamp=0.06, job=3)
    assert work.ready(0.119) == []
    assert [d.result for d in work.ready(0.120)] == [20]
    assert work.ready(0.139) == [] and [d.result for d in work.ready(0.140)] == [30]


def test_modelled_exception_is_raised_when_collected():
    work = Offload(lambda x: 1 / x, threaded=False, latency=0.01)
    work.submit(0.0, 0.0, 0)
    with pytest.raises(ZeroDivisionError):
        work.ready(0.01)


def test_threaded_worker_takes_the_newest_job_and_never_blocks_the_caller():
    gate = threading.Event()

    def slow(x):
        gate.wait(5.0)
        return x

    work = Offload(slow, threaded=True, name="test")
    try:
        started = time.perf_counter()
        work.submit(0.0, 0.0, "first")  # taken by the worker, which waits on the gate
        time.sleep(0.05)
        work.submit(0.0, 0.1, "second")  # waiting...
        work.submit(0.0, 0.2, "third")  # ...replaced by a newer one
        assert time.perf_counter() - started < 0.2  # submit never waits for the work
        assert work.ready(0.0) == [] and work.pending and work.dropped == 1
        gate.set()
        deadline = time.monotonic() + 5.0
        results = []
        while len(results) < 2 and time.monotonic() < deadline:
            results += work.ready(0.0)
            time.sleep(0.005)
        assert [(d.stamp, d.result) for d in results] == [(0.0, "first"), (0.2, "third")]
        assert not work.pending
    finally:
        work.close()
    assert work._thread is None


def _wait_for(work: Offload, count: int) -> list:
    deadline, results = time.monotonic() + 60.0, []
    while len(results) < count and time.monotonic() < deadline:
        results += work.ready(0.0)
        time.sleep(0.005)
    return results


def _children() -> set[int]:
    out = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    out.add(int(entry))
        except OSError:
            continue
    return out


def test_process_worker_returns_results_with_arrays_through_shared_memory_and_ends_on_close():
    before = _children()
    work = Offload(np.sum, threaded=True, process=True, shared_bytes=8 * 1000, name="test")
    try:
        work.start()
        assert len(_children() - before) == 1
        small, large = np.arange(1000.0), np.arange(5000.0)  # the second does not fit: through the pipe
        work.submit(0.0, 0.5, small)
        assert [(d.stamp, d.result) for d in _wait_for(work, 1)] == [(0.5, 499500.0)]
        work.submit(0.0, 0.6, large)
        assert [(d.stamp, d.result) for d in _wait_for(work, 1)] == [(0.6, 12497500.0)]
        assert not work.pending and work.jobs == 2 and work.busy_s > 0.0
    finally:
        work.close()
    assert _children() - before == set()


def test_process_worker_takes_the_newest_job_and_raises_the_functions_exception_when_collected():
    work = Offload(time.sleep, threaded=True, process=True, name="test")
    try:
        started = time.perf_counter()
        work.submit(0.0, 0.0, 0.5)  # in the process
        work.submit(0.0, 0.1, 0.01)  # waiting...
        work.submit(0.0, 0.2, 0.02)  # ...replaced by a newer one
        assert time.perf_counter() - started < 0.5  # submit never waits for the work
        assert work.pending and work.dropped == 1
        assert [d.stamp for d in _wait_for(work, 2)] == [0.0, 0.2]
        work.submit(0.0, 0.3, -1.0)  # time.sleep(-1) raises ValueError, in the worker
        deadline = time.monotonic() + 60.0
        with pytest.raises(ValueError, match="non-negative"):
            while time.monotonic() < deadline:
                work.ready(0.0)
                time.sleep(0.005)
    finally:
        work.close()


def test_tracker_in_a_process_estimates_what_it_estimates_in_line():
    from orbitree.behaviours.perceive import TrackerSearch
    from orbitree.drivers.sim_camera import board_scene_camera, default_intrinsics
    from orbitree.skills.board_model import sirom_board_model

    intr = default_intrinsics(640, 480, 450.0)
    camera = board_scene_camera(sirom_board_model(), seed=3, intrinsics=intr)
    images = []
    for k in range(4):  # an approach: 0.35 m down to 0.26 m, sliding
        pose = np.eye(4)
        pose[:3, :3] = np.diag([1.0, -1.0, -1.0])
        pose[:3, 3] = [0.004 * k, -0.003 * k, 0.35 - 0.03 * k]
        camera.set_cam2world(pose)
        images.append(camera.read().image)
    in_line = TrackerSearch("sirom", intr.camera_matrix, intr.dist_coeffs)
    expected = [in_line((image, None, 0.0, None)) for image in images]
    work = Offload(TrackerSearch("sirom", intr.camera_matrix, intr.dist_coeffs), threaded=True, process=True,
                   shared_bytes=640 * 480, name="test")
    try:
        got = []
        for k, image in enumerate(images):
            work.submit(0.0, float(k), (image, None, 0.0, None))
            got += _wait_for(work, 1)
    finally:
        work.close()
    assert [d.stamp for d in got] == [0.0, 1.0, 2.0, 3.0]
    for want, done in zip(expected, got, strict=True):
        assert want is not None and done.result.marker_ids == want.marker_ids
        np.testing.assert_allclose(done.result.board2cam, want.board2cam, atol=1e-9)
    assert abs(expected[0].board2cam[2, 3] - 0.35) < 0.01  # a real estimate of the real distance
