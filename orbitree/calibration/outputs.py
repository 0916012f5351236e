"""What a calibration Monte Carlo writes: ``summary.json``, ``parameters.csv``, the figures of
[CirclePoint]'s section 6 (CpK, uncertainty and mean − nominal per parameter), the histograms, the
fitted circles and axes of one iteration in 3D, and an ``index.md``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from orbitree.calibration.montecarlo import Samples
from orbitree.report.figures import FigureEntry, Report, save_figure, write_index
from orbitree.skills.circle_point import (
    Measurement,
    fit_axis,
    identified_names,
    nominal_axes,
    nominal_parameters,
    parameter_names,
    simulate,
    unit_of,
)
from orbitree.skills.kinematics import link_frames

STAT_KEYS = ("nominal", "mean", "std", "ci95_low", "ci95_high", "min", "max", "bias", "cpk")


def statistics(samples: Samples, measurement: Measurement, tolerance: float, coverage: float) -> dict[str, dict]:
    """Per parameter (mm, deg): nominal, mean, standard uncertainty (std), the probabilistically
    symmetric coverage interval (``ci95_*`` for the default 95 %), min, max, bias (mean − nominal)
    and CpK = min(USL − mean, mean − LSL) / 3 std with USL, LSL = nominal ± ``tolerance``; CpK is
    None for the parameters that stay nominal (no spread)."""
    table = measurement.table
    nominal = nominal_parameters(table)
    identified = set(identified_names(table))
    dev = samples.deviations
    count = len(dev)
    mean = dev.mean(axis=0) if count else np.full(dev.shape[1], np.nan)
    std = dev.std(axis=0, ddof=1) if count > 1 else np.zeros(dev.shape[1])
    tails = [(1.0 - coverage) / 2.0, (1.0 + coverage) / 2.0]
    low, high = np.quantile(dev, tails, axis=0) if count else (mean, mean)
    out = {}
    for k, name in enumerate(parameter_names(table.n_joints)):
        centre = nominal[name]
        cpk = (tolerance - abs(mean[k])) / (3.0 * std[k]) if name in identified and std[k] > 0 else None
        out[name] = {
            "unit": unit_of(name), "identified": name in identified, "nominal": centre,
            "mean": centre + mean[k], "std": std[k], "ci95_low": centre + low[k], "ci95_high": centre + high[k],
            "min": centre + dev[:, k].min() if count else math.nan,
            "max": centre + dev[:, k].max() if count else math.nan,
            "bias": mean[k], "cpk": cpk,
        }
    return {name: {key: _plain(value) for key, value in row.items()} for name, row in out.items()}


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, np.floating | float) else value


def write_outputs(
    out: Path, name: str, samples: Samples, measurement: Measurement, stats: dict[str, dict],
    facts: dict[str, Any],
) -> Report:
    """``summary.json``, ``parameters.csv``, the figures and ``index.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {"calibration": name, "method": "circle-point", "iterations": samples.iterations,
               "wall_time_s": round(samples.wall_time_s, 3), **facts, "parameters": stats}
    if samples.interrupted:
        summary["interrupted"] = True
        summary["iterations_planned"] = samples.planned
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    with (out / "parameters.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["parameter", "unit", "identified", *STAT_KEYS])
        for param, row in stats.items():
            writer.writerow([param, row["unit"], row["identified"], *("" if row[k] is None else row[k]
                                                                       for k in STAT_KEYS)])
    identified = [p for p, row in stats.items() if row["identified"]]
    figures = [cpk_figure(stats, identified, facts["tolerance"], out),
               uncertainty_figure(stats, identified, out), bias_figure(stats, identified, samples.iterations, out),
               histogram_figure(samples, stats, identified, out),
               axes_figure(measurement, facts["seed"], out)]
    rows = [[p, r["unit"], f"{r['nominal']:g}", f"{r['mean']:.5f}", f"{r['std']:.2e}",
             f"[{r['ci95_low']:.4f}, {r['ci95_high']:.4f}]", f"{r['bias']:+.2e}",
             "—" if r["cpk"] is None else f"{r['cpk']:.2f}"] for p, r in stats.items() if r["identified"]]
    shown = [(key.replace("_", " "), str(value)) for key, value in facts.items()]
    report = Report(f"Circle-point calibration: {name}", out / "summary.json", figures,
                    [("iterations", str(samples.iterations)), ("wall time", f"{samples.wall_time_s:.2f} s on "
                                                                            f"{samples.where}"), *shown],
                    tables=[("Identified parameters (the others stay nominal)",
                             ["parameter", "unit", "nominal", "mean", "std", "coverage interval", "bias", "CpK"],
                             rows)])
    report.index = write_index(report, out)
    return report


def _split(stats: dict[str, dict], names: list[str]) -> list[tuple[str, list[str]]]:
    return [(label, [p for p in names if stats[p]["unit"] == unit]) for label, unit in
            (("lengths (mm)", "mm"), ("angles (deg)", "deg"))]


def cpk_figure(stats: dict[str, dict], names: list[str], tolerance: float, out: Path) -> FigureEntry:
    entry = FigureEntry("cpk", f"CpK per parameter (tolerance ±{tolerance:g} mm or deg)")
    values = np.array([stats[p]["cpk"] or np.nan for p in names], dtype=float)
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax = fig.subplots()
    colours = np.where(values >= 1.33, "tab:green", np.where(values >= 1.0, "tab:orange", "tab:red"))
    ax.bar(range(len(names)), np.clip(values, 1e-3, None), color=colours)
    for level, style in ((1.0, ":"), (1.33, "--")):
        ax.axhline(level, color="k", linestyle=style, linewidth=1.0, label=f"CpK = {level:g}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_ylabel("CpK")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle("process capability of each identified parameter (green: ≥ 1.33, orange: ≥ 1, red: < 1)")
    entry.file = save_figure(fig, out / "cpk.png")
    return entry


def uncertainty_figure(stats: dict[str, dict], names: list[str], out: Path) -> FigureEntry:
    entry = FigureEntry("uncertainty", "Standard uncertainty (std) per parameter")
    fig = Figure(figsize=(10, 4), layout="constrained")
    for ax, (label, group) in zip(fig.subplots(1, 2, width_ratios=[1, 1.4]), _split(stats, names), strict=True):
        ax.bar(range(len(group)), [stats[p]["std"] for p in group], color="tab:blue")
        ax.set_xticks(range(len(group)), group, rotation=90)
        ax.set_yscale("log")
        ax.set_ylabel(f"std, {label}")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("standard uncertainty of each identified parameter")
    entry.file = save_figure(fig, out / "uncertainty.png")
    return entry


def bias_figure(stats: dict[str, dict], names: list[str], count: int, out: Path) -> FigureEntry:
    entry = FigureEntry("bias", "Mean − nominal per parameter; whiskers: ±2 std/√N, the mean's own uncertainty")
    fig = Figure(figsize=(10, 4), layout="constrained")
    for ax, (label, group) in zip(fig.subplots(1, 2, width_ratios=[1, 1.4]), _split(stats, names), strict=True):
        bias = [stats[p]["bias"] for p in group]
        spread = [2.0 * stats[p]["std"] / math.sqrt(max(count, 1)) for p in group]
        ax.bar(range(len(group)), bias, yerr=spread, color="tab:purple", capsize=3)
        ax.axhline(0.0, color="k", linewidth=0.8)
        ax.set_xticks(range(len(group)), group, rotation=90)
        ax.set_ylabel(f"mean − nominal, {label}")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"bias of each identified parameter ({count} iterations)")
    entry.file = save_figure(fig, out / "bias.png")
    return entry


def histogram_figure(samples: Samples, stats: dict[str, dict], names: list[str], out: Path) -> FigureEntry:
    entry = FigureEntry("histograms", "Distribution of each identified parameter (deviation from nominal)")
    if samples.iterations < 2:
        entry.note = "skipped: fewer than 2 iterations"
        return entry
    columns = {p: i for i, p in enumerate(stats)}
    cols = 5
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(12, 2.1 * rows))  # stairs, not bars, and a fixed layout: 20 panels draw fast
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.06, top=0.93, wspace=0.25, hspace=0.6)
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, name in zip(axes, names, strict=False):
        counts, edges = np.histogram(samples.deviations[:, columns[name]], bins=60)
        ax.stairs(counts, edges, fill=True, color="tab:blue", alpha=0.85)
        ax.set_title(f"{name} − {stats[name]['nominal']:g} ({stats[name]['unit']})", fontsize="small")
        ax.tick_params(labelsize="x-small")
        ax.set_yticks([])
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"identified − nominal, {samples.iterations} iterations")
    entry.file = save_figure(fig, out / "histograms.png")
    return entry


def axes_figure(measurement: Measurement, seed: int, out: Path) -> FigureEntry:
    """The measured points, fitted circles and joint axes of one iteration, in the tracker frame."""
    entry = FigureEntry("axes", f"One iteration (seed {seed}): measured points, fitted circles and joint axes")
    m = measurement
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1 << 31,)))
    points = [p[0] * 1e3 for p in simulate(m, rng, 1)]
    z_nom, _ = nominal_axes(m.table, m.q_final, m.robot2tracker)
    fig = Figure(figsize=(8, 7), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    skeleton = (m.robot2tracker @ link_frames(m.table, m.q_final))[:, :3, 3] * 1e3
    ax.plot(*skeleton.T, color="0.6", linewidth=3, alpha=0.6, label="nominal arm (frame origins)")
    colours = [f"C{j}" for j in range(len(points))]
    for j, (pts, z) in enumerate(zip(points, z_nom, strict=True)):
        axis = fit_axis(pts, towards=z)
        centre, normal, radius = axis.centre, axis.direction, float(axis.radius)
        helper = np.array([1.0, 0, 0]) if abs(normal[0]) < 0.9 else np.array([0, 1.0, 0])
        u = np.cross(normal, helper)
        u /= np.linalg.norm(u)
        v = np.cross(normal, u)
        turn = np.linspace(0, 2 * np.pi, 121)
        circle = centre + radius * (np.cos(turn)[:, None] * u + np.sin(turn)[:, None] * v)
        ax.scatter(*pts.T, s=8, color=colours[j])
        ax.plot(*circle.T, color=colours[j], linewidth=0.8, alpha=0.7)
        reach = max(60.0, 1.2 * radius)
        line = np.array([centre - reach * normal, centre + reach * normal])
        ax.plot(*line.T, color=colours[j], linewidth=2.0, label=f"axis {j + 1}")
        ax.text(*(centre + reach * normal), str(j + 1), color=colours[j])
    everything = np.vstack([*points, skeleton])
    middle, half = everything.mean(axis=0), (everything.max(axis=0) - everything.min(axis=0)).max() / 2 + 20
    for setter, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), middle, strict=True):
        setter(c - half, c + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("y (mm)")
    ax.set_zlabel("z (mm)")
    ax.legend(fontsize="x-small", loc="upper left")
    fig.suptitle("circle point: reflector points, fitted circles and joint axes (tracker frame)")
    entry.file = save_figure(fig, out / "axes.png")
    return entry
