"""Per-tick cost of the executive over a bare py_trees tree, on a ~40-node mission.

Both sides tick the very same tree (built by orbitree from the same YAML) the same number of
times, advancing mission time identically. "bare" calls ``root.tick_once()`` in a loop; the
"executive" side is ``Executive.run()`` with the recorder writing a JSON-lines log, per-node
timing, status-change scanning and snapshots (no view attached). Runs alternate, and the median
per-tick time over the runs is reported for each side, with the ratio.

During a run the executive gives the tree's nodes a logger whose ``debug`` does nothing (unless
py_trees' logging level is DEBUG: orbitree/runtime/quiet.py), while the bare loop keeps py_trees'
loggers, which test py_trees' level at each of the ~10 debug calls of a tick: part of the ratio
comes from that. The third figure is the bare loop with the nodes' debug muted the same way, and
the ratio against it is the executive's cost without that saving.

    python benchmarks/tick_overhead.py [--ticks 3000] [--runs 7]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path

import py_trees

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.build import build_tree
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive
from orbitree.runtime.quiet import quiet_debug

# statuses changing every few ticks, children stopped by their parents (the inverter's, the
# retry's, the reactive fallback's), feedback counting down, a blackboard key written per cycle
# (tests/runtime/test_tick_records.py checks the tick log on this tree, with a non-ASCII name)
CYCLE = """
          - sequence:
              name: cycle {i}{suffix}
              children:
                - set: {{key: /bench/phase{i}, value: {i}}}
                - fallback:
                    reactive: true
                    children:
                      - condition: {{key: /bench/force, below: 30 N}}
                      - log: force high
                - parallel:
                    policy: all
                    children:
                      - wait: 30 ms
                      - condition: {{key: /bench/phase{i}, equals: {i}}}
                - retry:
                    attempts: 2
                    child:
                      timeout: {{duration: 1 s, child: {{wait: 20 ms}}}}
                - inverter: {{child: {{fail: {{}}}}}}
"""


def mission_text(ticks: int, rate: float, cycles: int = 3, name_suffix: str = "") -> str:
    """The benchmark's mission: ``cycles`` cycles in a sequence repeated forever, for ``ticks``
    ticks at ``rate`` Hz; ``name_suffix`` ends each cycle's name."""
    cycles = "".join(CYCLE.format(i=i, suffix=name_suffix) for i in range(cycles))
    return f"""mission: bench
rate_hz: {rate}
max_duration: {ticks / rate} s
blackboard: {{/bench/force: 12.0}}
tree:
  repeat:
    count: -1
    child:
      sequence:
        name: body
        children:{cycles}"""


def bare(mission, ticks: int, clock=time.perf_counter, muted: bool = False) -> float:
    """Seconds per tick of ``tick_once`` in a loop; ``muted``: the nodes' debug muted as the
    executive mutes it during a run."""
    py_trees.blackboard.Blackboard.clear()
    ctx = Context(period=1.0 / mission.model.rate_hz)
    tree = build_tree(mission.root, ctx)
    if muted:
        quiet_debug(tree.behaviours)
    for key, value in mission.model.blackboard.items():
        py_trees.blackboard.Blackboard.set(key, value)
    start = clock()
    for k in range(ticks):
        ctx.now = k * ctx.period
        tree.root.tick_once()
    return (clock() - start) / ticks


GC_SPENT = [0.0, 0]  # the garbage collector's seconds and passes during the executive's runs
_GC_STARTED = [0.0]


def _gc_watch(phase: str, info: dict) -> None:
    if phase == "start":
        _GC_STARTED[0] = time.perf_counter()
    else:
        GC_SPENT[0] += time.perf_counter() - _GC_STARTED[0]
        GC_SPENT[1] += 1


def executive(mission, ticks: int, log: Path) -> float:
    ex = Executive(mission, log_path=str(log))
    gc.callbacks.append(_gc_watch)
    try:
        start = time.perf_counter()
        result = ex.run()
        elapsed = time.perf_counter() - start
    finally:
        gc.callbacks.remove(_gc_watch)
    assert result.summary["ticks"] == ticks, result.summary
    return elapsed / ticks


def bench_mission(folder: Path, ticks: int):
    """The benchmark's mission of ``ticks`` ticks at 125 Hz, written to ``folder`` and loaded."""
    path = folder / "bench.yaml"
    path.write_text(mission_text(ticks, 125.0))
    return load_mission(path)


# ORBITREE_BENCH_SMOKE=1: one short repetition, to check the command works (README's commands
# are all run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=100 if SMOKE else 3000)
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mission = bench_mission(Path(tmp), args.ticks)
        n_nodes = len(mission.nodes())
        bare_s, exec_s, muted_s = [], [], []
        for _ in range(args.runs):
            bare_s.append(bare(mission, args.ticks))
            exec_s.append(executive(mission, args.ticks, Path(tmp) / "run.jsonl"))
            muted_s.append(bare(mission, args.ticks, muted=True))
        log_kb = (Path(tmp) / "run.jsonl").stat().st_size / 1024
    b, e = statistics.median(bare_s) * 1e6, statistics.median(exec_s) * 1e6
    m = statistics.median(muted_s) * 1e6
    print(f"tree: {n_nodes} nodes, {args.ticks} ticks per run, {args.runs} runs (median)")
    print(f"bare py_trees tick:         {b:8.1f} us/tick")
    print(f"executive (recorder on):    {e:8.1f} us/tick   (log {log_kb:.0f} KiB per run)")
    print(f"bare, nodes' debug muted:   {m:8.1f} us/tick   (as the executive mutes it)")
    print(f"ratio executive / bare:     {e / b:8.2f}")
    print(f"executive overhead:         {e - b:8.1f} us/tick")
    print(f"ratio executive / muted:    {e / m:8.2f}")
    gc_ms, passes = GC_SPENT[0] / args.runs * 1e3, GC_SPENT[1] / args.runs
    print(f"garbage collector in a run: {gc_ms:8.2f} ms   ({passes:.1f} passes, mean per executive run)")


if __name__ == "__main__":
    main()
