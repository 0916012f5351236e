"""The frontier of a grapple campaign: the docked fraction against spin rate per state rate and
control period, and the peak pad force of each run (the run's own grapple figure is in
:mod:`orbitree.report.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from orbitree.report.figures import FigureEntry, save_figure

# --------------------------------------------------------------------------- a campaign: the frontier

SPIN_KEY = "targets.mockup.spin.rate"
STATE_KEY = "targets.mockup.state_sensor.rate"
RATE_KEY = "rate_hz"


def _override(row: dict[str, str], key: str) -> str | None:
    for part in (row.get("overrides") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == key:
            return value.strip()
    return None


def _number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text.split()[0])
    except ValueError:
        return None


def frontier_cells(rows: list[dict[str, str]]) -> dict[tuple[float, float, float], dict[str, Any]]:
    """Per (spin rpm, state Hz, control period ms): runs, docked, the peak pad force (N) of each run."""
    cells: dict[tuple[float, float, float], dict[str, Any]] = {}
    for row in rows:
        spin, state, rate = (_number(_override(row, k)) for k in (SPIN_KEY, STATE_KEY, RATE_KEY))
        if spin is None or state is None or rate is None:
            continue
        cell = cells.setdefault((spin, state, round(1000.0 / rate, 1)), {"runs": 0, "docked": 0, "peaks": []})
        cell["runs"] += 1
        cell["docked"] += str(row.get("grapple.docked")).lower() == "true"
        peaks = [_number(row.get(f"grapple.peak_force_n.{arm}")) for arm in ("left", "right")]
        peaks = [p for p in peaks if p is not None]
        if peaks:
            cell["peaks"].append(max(peaks))
    return cells


def frontier_figure(rows: list[dict[str, str]], out: Path) -> FigureEntry:
    """Docked fraction against spin rate, one line per (state rate, control period); and the peak
    pad force of each run."""
    entry = FigureEntry("frontier", "Docked runs against spin rate per state rate and control period "
                                    "(the frontier); peak pad force per run")
    cells = frontier_cells(rows)
    if not cells:
        entry.note = f"skipped: no runs override {SPIN_KEY}, {STATE_KEY} and {RATE_KEY}"
        return entry
    fig = Figure(figsize=(10, 7.5), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for state, period in sorted({(k[1], k[2]) for k in cells}):
        spins = sorted(k[0] for k in cells if k[1:] == (state, period))
        label = f"state {state:g} Hz, control {period:g} ms"
        fraction = [cells[(s, state, period)]["docked"] / cells[(s, state, period)]["runs"] for s in spins]
        line = axes[0].plot(spins, fraction, marker="o", label=label)[0]
        for s in spins:
            peaks = cells[(s, state, period)]["peaks"]
            axes[1].scatter([s] * len(peaks), peaks, color=line.get_color(), s=14)
    axes[0].set_ylabel("docked (fraction of runs)")
    axes[0].set_ylim(-0.05, 1.05)
    axes[1].set_ylabel("peak pad force per run (N)")
    axes[1].set_xlabel("spin rate (rpm)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="lower left", fontsize="small")
    fig.suptitle("grapple frontier: spin rate x state rate x control period")
    entry.file = save_figure(fig, out / "frontier.png")
    return entry


def frontier_table(rows: list[dict[str, str]]) -> list[list[Any]]:
    """Rows of (spin rpm, state Hz, control ms, docked/runs, max peak pad force N)."""
    cells = frontier_cells(rows)
    return [[f"{k[0]:g}", f"{k[1]:g}", f"{k[2]:g}", f"{c['docked']}/{c['runs']}",
             f"{max(c['peaks']):.1f}" if c["peaks"] else ""]
            for k, c in sorted(cells.items())]
