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
