"""Where the executive's overhead over bare py_trees goes, on tick_overhead.py's tree.

The same runs as ``tick_overhead.py``, in CPU time (``time.process_time``: steadier than the wall
clock on a shared machine), with parts of the executive taken away one after the other:

* ``executive``: as ``tick_overhead.py`` runs it (log file, per-node timing, tick records);
* ``no log file``: the same without a log file (no formatting, header, footer, file writes);
* ``no tick record``: besides, ``TickLog.write`` replaced by a stub (no change look-up);
* ``no timer``: besides, the per-node timer replaced by py_trees' ``tick_once``;
* ``bare, muted``: py_trees' ``tick_once`` in a plain loop, the nodes' debug muted as the
  executive mutes it during a run (orbitree/runtime/quiet.py);
* ``bare``: py_trees' ``tick_once`` in a plain loop, py_trees' own loggers (a negative part: what
  muting the debug calls saves).

Each step's difference is what the part taken away cost per tick (the stubs themselves cost a
call each, ~0.1 µs). Variants alternate within each round; medians over the rounds.

    python benchmarks/tick_accounting.py [--ticks 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tick_overhead import bare, bench_mission

from orbitree.runtime.executive import Executive
from orbitree.runtime.ticklog import TickLog
from orbitree.runtime.timing import TimingVisitor

SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"


def _no_record(self, n, t, tick_ms, deadline_misses, final=False):  # TickLog.write's stand-in
    self.touched.clear()
    return {}


def _no_timer(self, root, ticked=None, start=None, seen=None):  # TimingVisitor.tick's stand-in
    root.tick_once()
    return time.perf_counter()


def executive(mission, ticks: int, log: Path | None, record: bool = True, timer: bool = True) -> float:
    """CPU seconds per tick of ``Executive.run()``, with the parts asked for stubbed."""
    write, tick = TickLog.write, TimingVisitor.tick
    if not record:
        TickLog.write = _no_record
    if not timer:
        TimingVisitor.tick = _no_timer
    try:
        ex = Executive(mission, log_path=None if log is None else str(log))
        start = time.process_time()
        ex.run()
        return (time.process_time() - start) / ticks
    finally:
        TickLog.write, TimingVisitor.tick = write, tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=100 if SMOKE else 3000)
    parser.add_argument("--rounds", type=int, default=1 if SMOKE else 7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mission = bench_mission(Path(tmp), args.ticks)
        log = Path(tmp) / "run.jsonl"
        variants = {
            "executive": lambda: executive(mission, args.ticks, log),
            "no log file": lambda: executive(mission, args.ticks, None),
            "no tick record": lambda: executive(mission, args.ticks, None, record=False),
            "no timer": lambda: executive(mission, args.ticks, None, record=False, timer=False),
            "bare, muted": lambda: bare(mission, args.ticks, clock=time.process_time, muted=True),
            "bare": lambda: bare(mission, args.ticks, clock=time.process_time),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, run in variants.items():
                times[name].append(run())
    us = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    names = list(us)
    print(f"{args.ticks} ticks per run, {args.rounds} rounds (median CPU time per tick)")
    for name, after in zip(names, [*names[1:], None], strict=True):
        part = f"   {us[name] - us[after]:5.2f} us: {_PARTS[name]}" if after else ""
        print(f"{name:16s} {us[name]:6.2f} us/tick{part}")
    print(f"ratio executive / bare: {us['executive'] / us['bare']:.2f}")


_PARTS = {
    "executive": "the log file (formatting the records, header, footer, writes)",
    "no log file": "the tick records (which nodes changed, blackboard values, events)",
    "no tick record": "the per-node timer (a clock reading per node, self times)",
    "no timer": "the loop, the run's setup and summary, garbage collection",
    "bare, muted": "py_trees' debug calls muted (negative: a saving)",
}


if __name__ == "__main__":
    main()
