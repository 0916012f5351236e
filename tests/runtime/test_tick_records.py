"""The tick log's records are exactly what ``dumps`` writes of them, whatever changed in a tick,
though the tick log formats them itself and looks only at the nodes ticked or stopped."""

from __future__ import annotations

import importlib.util
import json
import random
import re
from pathlib import Path

import py_trees

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import Recorder, decimal_text, dumps
from orbitree.runtime.ticklog import TickLog
from orbitree.runtime.timing import TimingVisitor


def _benchmark():
    """benchmarks/tick_overhead.py, whose tree these tests log (loaded from its file)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "tick_overhead.py"
    spec = importlib.util.spec_from_file_location("tick_overhead_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mission_file(tmp_path):
    """The benchmark's tree, two cycles with a non-ASCII name (the log escapes it), 250 ticks."""
    path = tmp_path / "m.yaml"
    path.write_text(_benchmark().mission_text(250, 125.0, cycles=2, name_suffix=" µ"), encoding="utf-8")
    return path


def run_lines(tmp_path, name="run.jsonl"):
    log = tmp_path / name
    Executive(load_mission(mission_file(tmp_path)), log_path=str(log)).run()
    return log.read_text(encoding="utf-8").splitlines()


def test_every_tick_record_is_what_dumps_writes_and_names_real_changes(tmp_path):
    lines = run_lines(tmp_path)
    header, ticks = json.loads(lines[0]), lines[1:-1]
    assert len(ticks) == 251  # 250 ticks, then the record of the halt at max_duration
    statuses = ["INVALID"] * len(header["nodes"])
    changes = 0
    for line in ticks:
        record = json.loads(line)
        assert dumps(record) == line  # same fields, order, number text and escapes
        for i, status in record.get("status", {}).items():
            assert statuses[int(i)] != status  # a record names real changes only
            statuses[int(i)] = status
            changes += 1
    assert changes > 300
    assert sum("feedback" in json.loads(line) for line in ticks) > 100


def test_looking_at_the_touched_nodes_logs_what_comparing_every_node_logs(tmp_path, monkeypatch):
    touched = run_lines(tmp_path, "touched.jsonl")
    monkeypatch.setattr(TickLog, "_changes", TickLog._scan)  # every node, every tick
    every = run_lines(tmp_path, "every.jsonl")

    def comparable(lines):  # without the footer (timings) and the times of the ticks
        return [re.sub(r'"(tick_ms|start_time)":("[^"]*"|[0-9.e-]+)', "", line) for line in lines[:-1]]

    assert len(touched) == len(every) == 253
    assert comparable(touched) == comparable(every)


def test_decimal_text_is_dumps_of_the_rounded_float():
    draws = random.Random(15)
    values = [0.0, -0.0, 1e-4, 9.99999e-5, 5e-5, 1.5e-4, 1e9, 1e9 - 1e-6, 999999999.9999995, 0.5, 2.5,
              5e-7, 123.4565, 0.1 + 0.2, 1e300, float("inf"), float("nan")]
    values += [k * 0.008 for k in range(20000)] + [k * 0.002 for k in range(20000)]
    values += [draws.uniform(0, 1e9) for _ in range(20000)] + [10 ** draws.uniform(-7, 12) for _ in range(20000)]
    for digits in (4, 6):
        wrong = [v for v in values if decimal_text(v, digits) != dumps(round(v, digits))]
        assert wrong == []


def test_touched_nodes_log_what_every_node_logs_on_a_mission_with_arms(tmp_path, monkeypatch):
    # motion leaves with a terminate of their own (stopping the arm), messages changing in
    # most ticks, a recovery subtree in the header: the stops that change a node after its own
    # tick are all noted
    mission = Path(__file__).resolve().parents[2] / "missions" / "jpl_grapple.yaml"

    def lines(name):
        log = tmp_path / name
        Executive(load_mission(mission), log_path=str(log)).run()
        return log.read_text(encoding="utf-8").splitlines()

    touched = lines("touched.jsonl")
    monkeypatch.setattr(TickLog, "_changes", TickLog._scan)
    every = lines("every.jsonl")

    def comparable(lines):
        return [re.sub(r'"(tick_ms|start_time)":("[^"]*"|[0-9.e-]+)', "", line) for line in lines[:-1]]

    assert len(touched) == len(every) > 300
    records = [json.loads(line) for line in touched[1:-1]]
    assert sum(len(r.get("status", {})) for r in records) >= 20
    assert sum(len(r.get("feedback", {})) for r in records) > 300
    assert comparable(touched) == comparable(every)


def test_a_node_the_timer_does_not_know_is_timed_in_its_spare_slot_and_never_logged():
    known = py_trees.behaviours.Success(name="known")
    stranger = py_trees.behaviours.Success(name="stranger")
    root = py_trees.composites.Sequence(name="root", memory=False, children=[known, stranger])
    timer = TimingVisitor([root, known])  # the stranger is none of its nodes
    log = TickLog(Recorder(None), [root, known], Context(period=0.01), [])
    for _ in range(3):
        timer.tick(root, log.touched, None, log.seen)
        changed, _ = log._changes()
        assert set(changed) <= {0, 1}
        assert log.touched == []
    assert list(timer.count) == [3, 3]  # its own nodes only, each ticked three times
    assert timer._count[-1] == 3  # the stranger's ticks, in the spare slot
    assert set(timer.report_us()) == {0, 1}
    assert log._last_status == [py_trees.common.Status.SUCCESS] * 2


def test_dumps_writes_what_json_dumps_writes_in_every_thread_and_after_an_error():
    """``dumps`` keeps one C encoder per thread rather than one per call: the same text as
    ``json.dumps`` with the log's options, and a refused object (a cycle) leaves it usable."""
    import threading

    import numpy as np

    from orbitree.runtime.recorder import to_jsonable

    draws = random.Random(4)
    objects = [{"a": 1, "b": [1.5, float("nan"), float("inf"), -float("inf"), 1e300, -0.0], "c": 'µ"\\\n',
                "d": np.arange(3), "e": np.float32(0.1), "f": None, "g": True, 1: 2, 2.5: "x", "h": (1, 2),
                "i": {"nested": [{"deep": "ü"}]}, "j": np.zeros((10, 10)), "k": {1, 2}},
               "a string µ", 3, 1.25, [], {}, [draws.uniform(-1e6, 1e6) for _ in range(1000)]]
    expected = [json.dumps(o, default=to_jsonable, separators=(",", ":")) for o in objects]
    cycle: list = []
    cycle.append(cycle)
    wrong: list = []

    def check():
        for _ in range(200):
            if [dumps(o) for o in objects] != expected:
                wrong.append(threading.current_thread().name)
            try:
                dumps({"x": [cycle]})
                wrong.append("a cycle encoded")
            except ValueError:
                pass

    threads = [threading.Thread(target=check) for _ in range(3)]
    for thread in threads:
        thread.start()
    check()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert dumps({"k": [1, 2]}) == '{"k":[1,2]}'
