"""The tick loop: endings (success, failure, max_duration, Ctrl-C, exceptions), halting, drivers."""

from __future__ import annotations

import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from tests.conftest import TEST_REGISTRY, FakeDriver, write_mission


def run(tmp_path, tree, extra="", **kwargs):
    mission = load_mission(write_mission(tmp_path, tree, extra), registry=TEST_REGISTRY)
    log = tmp_path / "run.jsonl"
    result = Executive(mission, log_path=str(log), **kwargs).run()
    return result, read_log(log)


def terminations(log) -> list[str]:
    return [
        f"{e['node']}:{e['status']}"
        for t in log.ticks
        for e in t.get("events", [])
        if e["kind"] == "terminate"
    ]


def test_exception_in_a_leaf_halts_tree_stops_drivers_and_writes_footer(tmp_path):
    driver = FakeDriver()
    tree = """
        parallel:
          name: both
          children:
            - script: {name: motion, statuses: [R]}
            - explode: {name: faulty, after: 3}
    """
    result, log = run(tmp_path, tree, drivers=[driver])
    assert result.status == "ABORTED"
    assert "node 'faulty' (explode, " in result.reason
    assert "raised RuntimeError: sensor frame out of range" in result.reason
    assert "Traceback" in result.error
    # the running sibling was preempted: its terminate ran with INVALID
    assert terminations(log) == ["motion:INVALID"]
    assert driver.calls == ["setup", "stop", "shutdown"]
    assert log.footer is not None and log.footer["summary"]["status"] == "ABORTED"
    assert log.footer["error"].startswith("Traceback")


def test_ctrl_c_halts_running_leaves_and_stops_every_driver(tmp_path):
    drivers = [FakeDriver("arm"), FakeDriver("gripper")]
    tree = """
        parallel:
          name: both
          children:
            - script: {name: motion, statuses: [R]}
            - explode: {name: operator, after: 5, error: KeyboardInterrupt}
    """
    result, log = run(tmp_path, tree, drivers=drivers)
    assert (result.status, result.reason) == ("ABORTED", "interrupted (Ctrl-C)")
    assert terminations(log) == ["motion:INVALID"]
    assert [d.calls for d in drivers] == [["setup", "stop", "shutdown"]] * 2
    assert log.ticks[-1]["status"] == {"0": "INVALID", "1": "INVALID", "2": "INVALID"}


def test_driver_readings_reach_the_blackboard_every_tick_with_a_stamp(tmp_path):
    driver = FakeDriver()
    tree = """
        sequence:
          - wait: 0.5 s
          - condition: {key: /robot/arm/speed, above: 0.05, max_age: 0}
    """
    result, log = run(
        tmp_path, tree, extra="blackboard: {/robot/arm/speed: 0.0}\n", drivers=[driver]
    )
    assert result.status == "SUCCESS"
    assert driver.reads == 6  # ticks at t = 0.0 ... 0.5 (10 Hz)
    recorded = [t["bb"]["/robot/arm/speed"] for t in log.ticks if "bb" in t]
    assert recorded == pytest.approx([0.01 * k for k in range(1, 7)])


def test_max_duration_halts_a_mission_that_never_ends(tmp_path):
    result, log = run(
        tmp_path, "script: {name: forever, statuses: [R]}", extra="max_duration: 2 s\n"
    )
    assert result.status == "FAILURE"
    assert result.reason == "max_duration 2 s reached"
    assert result.summary["ticks"] == 20
    assert terminations(log) == ["forever:INVALID"]


def test_summary_has_every_field_of_the_cli_contract(tmp_path):
    result, _ = run(
        tmp_path,
        "sequence: [script: {name: a, statuses: [R, S]}, wait: {name: b, duration: 0.3 s}]",
    )
    s = result.summary
    for field in (
        "mission",
        "status",
        "sim_time_s",
        "wall_time_s",
        "ticks",
        "tick_ms",
        "deadline_misses",
        "final_error",
        "in_capture_envelope",
        "max_contact_force_n",
        "max_tcp_speed_mps",
        "phase_s",
        "faults",
        "safety_violations",
    ):
        assert field in s
    assert s["status"] == "SUCCESS" and s["ticks"] == 5
    assert s["sim_time_s"] == pytest.approx(0.4)
    assert set(s["tick_ms"]) == {"p50", "p99", "max"}
    # a runs one tick; the 0.3 s wait starts at t = 0.1 and is RUNNING at 0.1, 0.2 and 0.3
    assert s["phase_s"] == {"a": pytest.approx(0.1), "b": pytest.approx(0.3)}


def test_safety_hook_violation_stops_drivers_and_aborts(tmp_path):
    driver = FakeDriver()

    def speed_limit(ctx):
        speed = ctx.age("/robot/arm/speed")  # written every tick
        if ctx.now >= 0.3 and speed == 0.0:
            return [{"check": "tcp_speed", "message": "TCP speed 0.04 m/s above 0.03 m/s"}]
        return []

    result, log = run(
        tmp_path, "script: {name: move, statuses: [R]}", drivers=[driver], safety=[speed_limit]
    )
    assert result.status == "ABORTED"
    assert result.reason == "safety: TCP speed 0.04 m/s above 0.03 m/s"
    # stopped in the violation's tick (overriding its commands), and again when halting
    assert driver.calls == ["setup", "stop", "stop", "shutdown"]
    assert result.summary["safety_violations"][0]["check"] == "tcp_speed"
    assert terminations(log) == ["move:INVALID"]


def test_same_seed_gives_the_same_log(tmp_path):
    tree = "sequence: [wait: 0.3 s, set: {key: /x, value: 1}, log: done]"
    _, first = run(tmp_path, tree, seed=7)
    _, second = run(tmp_path, tree, seed=7)
    strip = lambda log: [{k: v for k, v in t.items() if k != "tick_ms"} for t in log.ticks]  # noqa: E731
    assert strip(first) == strip(second)
    assert first.header["seed"] == 7


def test_per_node_tick_time_is_reported_for_every_ticked_node(tmp_path):
    _, log = run(tmp_path, "sequence: [wait: {name: w, duration: 0.2 s}, succeed: {name: ok}]")
    timing = log.footer["node_tick_us"]
    assert set(timing) == {"0", "1", "2"}
    assert timing["1"]["ticks"] == 3 and timing["2"]["ticks"] == 1
    assert all(t["max"] >= t["mean"] > 0 for t in timing.values())


class Cycle:
    """An object in a reference cycle: only the cyclic garbage collector frees it."""

    def __init__(self):
        self.me = self


def garbage_hook(cycles, collected, look):
    """A safety hook that calls ``look()`` and makes ``cycles`` cycles each tick; each one freed
    appends 1 to ``collected`` (the youngest generation's threshold is 700 objects)."""
    import weakref

    def hook(ctx):
        look()
        for _ in range(cycles):
            weakref.finalize(Cycle(), collected.append, 1)
        return []

    return hook


def test_paced_run_collects_garbage_between_ticks_and_restores_the_collector(tmp_path):
    """With --realtime the cyclic garbage collector never runs inside a tick: it is off during
    the ticks and run in the loop's slack on its own schedule (cycles made every tick are still
    freed during the run), and it is back on, with nothing left frozen, when the run ends."""
    import gc

    enabled_in_tick, collected = [], []
    make_garbage = garbage_hook(200, collected, lambda: enabled_in_tick.append(gc.isenabled()))

    assert gc.isenabled()
    result, _ = run(tmp_path, "wait: 0.3 s", extra="rate_hz: 100\n", realtime=True, safety=[make_garbage])
    assert result.status == "SUCCESS" and len(enabled_in_tick) >= 30
    assert not any(enabled_in_tick)
    assert len(collected) >= 200 * (len(enabled_in_tick) - 5)  # all but the last few ticks' cycles
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_run_freezes_the_heap_it_starts_with_and_leaves_the_collector_as_it_found_it(tmp_path):
    """During a run the heap that existed before it is out of the collector's passes (gc.freeze),
    whatever way the run ends; a heap someone else froze stays frozen, and is not unfrozen by the
    run. Garbage made during the run is still collected."""
    import gc

    frozen, collected = [], []
    watch = garbage_hook(100, collected, lambda: frozen.append(gc.get_freeze_count()))

    before = gc.get_freeze_count()
    assert before == 0
    result, _ = run(tmp_path, "wait: 0.2 s", extra="rate_hz: 100\n", safety=[watch])
    assert result.status == "SUCCESS"
    assert min(frozen) > 1000  # the modules, the tree: thousands of objects out of the passes
    assert len(collected) >= 100 * (len(frozen) - 5)  # the cycles made in the ticks were collected
    assert gc.isenabled() and gc.get_freeze_count() == 0
    # the run ends with an exception in a leaf: unfrozen as well
    result, _ = run(tmp_path, "explode: {after: 2}")
    assert result.status == "ABORTED" and gc.get_freeze_count() == 0
    # frozen by someone else before the run: left frozen, the same objects
    gc.freeze()
    try:
        theirs = gc.get_freeze_count()
        frozen.clear()
        run(tmp_path, "wait: 0.1 s", extra="rate_hz: 100\n", safety=[watch])
        # (a frozen object freed leaves the count: nothing added, nothing unfrozen)
        assert frozen and theirs - 100 < min(frozen) <= max(frozen) <= theirs
        assert theirs - 100 < gc.get_freeze_count() <= theirs
    finally:
        gc.unfreeze()
