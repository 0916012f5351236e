"""Offload: work beside the tick, modelled on the simulated clock, threaded on the wall clock."""

from __future__ import annotations

import threading
import time

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


def test_held_job_waits_for_release_then_runs_beside_the_caller():
    calls = []
    work = Offload(lambda x: calls.append(time.perf_counter()) or 2 * x, threaded=True, name="held")
    work.hold = True
    try:
        work.submit(0.0, 0.5, 21)  # handed over inside a tick...
        time.sleep(0.1)
        assert calls == [] and work.pending  # ...the worker leaves it until the tick is done
        released = time.perf_counter()
        work.release()
        deadline = time.monotonic() + 5.0
        results = []
        while not results and time.monotonic() < deadline:
            results = work.ready(0.0)
            time.sleep(0.002)
        assert [(d.stamp, d.result) for d in results] == [(0.5, 42)]
        assert len(calls) == 1 and calls[0] >= released
        work.release()  # nothing handed over: a no-op
        assert not work.pending
    finally:
        work.close()
