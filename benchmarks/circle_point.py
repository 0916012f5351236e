"""Circle-point Monte Carlo: the command's time, and the sensitivity studies of [CirclePoint]'s section 6.

    python benchmarks/circle_point.py [--iterations 10000] [--runs 3]
        times `orbitree calibrate circle-point missions/calibration/kr5_circle_point.yaml` end to end
        (a fresh process: imports, the Monte Carlo, the figures); prints each run and the median
    python benchmarks/circle_point.py --sensitivity [--iterations 20000]
        the standard uncertainty of every identified parameter as one input of Table 2 varies:
        the tracker's noise, the angle swept, the reflector's distance from the axis, the points per
        circle, the tracker's distance from the robot (in-process, the same seed for every variant)

The machine is shared: take the median of several runs. The thesis's MATLAB took 30 min 40 s for
10,000 iterations and 4 h 42 min for 100,000 (Core i7, 2.8 GHz).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from orbitree.calibration.config import load_circle_point
from orbitree.calibration.montecarlo import monte_carlo
from orbitree.calibration.outputs import statistics as parameter_statistics
from orbitree.skills.circle_point import Measurement, identified_names

CONFIG = Path(__file__).resolve().parents[1] / "missions" / "calibration" / "kr5_circle_point.yaml"

# ORBITREE_BENCH_SMOKE=1: one short repetition, to check the command works (README's commands
# are all run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"


def time_command(iterations: int, runs: int) -> None:
    print(f"orbitree calibrate circle-point {CONFIG.name} --iterations {iterations}, {os.cpu_count()} CPUs")
    print(f"{'run':>4} {'end to end s':>13} {'Monte Carlo s':>14} {'iterations/s':>13}")
    totals, loops = [], []
    for run in range(runs):
        with tempfile.TemporaryDirectory() as out:
            command = [sys.executable, "-m", "orbitree.cli", "calibrate", "circle-point", str(CONFIG),
                       "--iterations", str(iterations), "--no-progress", "-o", out]
            started = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            total = time.perf_counter() - started
            loop = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))["wall_time_s"]
        totals.append(total)
        loops.append(loop)
        print(f"{run + 1:>4} {total:>13.2f} {loop:>14.2f} {iterations / loop:>13,.0f}")
    print(f"median: {statistics.median(totals):.2f} s end to end, {statistics.median(loops):.2f} s of Monte Carlo")


def _scaled(values: np.ndarray, factor: float, cap: float | None = None) -> np.ndarray:
    out = np.asarray(values, dtype=float) * factor
    return np.minimum(out, cap) if cap is not None else out


def studies(base: Measurement) -> dict[str, list[tuple[str, Measurement]]]:
    """Each study: (label, measurement) variants of Table 2 (the first of each is Table 2's, or near it)."""
    replace = dataclasses.replace
    shift = np.eye(4)
    out: dict[str, list[tuple[str, Measurement]]] = {}
    out["tracker noise a (b = 0.3 um/m)"] = [
        (f"{a:g} um", replace(base, noise_a=a * 1e-6)) for a in (5, 10, 25, 50)]
    out["angle swept (x Table 2, at most 360 deg)"] = [
        (f"x{f:g}", replace(base, swept=_scaled(base.swept, f, 2 * np.pi))) for f in (0.5, 1, 1.5, 2)]
    out["reflector distance from the axis (x Table 2)"] = [
        (f"x{f:g}", replace(base, reflector=base.reflector * f)) for f in (0.5, 1, 2, 4)]
    out["points per circle (x Table 2)"] = [
        (f"x{f:g}", replace(base, points=tuple(max(3, round(n * f)) for n in base.points)))
        for f in (0.5, 1, 2, 4)]
    variants = []
    for metres in (0.0, 2.0, 5.0, 10.0):
        pose = shift.copy()
        pose[0, 3] = metres
        variants.append((f"{metres:g} m", replace(base, robot2tracker=pose)))
    out["tracker distance from the robot base (along x)"] = variants
    return out


def sensitivity(iterations: int, seed: int = 0) -> None:
    model, base = load_circle_point(CONFIG)
    names = identified_names(base.table)
    for title, variants in studies(base).items():
        table = {}
        for label, measurement in variants:
            samples = monte_carlo(measurement, iterations, seed, progress=False)
            table[label] = parameter_statistics(samples, measurement, model.tolerance, model.coverage)
        labels = list(table)
        print(f"\n{title}: standard uncertainty (mm or deg), {iterations} iterations; last rows: CpK")
        print(f"{'':<8}" + "".join(f"{label:>11}" for label in labels))
        for name in names:
            print(f"{name:<8}" + "".join(f"{table[label][name]['std']:>11.2e}" for label in labels))
        print(f"{'CpK<1':<8}" + "".join(f"{sum(table[lb][n]['cpk'] < 1 for n in names):>11}" for lb in labels))
        print(f"{'CpK>1.33':<8}" + "".join(f"{sum(table[lb][n]['cpk'] >= 1.33 for n in names):>11}"
                                         for lb in labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, help="iterations per run (default 10000; sensitivity 20000)")
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 3)
    parser.add_argument("--sensitivity", action="store_true", help="the section 6 studies instead of the timing")
    args = parser.parse_args()
    if args.sensitivity:
        sensitivity(args.iterations or (500 if SMOKE else 20_000))
    else:
        time_command(args.iterations or (500 if SMOKE else 10_000), args.runs)


if __name__ == "__main__":
    main()
