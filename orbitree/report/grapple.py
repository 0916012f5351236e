"""The grapple figure of one run: spin rate, stand-off per arm, the force each arm pushes the
target with and the internal force between them, against mission time, the phases shaded (the
``track``, ``grapple``, ``despin`` and ``dock_pull`` nodes' running intervals)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from orbitree.report.figures import FigureEntry, save_figure

PHASES = (("track", "tab:blue"), ("grapple", "tab:orange"), ("despin", "tab:red"), ("dock_pull", "tab:purple"))
RPM = 60.0 / (2.0 * np.pi)


def _keys(log: Any, prefix: str, suffix: str) -> list[str]:
    found: set[str] = set()
    for tick in log.ticks:
        for key in tick.get("bb") or {}:
            if key.startswith(prefix) and key.endswith(suffix):
                found.add(key)
    return sorted(found)


def grapple_figure(log: Any, out: Path) -> FigureEntry:
    from orbitree.report.run import _nodes, _shade, running_intervals, series

    entry = FigureEntry("grapple", "Spin rate, stand-off per arm, contact forces per arm and internal force; "
                                   "shaded: track, grapple, despin, dock")
    spins = _keys(log, "/target/", "/spin_rate")
    forces = [k for k in _keys(log, "/grapple/", "/force")]
    if not spins and not forces:
        entry.note = "skipped: no /grapple/* or /target/*/spin_rate in the log (no grapple ran)"
        return entry
    fig = Figure(figsize=(10, 9), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    for key in spins:
        s = series(log, key)
        if s is not None:
            axes[0].plot(s.t, s.values * RPM, label=key.split("/")[2])
    axes[0].set_ylabel("spin (rpm)")
    for key in _keys(log, "/grapple/", "/standoff"):
        s = series(log, key)
        if s is not None:
            axes[1].plot(s.t, s.values * 1e3, label=key.split("/")[2])
    axes[1].set_ylabel("stand-off (mm)")
    for key in forces:
        s = series(log, key, (3,))
        if s is not None:
            axes[2].plot(s.t, np.linalg.norm(s.values, axis=1), label=key.split("/")[2])
    axes[2].set_ylabel("force on the target (N)")
    internal = series(log, "/grapple/internal_force")
    if internal is not None:
        axes[3].plot(internal.t, internal.values, color="k", label="internal")
    axes[3].set_ylabel("internal force (N)")
    for kind, colour in PHASES:
        intervals = running_intervals(log, {int(n["id"]) for n in _nodes(log, kind) if n.get("kind") == kind})
        for ax in axes:
            _shade(ax, intervals, kind, colour)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes[-1].set_xlabel("mission time (s)")
    fig.suptitle(f"{log.header.get('mission', '')}: grapple, despin, dock")
    entry.file = save_figure(fig, out / "grapple.png")
    return entry


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
