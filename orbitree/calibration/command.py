"""``orbitree calibrate circle-point CONFIG -o DIR``: load, run the Monte Carlo, write, print."""

from __future__ import annotations

import sys
from pathlib import Path

from orbitree.calibration.config import load_circle_point
from orbitree.calibration.montecarlo import monte_carlo
from orbitree.calibration.outputs import statistics, write_outputs

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 2, 130


def circle_point(
    config: str | Path, out: str | Path, *, iterations: int | None = None, seed: int | None = None,
    workers: int | None = None, scheduler: str | None = None, progress: bool = True,
) -> int:
    """Run the file's Monte Carlo and write ``out``; the exit code (``MissionError`` for a bad file)."""
    model, measurement = load_circle_point(config)
    count = iterations or model.iterations
    seed = model.seed if seed is None else seed
    unreachable: tuple[type[Exception], ...] = ()
    if scheduler:
        from orbitree.campaign.dask_pool import SchedulerUnreachable

        unreachable = (SchedulerUnreachable,)
    try:
        samples = monte_carlo(measurement, count, seed, workers=workers, scheduler=scheduler, progress=progress,
                              label=model.calibration)
    except unreachable as exc:
        print(f"orbitree calibrate: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if samples.iterations == 0:
        print("orbitree calibrate: interrupted before any iteration finished; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    stats = statistics(samples, measurement, model.tolerance, model.coverage)
    noise = model.tracker_noise
    facts = {"seed": seed, "workers": samples.workers, "tolerance": model.tolerance, "coverage": model.coverage,
             "tracker_noise": f"{noise.a * 1e6:g} um + {noise.b * 1e6:g} um/m",
             "joint_errors": bool(measurement.errors is not None and measurement.errors.active),
             "config": str(config)}
    write_outputs(Path(out), model.calibration, samples, measurement, stats, facts)
    _print_table(stats)
    done = f"{samples.iterations} of {samples.planned}" if samples.interrupted else str(samples.iterations)
    print(f"{model.calibration}: {done} iterations in {samples.wall_time_s:.2f} s on {samples.where}; "
          f"results in {Path(out) / 'summary.json'}")
    return EXIT_INTERRUPTED if samples.interrupted else EXIT_OK


def _print_table(stats: dict[str, dict]) -> None:
    print(f"{'parameter':<9} {'unit':<4} {'nominal':>9} {'mean':>12} {'std':>10} {'bias':>10} {'CpK':>8}")
    for name, row in stats.items():
        if not row["identified"]:
            continue
        cpk = "-" if row["cpk"] is None else f"{row['cpk']:.2f}"
        print(f"{name:<9} {row['unit']:<4} {row['nominal']:>9g} {row['mean']:>12.5f} {row['std']:>10.2e} "
              f"{row['bias']:>+10.1e} {cpk:>8}")
