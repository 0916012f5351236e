"""Deadline misses and tick times of the flagship mission paced by the wall clock (``--realtime``).

Runs missions/sirom_dock.yaml as ``make run`` does, without a view, several times, and prints per
run the outcome, the deadline misses, the tree's tick p50 / p99 / max and the garbage collector's
passes (how many, their longest, per generation), then the medians. Paced by the wall clock the
executive runs the collector between ticks, so its passes show what the tick no longer pays (the
full pass of generation 2 is the one the executive makes once before the loop starts).

    python benchmarks/realtime.py [--runs 3] [--rate-hz 125]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from pathlib import Path

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive

MISSION = Path(__file__).resolve().parents[1] / "missions" / "sirom_dock.yaml"
# ORBITREE_BENCH_SMOKE=1: one run of 1 s, to check the command works (README's commands are all
# run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"


class CollectorWatch:
    """Durations (s) of the garbage collector's passes, by generation, while installed."""

    def __init__(self) -> None:
        self.passes: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.passes[info["generation"]].append(time.perf_counter() - self._started)

    def __enter__(self) -> CollectorWatch:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def run_once(rate_hz: float) -> tuple[dict, CollectorWatch]:
    overrides = [f"rate_hz={rate_hz} Hz", *(["max_duration=1 s"] if SMOKE else [])]
    mission = load_mission(MISSION, overrides)
    with CollectorWatch() as watch:
        result = Executive(mission, realtime=True).run()
    return result.summary, watch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 3)
    parser.add_argument("--rate-hz", type=float, default=125.0)
    args = parser.parse_args()
    print(f"flagship --realtime at {args.rate_hz:g} Hz, {args.runs} runs")
    print(" run   status    ticks  misses  tick p50 / p99 / max ms   gc passes (longest ms) gen 0 | 1 | 2")
    p99s, misses = [], []
    for k in range(1, args.runs + 1):
        summary, watch = run_once(args.rate_hz)
        t = summary["tick_ms"]
        gcs = " | ".join(f"{len(v)} ({1e3 * max(v, default=0.0):.1f})" for v in watch.passes.values())
        print(f"{k:4d}  {summary['status']:8s} {summary['ticks']:6d}  {summary['deadline_misses']:6d}  "
              f"{t['p50']:6.2f} / {t['p99']:5.2f} / {t['max']:5.2f}        {gcs}")
        p99s.append(t["p99"])
        misses.append(summary["deadline_misses"] / max(summary["ticks"], 1))
    print(f"median: tick p99 {statistics.median(p99s):.2f} ms, misses {100 * statistics.median(misses):.2f} %")


if __name__ == "__main__":
    main()
